"""Faults while a campaign runs: signals, hung and killed ranks, full disks, concurrent use.

Every test checks the same guarantees (docs/reliability.md): one line of error, no completed run
lost, nothing half-written that looks whole, no process of the campaign left running, and a
`run --resume` that completes what is missing.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

QUICK = ["--ops", "delay", "--delay", "50ms", "--nrep", "10", "--warmup", "0", "--no-summary"]


def _mpitempo(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "mpitempo.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for(pred, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _shm_of(marker: str) -> set[str]:
    """/dev/shm files mapped by the processes whose command line holds marker."""
    from mpitempo.runner.watchdog import mapped_shm

    pids = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return {f"/dev/shm/{n}" for n in mapped_shm(int(p) for p in pids)}


def _left_running(marker: str) -> str:
    """Processes whose command line holds marker (a run directory), other than pgrep itself."""
    return subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_signal_stops_the_campaign_like_ctrl_c(build, tmp_path, sig):
    out = tmp_path / "camp"
    p = _mpitempo("run", *QUICK, "--mpiruns", "3", "-o", out)
    assert _wait_for(lambda: (out / "runs" / "default-000" / "meta.json").exists())
    assert _wait_for(lambda: (out / "runs" / "default-001" / "launch.json").exists())
    time.sleep(0.3)
    shm = _shm_of(str(out / "runs" / "default-001"))
    p.send_signal(getattr(signal, sig))
    so, se = p.communicate(timeout=60)
    assert p.returncode == 130, se
    last = se.strip().splitlines()[-1]
    assert last.startswith(f"mpitempo: error: interrupted by {sig}") and f"mpitempo run --resume {out}" in last
    rec = json.loads((out / "runs" / "default-001" / "failed.json").read_text())
    assert rec["status"] == "interrupted" and f"interrupted by {sig}" in rec["stderr_tail"]
    assert (out / "runs" / "default-000" / "meta.json").exists()         # the completed run is kept
    assert not (out / "runs" / "default-001" / "measurements.csv").exists()
    assert _left_running(str(out / "runs")) == ""                        # no mpiexec, no rank left
    assert not [f for f in shm if os.path.exists(f)], "the killed ranks' shared memory was left in /dev/shm"
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", "--resume", str(out), "--quiet", "--no-summary"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert all((out / "runs" / f"default-{i:03d}" / "meta.json").exists() for i in range(3))


def test_second_resume_is_refused_while_the_first_runs(build, tmp_path):
    out = tmp_path / "camp"
    p = _mpitempo("run", *QUICK, "--mpiruns", "2", "-o", out, "--quiet")
    try:
        assert _wait_for(lambda: (out / "runs" / "default-000" / "launch.json").exists())
        r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", "--resume", str(out), "--quiet"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"campaign directory '{out}' is in use by pid {p.pid}" in r.stderr
    finally:
        so, se = p.communicate(timeout=300)
    assert p.returncode == 0, se
    assert len(list((out / "runs").glob("*/meta.json"))) == 2


def test_build_force_is_refused_while_a_campaign_uses_the_core(build, tmp_path):
    if build.origin != "built":
        pytest.skip("the core is an installed one (MPITEMPO_CORE): mpitempo does not rebuild it")
    out = tmp_path / "camp"
    p = _mpitempo("run", *QUICK, "--mpiruns", "2", "-o", out, "--quiet")
    try:
        assert _wait_for(lambda: (out / "runs" / "default-000" / "launch.json").exists())
        r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "build", "--force"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 2 and "is in use by a running campaign" in r.stderr, r.stderr
    finally:
        so, se = p.communicate(timeout=300)
    assert p.returncode == 0, se


def _wrapper(tmp_path, body: str) -> str:
    w = tmp_path / "wrap.sh"
    w.write_text("#!/bin/sh\nR=${PMI_RANK:-$OMPI_COMM_WORLD_RANK}\n" + body + "\nexec \"$@\"\n")
    w.chmod(0o755)
    return "{mpiexec} -n {np} " + str(w) + " {cmd}"


def test_hung_rank_is_killed_at_the_timeout(cli, build, tmp_path):
    out = tmp_path / "camp"
    hang = f"sleep 300.{os.getpid()}{int(time.time() * 1000) % 100000}"   # unique: only this test's rank matches
    launcher = _wrapper(tmp_path, f'if [ "$R" = 1 ]; then exec {hang}; fi')
    code, so, se = cli("run", *QUICK, "--mpiruns", "1", "--timeout", "4", "--launcher", launcher, "-o", out, "--quiet")
    assert code == 2 and "1 of 1 mpiruns failed" in se and "--resume" in se
    rec = json.loads((out / "runs" / "default-000" / "failed.json").read_text())
    assert rec["status"] == "timeout" and "killed after the timeout of 4 s" in rec["stderr_tail"]
    assert _left_running(hang) == ""
    assert _left_running(str(out / "runs")) == ""


@pytest.mark.parametrize("phase", ["sync", "measurement"])
def test_rank_killed_during_a_phase(cli, build, tmp_path, phase):
    """Rank 1 is killed (SIGKILL) while the clock is synchronised (a long HCA3 sync) or while it
    measures: the run fails with a record, the other runs are kept, and no rank is left."""
    out = tmp_path / "camp"
    flag = tmp_path / "kill-once"
    flag.write_text("x")
    launcher = _wrapper(tmp_path, f'if [ "$R" = 1 ] && [ -e {flag} ]; then rm -f {flag}; '
                                  '(sleep 1; kill -9 $$) & fi')
    extra = (["--sync", "hca3:fitpts=6000,pp=50", "--scheme", "roundtime", "--time-slice", "200ms", "--ops", "bcast",
              "--allow-few-valid",
              "--msizes", "8"] if phase == "sync" else
             ["--ops", "delay", "--delay", "200ms", "--nrep", "20", "--warmup", "0"])
    code, so, se = cli("run", *extra, "--mpiruns", "2", "--launcher", launcher, "-o", out, "--quiet", "--no-summary",
                       "--timeout", "600")   # the run that is not killed: its sync's 300000 ping-pongs are
    # time-sliced on a loaded machine (23 s at load 3, over 120 s at load 6)
    assert code == 2 and "1 of 2 mpiruns failed" in se, se
    failed = list((out / "runs").glob("*/failed.json"))
    rec = json.loads(failed[0].read_text())
    assert len(failed) == 1 and rec["status"] in ("failed", "killed")
    # one line naming the signal, from the launcher's banner (Open MPI on stderr, MPICH on stdout)
    assert "Killed" in rec["reason"] and f"failed: {rec['reason']}" in se, (rec["reason"], se)
    assert not (failed[0].parent / "meta.json").exists() and not list(failed[0].parent.glob(".*.tmp"))
    assert len(list((out / "runs").glob("*/meta.json"))) == 1
    assert _left_running(str(out / "runs")) == ""


# -- full disks ---------------------------------------------------------------------------------

def _fill(d: Path, leave: int = 0) -> None:
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    if leave:
        size = (d / "filler").stat().st_size
        os.truncate(d / "filler", max(0, size - leave))


def test_disk_full_at_start_leaves_nothing(cli, build, small_fs):
    _fill(small_fs)
    out = small_fs / "camp"
    code, so, se = cli("run", *QUICK, "--mpiruns", "1", "-o", out, "--quiet")
    assert code == 2 and se.count("\n") == 1 and f"the disk of '{out}' is full (" in se, se
    assert not out.exists()


def test_disk_full_during_measurement_keeps_earlier_runs(cli, build, small_fs):
    """The data of the second mpirun does not fit: it fails on the write, its temporary file is
    removed, the first run is kept and whole, the failure is recorded with the core's own error
    line (not the launcher's banner), and --resume completes the campaign once there is room."""
    out = small_fs / "camp"
    args = ["--ops", "allreduce", "--msizes", "8", "--nrep", "2000", "--mpiruns", "2", "--warmup", "0",
            "-o", out, "--quiet", "--no-summary"]
    code, so, se = cli("run", *args[:-4], "--mpiruns", "1", "-o", small_fs / "probe", "--quiet", "--no-summary")
    assert code == 0, se
    need = sum(f.stat().st_size for f in (small_fs / "probe").rglob("*") if f.is_file())
    shutil.rmtree(small_fs / "probe")
    _fill(small_fs, leave=int(need * 1.5))   # room for one run and a half
    code, so, se = cli("run", *args)
    assert code == 2, se
    lines = se.strip().splitlines()
    assert len(lines) == 2 and "1 of 2 mpiruns failed" in lines[1], se
    assert lines[0].startswith(f"mpitempo: run default-001 failed: the disk of '{out}' is full (") and \
        lines[0].endswith("failed: No space left on device"), se          # the core's line, whatever the launcher adds
    rec = json.loads((out / "runs" / "default-001" / "failed.json").read_text())
    assert rec["reason"] == lines[0].split("failed: ", 1)[1]
    runs = sorted((out / "runs").iterdir())
    complete = [d for d in runs if (d / "meta.json").exists()]
    assert len(complete) == 1
    for d in runs:
        assert not list(d.glob(".*.tmp")), "a temporary file was left behind"
    from mpitempo.io.rundir import find_runs

    ok, failed, incomplete = find_runs(out)      # the kept run verifies against its meta.json
    assert len(ok) == 1
    # Free the space. Removing the filler alone is not enough: the whole campaign (two runs of
    # `need` bytes in 4 KiB pages, the failure records, the launcher's stderr) does not fit into
    # 256 KiB with Open MPI's longer stderr and larger files; the disk grows as a user would free it.
    os.unlink(small_fs / "filler")
    subprocess.run(["mount", "-o", f"remount,size={4 * need // 1024 + 64}k", str(small_fs)], check=True)
    code, so, se = cli("run", "--resume", out, "--quiet", "--no-summary")
    assert code == 0, se
    assert len(list((out / "runs").glob("*/meta.json"))) == 2
    ok, failed, incomplete = find_runs(out)
    assert len(ok) == 2 and (out / "runs" / "default-001" / "failed-attempt-1.json").exists()


def test_disk_full_while_writing_the_run_log(build, tmp_path):
    """write() of runlog.jsonl fails with ENOSPC (an LD_PRELOAD shim): the campaign stops with one
    line, the run that just completed is kept, and --resume continues."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if os.environ.get("MPITEMPO_CORE"):
        pytest.skip("the ENOSPC shim is preloaded into every rank too, which a sanitizer build refuses")
    if not cc:
        pytest.skip("no C compiler for the LD_PRELOAD shim")
    src = tmp_path / "enospc.c"
    src.write_text(r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, path, sizeof path - 1);
    if (k > 0) { path[k] = 0; if (strstr(path, "runlog.jsonl")) { errno = ENOSPC; return -1; } }
    return real(fd, buf, n);
}
''')
    so_path = tmp_path / "libenospc.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so_path), str(src), "-ldl"], check=True)
    out = tmp_path / "camp"
    env = dict(os.environ, LD_PRELOAD=str(so_path))
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", *QUICK, "--mpiruns", "2", "-o", str(out),
                        "--quiet"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"the disk of '{out}' is full (" in r.stderr and f"mpitempo run --resume {out}" in r.stderr
    assert (out / "runs" / "default-000" / "meta.json").exists()
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", "--resume", str(out), "--quiet", "--no-summary"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(list((out / "runs").glob("*/meta.json"))) == 2


def test_damaged_run_is_refused_then_rerun_by_resume(cli, build, tmp_path):
    out = tmp_path / "camp"
    code, so, se = cli("run", *QUICK, "--mpiruns", "2", "-o", out, "--quiet")
    assert code == 0, se
    csv = out / "runs" / "default-001" / "measurements.csv"
    csv.write_text("".join(csv.read_text().splitlines(keepends=True)[:4]))   # truncated at a line boundary
    code, so, se = cli("summary", out)
    assert code == 2 and "run 'default-001'" in se and "is damaged" in se and "--resume" in se
    code, so, se = cli("run", "--resume", out, "--quiet", "--no-summary")
    assert code == 0, se
    assert (out / "runs" / "default-001" / "incomplete-attempt-1" / "measurements.csv").exists()  # kept aside
    code, so, se = cli("summary", out, "--json")
    assert code == 0 and json.loads(so)[0]["runs"] == 2


def test_resume_names_what_differs(cli, build, tmp_path):
    out = tmp_path / "camp"
    code, so, se = cli("run", *QUICK, "--mpiruns", "1", "-o", out, "--quiet")
    assert code == 0, se
    code, so, se = cli("run", "--resume", out, "--nrep", "11", "--quiet")
    assert code == 2 and "differs from the flags given ('nrep = 10' there, 'nrep = 11' now)" in se, se
    code, so, se = cli("run", "--resume", out, "--quiet", "--no-summary")
    assert code == 0 and "differs" not in se
