"""Tools stack behind the tracer (issue 33, item 4): a second PMPI tool preloaded after the tracer
(tests/mpi/trace_src/pmpi_counter.c, a call counter built here that calls the library's PMPI_
functions) sees every call the traced program makes (recorded, counted and one-sided calls,
MPI_Init and MPI_Finalize) and none of the tracer's own (its clock syncs), and the trace is still
right. The same counter without the tracer gives the expected counts (the control)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "mpi" / "trace_src"

# the calls stack_app.c makes on each of its 2 ranks
EXPECTED = {"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Comm_size": 1, "MPI_Allreduce": 5, "MPI_Bcast": 5,
            "MPI_Barrier": 4, "MPI_Send": 2, "MPI_Recv": 2, "MPI_Isend": 3, "MPI_Irecv": 3, "MPI_Waitall": 3,
            "MPI_Sendrecv": 2, "MPI_Comm_dup": 1, "MPI_Comm_free": 1, "MPI_Send_init": 1, "MPI_Recv_init": 1,
            "MPI_Start": 4, "MPI_Wait": 4, "MPI_Request_free": 2, "MPI_Win_create": 1, "MPI_Win_fence": 2,
            "MPI_Put": 1, "MPI_Win_free": 1, "MPI_Type_size": 1, "MPI_Finalize": 1}


@pytest.fixture(scope="module")
def programs(build, tmp_path_factory):
    d = tmp_path_factory.mktemp("stack")
    app, counter = d / "stack_app", d / "libcounter.so"
    subprocess.run([build.mpicc, "-O1", "-Wall", "-o", str(app), str(SRC / "stack_app.c")], check=True)
    subprocess.run([build.mpicc, "-O1", "-Wall", "-shared", "-fPIC", "-o", str(counter), str(SRC / "pmpi_counter.c")],
                   check=True)
    return d, app, counter


def _counts(d: Path) -> dict[int, dict[str, int]]:
    out = {}
    for r in range(2):
        f = d / f"rank-{r}.txt"
        assert f.exists(), f"the counter's MPI_Finalize did not run on rank {r} (no {f.name})"
        out[r] = {ln.split()[0]: int(ln.split()[1]) for ln in f.read_text().splitlines()}
    return out


def test_counter_alone_sees_the_programs_calls(build, programs):
    """the control: the counter and the expected counts agree without the tracer"""
    d, app, counter = programs
    cd = d / "alone"
    cd.mkdir()
    # Open MPI's mpiexec refuses root without these (mpitempo's own launches set them; this one is plain)
    env = dict(os.environ, LD_PRELOAD=str(counter), MT_COUNTER_DIR=str(cd), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run([build.mpiexec, "-n", "2", str(app)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _counts(cd) == {0: EXPECTED, 1: EXPECTED}


def test_second_pmpi_tool_behind_the_tracer_sees_every_call(build, programs):
    d, app, counter = programs
    cd, out = d / "behind", d / "tr"
    cd.mkdir()
    cli = Path(sys.executable).parent / "mpitempo"
    # what a rank wrapper in --launcher preloads stays behind the tracer (docs/trace.md, The command line)
    launcher = f"{build.mpiexec} -n {{np}} env LD_PRELOAD={counter} {{cmd}}"
    env = dict(os.environ, MT_COUNTER_DIR=str(cd))
    r = subprocess.run([str(cli), "trace", "run", "--json", "-n", "2", "--launcher", launcher, "-o", str(out), "--",
                        str(app)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # every call of the program, exactly: none lost behind the tracer, none of the tracer's own added
    assert _counts(cd) == {0: EXPECTED, 1: EXPECTED}
    # and the trace is still right: the recorded calls as the program made them, the counted ones counted
    rows = list(csv.DictReader(open(out / "events.csv")))
    for rank in range(2):
        calls = [x["call"] for x in rows if int(x["rank"]) == rank]
        for name in ("allreduce", "bcast", "barrier", "send", "recv", "isend", "irecv", "waitall", "sendrecv",
                     "comm_dup", "comm_free", "send_init", "recv_init", "start", "wait", "request_free"):
            assert calls.count(name) == EXPECTED["MPI_" + name.capitalize()], (rank, name)
    nr = json.loads((out / "not_recorded.json").read_text())
    text = json.dumps(nr)
    for name in ("MPI_Comm_rank", "MPI_Comm_size", "MPI_Type_size", "MPI_Win_fence", "MPI_Put"):
        assert name in text, name
    res = json.loads(r.stdout)
    assert res["violations_global"] == 0   # one host, one clock: any violation would be a wrong record
