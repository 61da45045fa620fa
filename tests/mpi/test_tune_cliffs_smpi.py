"""A cliff injected on a simulated platform (SimGrid SMPI) is found by tune's cliff detection.

SMPI runs MPI programs on a simulated cluster and implements many collective algorithms, each
selectable for a whole run (``--cfg=smpi/bcast:<algorithm>``). The sweep over message sizes switches
bcast from the binomial tree to the flat tree (the root sends to every rank in turn) at 512 KiB on 64
simulated ranks: the cliff the library's selection would make by such a switch. Simulated times are
deterministic, so each point is one run, repeated as three identical mpirun medians (no dispersion).
The program is a small bcast timer written here, independent of the core's own SMPI build. Results of
a simulated platform describe the model, not hardware."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mpitempo.analysis import cliffs

pytestmark = [pytest.mark.mpi, pytest.mark.one_library]

PROG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long m = atol(argv[1]);
    char *buf = calloc((size_t)(m > 0 ? m : 1), 1);
    double best = 1e30;
    for (int i = 0; i < 2; i++) {
        double t, loc, mx;
        if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
        t = MPI_Wtime();
        if (MPI_Bcast(buf, (int)m, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
        loc = MPI_Wtime() - t;
        if (MPI_Reduce(&loc, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
        if (mx < best) best = mx;
    }
    if (rank == 0) printf("%ld %.9e\n", m, best);
    free(buf);
    MPI_Finalize();
    return 0;
}
"""

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="h" suffix="" radical="0-63" speed="1Gf" bw="10GBps" lat="1us"
           bb_bw="100GBps" bb_lat="1us"/>
</platform>
"""


@pytest.fixture(scope="module")
def smpi(tmp_path_factory):
    if not (shutil.which("smpicc") and shutil.which("smpirun")):
        pytest.skip("needs SimGrid's smpicc and smpirun (apt-get install libsimgrid-dev)")
    d = tmp_path_factory.mktemp("smpi")
    (d / "b.c").write_text(PROG)
    (d / "p.xml").write_text(PLATFORM)
    r = subprocess.run(["smpicc", "-O2", "-o", str(d / "b"), str(d / "b.c")], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        pytest.skip(f"smpicc cannot build a program here: {r.stderr.strip()[-300:]}")
    return d


def _time(d, alg: str, m: int, np_: int = 64) -> float:
    r = subprocess.run(["smpirun", "-np", str(np_), "-platform", str(d / "p.xml"), f"--cfg=smpi/bcast:{alg}",
                        "--cfg=smpi/display-timing:no", str(d / "b"), str(m)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    size, t = r.stdout.strip().splitlines()[-1].split()
    assert int(size) == m
    return float(t)


SIZES = [65536, 131072, 262144, 524288, 1048576]


def test_injected_cliff_on_a_simulated_platform_is_found(smpi):
    binomial = {m: _time(smpi, "binomial_tree", m) for m in SIZES}
    flat = {m: _time(smpi, "flattree", m) for m in SIZES}
    # each algorithm alone is smooth: no cliff
    assert cliffs.find([(m, [t] * 3) for m, t in binomial.items()]) == []
    assert cliffs.find([(m, [t] * 3) for m, t in flat.items()]) == []
    # the injected switch at 512 KiB is found, there and only there
    switched = [(m, [binomial[m] if m < 524288 else flat[m]] * 3) for m in SIZES]
    found = cliffs.find(switched)
    assert [(c.x_before, c.x) for c in found] == [(262144, 524288)]
    assert found[0].factor == pytest.approx(flat[524288] / binomial[262144])
    assert found[0].factor > 3
