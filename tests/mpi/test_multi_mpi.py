"""One campaign, two MPI libraries (MPICH and Open MPI), interleaved.

Runs where both are installed: `make test-openmpi` sets MPITEMPO_TEST_OPENMPI_MPICC."""
from __future__ import annotations

import json
import os
import shutil

import pytest

pytestmark = pytest.mark.mpi


def test_mpich_and_openmpi_in_one_campaign(cli, tmp_path):
    ompi = os.environ.get("MPITEMPO_TEST_OPENMPI_MPICC")
    mpich = os.environ.get("MPITEMPO_TEST_MPICH_MPICC") or shutil.which("mpicc")
    if not ompi or not mpich:
        pytest.skip("needs MPITEMPO_TEST_OPENMPI_MPICC (set by make test-openmpi) and an MPICH mpicc")
    spec = tmp_path / "two.toml"
    spec.write_text(f'''name = "two-libs"
mpiruns = 2
ops = ["allreduce", "bcast"]
msizes = "8,1K"
nrep = 20
seed = 9

[[config]]
name = "mpich"
mpicc = "{mpich}"

[[config]]
name = "openmpi"
mpicc = "{ompi}"
''')
    out = tmp_path / "c"
    code, so, se = cli("run", spec, "-o", out, "--quiet", "--no-summary")
    assert code == 0, se
    assert json.loads((out / "order.json").read_text()) == ["mpich-000", "openmpi-000", "mpich-001", "openmpi-001"]
    libs = {d.name: json.loads((d / "meta.json").read_text())["mpi"]["library"] for d in (out / "runs").iterdir()}
    assert all("MPICH" in v for k, v in libs.items() if k.startswith("mpich"))
    assert all("Open MPI" in v for k, v in libs.items() if k.startswith("openmpi"))
    code, so, se = cli("summary", out, "--json")
    rows = json.loads(so)
    assert {r["config"] for r in rows} == {"mpich", "openmpi"} and all(r["runs"] == 2 for r in rows)
    code, so, se = cli("info", "--diff", out, "--json")
    assert "mpi.library" in json.loads(so)["differing"]
