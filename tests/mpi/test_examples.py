"""The example campaigns in examples/ are valid and run (shortened)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpitempo.io.campaign import build_campaign, load_toml

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_parses(path):
    c = build_campaign(load_toml(path))
    assert c.ops and c.msizes and c.configs


@pytest.mark.mpi
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(cli, build, tmp_path, path):
    # a window or Round-Time example on a loaded shared machine may end with too few valid
    # measurements (its windows missed): that is the tool working; try again, up to 3 times
    extra = []
    if "platform" in load_toml(path):   # a simulated example (SimGrid/SMPI): at 16 ranks, not its 1024
        import shutil

        if not shutil.which("smpicc"):
            pytest.skip("SimGrid's SMPI is not installed (apt-get install libsimgrid-dev simgrid)")
        extra = ["-n", "16"]
    for attempt in range(3):
        out = tmp_path / f"c{attempt}"
        code, so, se = cli("run", path, "-o", out, "--mpiruns", "1", "--nrep", "5", "--quiet", "--no-summary",
                           *extra)
        if code == 0 or "too few valid measurements" not in se:
            break
    if code != 0 and "OpenRTE" in build.mpiexec_version:   # Open MPI 4 (Debian's 4.1.4 as the system MPI)
        if "no MPI-4 persistent collectives" in se:
            pytest.skip(f"{path.name} needs MPI-4 persistent collectives, which Open MPI 4 lacks (said: {se.strip()})")
        if "a known Open MPI 4.x bug: MPI_Compare_and_swap" in se:
            pytest.skip(f"{path.name}: cas on an MPI_Win_allocate window crashes Open MPI 4 (ompi#11349), "
                        "and the failure says so")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    c = build_campaign(load_toml(path))
    assert {r["config"] for r in json.loads(so)} == {x.name for x in c.configs}
