"""`mpitempo build`: the C core for one MPI installation (an installed core, or compiled and cached)."""
from __future__ import annotations

import click

from mpitempo.build import ensure_build
from mpitempo.options import json_option, mpicc_option
from mpitempo.present.tables import print_json


@click.command(epilog="Examples:\n\n  mpitempo build\n\n  mpitempo build --mpicc /opt/openmpi/bin/mpicc --json")
@mpicc_option
@click.option("--force", is_flag=True, help="Rebuild even if a cached build exists.")
@json_option
def build(mpicc, force, as_json):
    """Build the C measurement core against an MPI (default: the mpicc on PATH),
    or show the installed core that runs will use.

    An installed core (Spack, a module: mpitempo-bench, mpitempo-clocks,
    mpitempo-pingpong and mpitempo-tree in $MPITEMPO_CORE or on PATH) is used as it is, unless
    --mpicc or $MPITEMPO_MPICC names an MPI to build for (MPITEMPO_CORE=build
    always builds). A built core is cached under $MPITEMPO_CACHE (by default
    ~/.cache/mpitempo) by a fingerprint of the MPI installation, the sources and
    the optional components found (OTF2, hwloc: a core built before one was
    installed is rebuilt); every run records which core it used. --json has
    the key components: {"otf2": library or null, "hwloc": version or null}.
    """
    b = ensure_build(mpicc, force=force, quiet=as_json)
    if as_json:
        print_json(b.to_json())
    else:
        click.echo(f"core for {b.flavour} ({b.mpiexec_version})")
        click.echo(f"  core:        {b.describe()}")
        if b.mpicc:
            click.echo(f"  mpicc:       {b.mpicc}")
        click.echo(f"  mpiexec:     {b.mpiexec}")
        click.echo(f"  fingerprint: {b.fingerprint}")
        click.echo(f"  binaries:    {b.bindir}")
        click.echo(f"  optional:    {b.describe_components()}")
