"""`mpitempo which [EXECUTABLE]`: where the C executables of the core that runs use are."""
from __future__ import annotations

import shlex

import click

from mpitempo.options import json_option, mpicc_option
from mpitempo.present.tables import print_json


@click.command(epilog="Examples:\n\n  mpitempo which                       # every one, a line each\n\n"
                      "  mpirun -n 2 $(mpitempo which mpitempo-bench) --ops allreduce\n\n"
                      "  eval \"$(mpitempo which --path)\"      # put them on PATH in this shell")
@click.argument("executable", required=False, metavar="[EXECUTABLE]")
@mpicc_option
@click.option("--path", "as_path", is_flag=True, help="Print an 'export PATH=...' line for a shell's eval.")
@json_option
def which(executable, mpicc, as_path, as_json):
    """Print where the C executables (mpitempo-bench, mpitempo-pingpong, mpitempo-clocks,
    mpitempo-tree, mpitempo-logp) of the core that `run` uses are, building the core first if needed, so that they can be run directly
    under mpirun or srun. EXECUTABLE: one of them (the full path of that one only)."""
    from mpitempo.build import BINARIES, ensure_build
    from mpitempo.errors import MtError

    if as_json and as_path:
        raise MtError("--json and --path are two forms of the output: give one of them")
    if executable is not None and executable not in BINARIES:
        raise MtError(f"unknown executable '{executable}': choose from {', '.join(BINARIES)}")
    b = ensure_build(mpicc, quiet=as_json)
    paths = {name: b.binary(name) for name in ([executable] if executable else BINARIES)}
    if as_json:
        print_json({"bindir": b.bindir, "mpiexec": b.mpiexec, "executables": paths})
    elif as_path:
        click.echo(f"export PATH={shlex.quote(str(b.bindir))}:\"$PATH\"")
    else:
        for p in paths.values():
            click.echo(p)
