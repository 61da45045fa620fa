"""Collective volumes in the trace as Score-P counts them (issue 33): tests/mpi/trace_src/coll_bytes.c
makes one call of each collective on 4 ranks (roots and non-roots, in place, v/w variants,
non-blocking, intercommunicator MPI_ROOT / MPI_PROC_NULL, a neighbourhood collective on a line);
the bytes each rank sends and receives are computed here by hand from the counts of the program
and compared with what an independent reader (otf2-print) finds in the OTF2 archive, and with
events.csv (bytes, recv_bytes)."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
THROTTLE = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"}
I, D = 4, 8   # bytes of an int and a double


def _per_rank(f):
    return [f(r) for r in range(4)]


# (OTF2 operation, [(sent, received) of ranks 0..3]) in the program's order; worked out from the
# program's arguments with the rules of Score-P's MPI adapter (docs/trace.md, "Collective volumes")
EXPECTED = [
    ("BARRIER", _per_rank(lambda r: (0, 0))),
    # Bcast 1 int from 0: the root sends a block to each of the 4 (itself included), receives its own
    ("BCAST", _per_rank(lambda r: (4 * I, I) if r == 0 else (0, I))),
    # Reduce 2 ints to 1: everyone sends its 2 ints, the root receives 4 x 2
    ("REDUCE", _per_rank(lambda r: (2 * I, 4 * 2 * I) if r == 1 else (2 * I, 0))),
    # ... in place at the root: it sends nothing and receives from the 3 others
    ("REDUCE", _per_rank(lambda r: (0, 3 * 2 * I) if r == 1 else (2 * I, 0))),
    ("ALLREDUCE", _per_rank(lambda r: (4 * D, 4 * D))),
    ("ALLREDUCE", _per_rank(lambda r: (3 * D, 3 * D))),                       # in place
    ("GATHER", _per_rank(lambda r: (I, 4 * I) if r == 0 else (I, 0))),
    ("GATHER", _per_rank(lambda r: (0, 3 * I) if r == 0 else (I, 0))),       # in place at the root
    # Gatherv to 0 with counts 1,2,3,4 (rank r sends r+1 ints)
    ("GATHERV", _per_rank(lambda r: (I, 10 * I) if r == 0 else ((r + 1) * I, 0))),
    # Scatter 2 ints from 2
    ("SCATTER", _per_rank(lambda r: (4 * 2 * I, 2 * I) if r == 2 else (0, 2 * I))),
    # Scatterv from 0 with counts 1,2,3,4
    ("SCATTERV", _per_rank(lambda r: (10 * I, I) if r == 0 else (0, (r + 1) * I))),
    ("ALLGATHER", _per_rank(lambda r: (4 * I, 4 * I))),
    ("ALLGATHER", _per_rank(lambda r: (3 * I, 3 * I))),                       # in place
    # Allgatherv with counts 1,2,3,4: r+1 ints to each of 4, all 10 received
    ("ALLGATHERV", _per_rank(lambda r: (4 * (r + 1) * I, 10 * I))),
    ("ALLGATHERV", _per_rank(lambda r: (3 * (r + 1) * I, (10 - (r + 1)) * I))),  # in place
    ("ALLTOALL", _per_rank(lambda r: (4 * I, 4 * I))),
    # Alltoallv/w: rank r sends j+1 ints to rank j (10 in all), receives r+1 from each of 4
    ("ALLTOALLV", _per_rank(lambda r: (10 * I, 4 * (r + 1) * I))),
    ("ALLTOALLW", _per_rank(lambda r: (10 * I, 4 * (r + 1) * I))),
    ("REDUCE_SCATTER_BLOCK", _per_rank(lambda r: (4 * I, 4 * I))),
    # Reduce_scatter with counts 1,2,3,4: the whole vector of 10 sent, 4 x (r+1) received
    ("REDUCE_SCATTER", _per_rank(lambda r: (10 * I, 4 * (r + 1) * I))),
    # Scan: rank r sends to itself and the ranks above (4 - r), receives from itself and below (r + 1)
    ("SCAN", _per_rank(lambda r: ((4 - r) * I, (r + 1) * I))),
    ("EXSCAN", _per_rank(lambda r: ((3 - r) * I, r * I))),
    ("ALLGATHER", _per_rank(lambda r: (4 * I, 4 * I))),                       # Iallgather
    ("BCAST", _per_rank(lambda r: (4 * 2 * I, 2 * I) if r == 3 else (0, 2 * I))),  # Ibcast 2 ints from 3
    # intercommunicator {0,1} x {2,3}: Bcast of 1 int, world 0 MPI_ROOT, world 1 MPI_PROC_NULL
    ("BCAST", [(2 * I, 0), (0, 0), (0, I), (0, I)]),
    # Allgather of 1 int: each rank sends its int to the 2 of the remote group, receives 2
    ("ALLGATHER", _per_rank(lambda r: (2 * I, 2 * I))),
    # Gather of 3 ints from group B to world 0 (MPI_ROOT); world 1 MPI_PROC_NULL
    ("GATHER", [(0, 2 * 3 * I), (0, 0), (3 * I, 0), (3 * I, 0)]),
]
# Neighbor_alltoall of 1 int on a line of 4 (no OTF2 collective record: OTF2 has no such operation)
NEIGHBOR = _per_rank(lambda r: (I, I) if r in (0, 3) else (2 * I, 2 * I))


@pytest.fixture(scope="module")
def traced(build, tmp_path_factory):
    """One traced run of the program on 4 ranks (4 ranks on 2 cores: the progress throttle)."""
    d = tmp_path_factory.mktemp("bytes")
    exe = d / "coll_bytes"
    subprocess.run([build.mpicc, "-O1", "-Wall", "-o", str(exe), str(ROOT / "tests/mpi/trace_src/coll_bytes.c")],
                   check=True)
    out = d / "tr"
    cli = Path(sys.executable).parent / "mpitempo"
    r = subprocess.run([str(cli), "trace", "run", "--json", "-n", "4", "-o", str(out), "--", str(exe)],
                       capture_output=True, text=True, env=dict(os.environ, **THROTTLE), timeout=600)
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


def test_otf2_collective_bytes_as_scorep_counts(traced):
    out, res = traced
    if res["otf2"] is None:
        pytest.skip("built without OTF2")
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print not installed (Debian package otf2-tools)")
    r = subprocess.run(["otf2-print", res["otf2"]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pat = re.compile(r"^(?:MPI_COLLECTIVE_END|NON_BLOCKING_COLLECTIVE_COMPLETE)\s+(\d+)\s+\d+\s+Operation: (\w+),"
                     r".*Sent: (\d+), Received: (\d+)")
    got = {k: [] for k in range(4)}
    for line in r.stdout.splitlines():
        m = pat.match(line)
        if m:
            got[int(m[1])].append((m[2], int(m[3]), int(m[4])))
    for rank in range(4):
        want = [(op, *per[rank]) for op, per in EXPECTED]
        assert got[rank] == want, (rank, [(i, g, w) for i, (g, w) in enumerate(zip(got[rank], want)) if g != w])
    # the MPI_Sendrecv's two messages: rank r sends r+1 ints, receives its left neighbour's
    sends = {int(m[1]): int(m[2]) for m in re.finditer(r"^MPI_SEND\s+(\d+)\s.*Length: (\d+)", r.stdout, re.M)}
    recvs = {int(m[1]): int(m[2]) for m in re.finditer(r"^MPI_RECV\s+(\d+)\s.*Length: (\d+)", r.stdout, re.M)}
    assert sends == {k: (k + 1) * I for k in range(4)}
    assert recvs == {k: ((k + 3) % 4 + 1) * I for k in range(4)}


def test_events_csv_bytes_and_neighbourhood(traced):
    out, _ = traced
    rows = list(csv.DictReader(open(out / "events.csv")))
    for rank in range(4):
        mine = [row for row in rows if int(row["rank"]) == rank]
        nb = [row for row in mine if row["call"] == "neighbor_alltoall"]
        assert [(int(x["bytes"]), int(x["recv_bytes"])) for x in nb] == [NEIGHBOR[rank]]
        # the blocking Allreduce rows carry the same counts as the OTF2 records
        ar = [(int(x["bytes"]), int(x["recv_bytes"])) for x in mine if x["call"] == "allreduce"]
        assert ar == [(4 * D, 4 * D), (3 * D, 3 * D)]
        # MPI_Sendrecv: sent and received sizes; other point-to-point rows have no received bytes
        sr = [(int(x["bytes"]), int(x["recv_bytes"])) for x in mine if x["call"] == "sendrecv"]
        assert sr == [((rank + 1) * I, ((rank + 3) % 4 + 1) * I)]
        assert all(int(x["recv_bytes"]) == 0 for x in mine if x["kind"] in ("send", "recv", "isend", "irecv"))
