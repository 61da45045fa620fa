"""Nothing of a job outlives mpitempo: no process, no /dev/shm file (docs/reliability.md, "Processes
and memory left behind").

Each job is started with a marker in its environment, which every process of it inherits (the
watchdog, mpiexec, hydra_pmi_proxy or prted, the ranks): the processes left are those whose
/proc/PID/environ holds it. Where the test may mount (root), mpitempo runs in its own mount namespace
whose /dev/shm is a fresh tmpfs of the test, so that "no new /dev/shm entry" is exact however many
other MPI jobs run on the machine; elsewhere the files the job's ranks had mapped are checked.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
# SIGKILL of `mpitempo run` at random moments: 20 rounds; MPITEMPO_TEST_SIGKILL_ROUNDS shortens it
# (never below 5)
ROUNDS = max(5, int(os.environ.get("MPITEMPO_TEST_SIGKILL_ROUNDS", "20")))
SEED = 25
CAMPAIGN = ["-n", "2", "--ops", "delay", "--delay", "100ms", "--nrep", "5", "--warmup", "0", "--mpiruns", "4",
            "--quiet", "--no-summary"]


@pytest.fixture
def shm(tmp_path):
    """(directory that is /dev/shm for the commands, argv prefix that runs a command so) — a fresh tmpfs
    bound onto /dev/shm in a private mount namespace; (None, []) where that is not allowed."""
    d = tmp_path / "shm"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,mode=1777", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        yield None, []
        return
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              f'mount --bind "{d}" /dev/shm && exec "$@"', "sh"]
    try:
        ok = subprocess.run(prefix + ["sh", "-c", f'test "$(stat -c %i /dev/shm)" = "$(stat -c %i {d})"'],
                            capture_output=True).returncode == 0
        yield (d, prefix) if ok else (None, [])
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _job(marker: str) -> dict[int, str]:
    """{pid: command name} of the live processes carrying the marker."""
    needle = f"MPITEMPO_TEST_JOB={marker}".encode()
    out = {}
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{e}/environ").read_bytes()
            if needle in env.split(b"\0"):
                out[int(e)] = Path(f"/proc/{e}/comm").read_text().strip()
        except OSError:
            continue
    return out


def _mapped(pids) -> set[str]:
    from mpitempo.runner.watchdog import mapped_shm

    return {f"/dev/shm/{n}" for n in mapped_shm(pids)}


def _start(prefix, marker, *args, **kw):
    env = dict(os.environ, MPITEMPO_TEST_JOB=marker)
    return subprocess.Popen([*prefix, sys.executable, "-m", "mpitempo.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _nothing_left(marker: str, shm_dir: Path | None, mapped: set[str], timeout: float = 15.0) -> tuple[dict, list]:
    """Wait until no process of the job is left and its /dev/shm files are gone; returns what is left."""
    deadline = time.monotonic() + timeout
    while True:
        procs = _job(marker)
        files = sorted(os.listdir(shm_dir)) if shm_dir else sorted(f for f in mapped if os.path.exists(f))
        if (not procs and not files) or time.monotonic() > deadline:
            return procs, files
        time.sleep(0.1)


def _wait_for(pred, timeout=60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_sigkill_of_run_at_random_moments_leaves_nothing(build, tmp_path, shm):
    """Hostile fault: `mpitempo run` (a campaign of 4 mpiruns on 2 ranks) is killed with SIGKILL at a
    random moment (seeded), ROUNDS times: before, between and during its mpiruns. Within seconds no
    process of the job is left (watchdog, mpiexec, hydra_pmi_proxy or prted, mpitempo-bench) and no
    new /dev/shm entry; the directory resumes to a complete campaign."""
    shm_dir, prefix = shm
    rng = random.Random(SEED)
    seen_ranks = 0
    for i in range(ROUNDS):
        out = tmp_path / f"camp{i}"
        marker = uuid.uuid4().hex
        p = _start(prefix, marker, "run", *CAMPAIGN, "-o", out)
        t_kill = rng.uniform(0.3, 4.0)
        t0 = time.monotonic()
        mapped: set[str] = set()
        while time.monotonic() - t0 < t_kill and p.poll() is None:
            procs = _job(marker)
            mapped |= _mapped(procs)
            time.sleep(0.05)
        ranks = [pid for pid, name in _job(marker).items() if name.startswith("mpitempo-bench")]
        seen_ranks += bool(ranks)
        p.kill()
        p.communicate()
        procs, files = _nothing_left(marker, shm_dir, mapped)
        assert not procs, f"round {i} (SIGKILL at {t_kill:.2f} s): left running {procs}"
        assert not files, f"round {i} (SIGKILL at {t_kill:.2f} s): left in /dev/shm {files}"
    assert seen_ranks >= 1, "no round killed mpitempo while its ranks ran"
    # the last campaign that got as far as its campaign.toml resumes to a complete one
    out = max((d for d in tmp_path.glob("camp*") if (d / "campaign.toml").exists()),
              key=lambda d: int(d.name[4:]))
    r = subprocess.run([*prefix, sys.executable, "-m", "mpitempo.cli", "run", "--resume", str(out), "--quiet",
                        "--no-summary"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and len(list((out / "runs").glob("*/meta.json"))) == 4, r.stderr


@pytest.fixture(scope="module")
def amg(build, tmp_path_factory):
    exe = tmp_path_factory.mktemp("amg") / "amg_like"
    subprocess.run([build.mpicc, "-O2", "-o", str(exe), str(ROOT / "examples/trace/amg_like.c")], check=True)
    return str(exe)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_signal_of_trace_run_leaves_nothing(build, amg, tmp_path, shm, sig):
    """Hostile fault: `mpitempo trace run` of a long application gets SIGTERM (it stops as Ctrl-C
    does: exit 130) or SIGKILL while its ranks run: no rank, no launcher, no /dev/shm file is left."""
    shm_dir, prefix = shm
    marker = uuid.uuid4().hex
    p = _start(prefix, marker, "trace", "run", "-n", "2", "-o", tmp_path / "tr", "--", amg, "--iters", "100000000")
    assert _wait_for(lambda: sum(n.startswith("amg_like") for n in _job(marker).values()) == 2), p.communicate()
    time.sleep(0.5)
    mapped = _mapped(_job(marker))
    p.send_signal(getattr(signal, sig))
    so, se = p.communicate(timeout=60)
    if sig == "SIGTERM":
        assert p.returncode == 130 and se.strip().splitlines()[-1] == "mpitempo: interrupted", se
    procs, files = _nothing_left(marker, shm_dir, mapped)
    assert not procs and not files, (procs, files)


def test_rank_killed_from_outside_leaves_no_shm(build, tmp_path, shm):
    """Hostile fault: one rank of a running mpirun is killed with SIGKILL by another user process
    (not by mpitempo): MPICH never removes that rank's segment; the run fails with a record and
    the job's /dev/shm files are gone once its processes are."""
    shm_dir, prefix = shm
    marker = uuid.uuid4().hex
    out = tmp_path / "camp"
    p = _start(prefix, marker, "run", "-n", "2", "--ops", "delay", "--delay", "200ms", "--nrep", "40", "--warmup",
               "0", "--mpiruns", "1", "--quiet", "--no-summary", "-o", out)
    ranks = lambda: sorted(pid for pid, n in _job(marker).items() if n.startswith("mpitempo-bench"))  # noqa: E731
    assert _wait_for(lambda: len(ranks()) == 2), p.communicate()
    # past MPI_Init: the ranks map their shared memory (MPICH's mpich_shm_*, Open MPI's sm_segment.*)
    assert _wait_for(lambda: _mapped(ranks())), "the ranks use no /dev/shm file: nothing to test"
    mapped = _mapped(ranks())
    os.kill(ranks()[-1], signal.SIGKILL)
    so, se = p.communicate(timeout=120)
    assert p.returncode == 2 and "1 of 1 mpiruns failed" in se, se
    procs, files = _nothing_left(marker, shm_dir, mapped)
    assert not procs and not files, (procs, files)


def test_disk_full_with_nothing_printed_is_named(build, tmp_path, small_fs):
    """Hostile fault: the disk of the campaign fills up completely while the second mpirun runs (rank 0
    fills it before it starts), so that neither the core's error nor the launcher's banner can be
    written to stderr.log; a little space is freed after the launcher exits. The run's reason names the
    full disk and its free bytes, not "the launcher exited with code 255 and printed nothing"."""
    fill = tmp_path / "fill.sh"
    fill.write_text("#!/bin/sh\n"
                    "case \" $* \" in *' --run-index 1 '*) if [ \"${PMI_RANK:-$OMPI_COMM_WORLD_RANK}\" = 0 ]; then "
                    f"cat /dev/zero > {small_fs}/filler 2>/dev/null; fi;; esac\n"
                    "exec \"$@\"\n")
    outer = tmp_path / "outer.sh"
    outer.write_text(f"#!/bin/sh\n\"$@\"\nrc=$?\n[ -e {small_fs}/filler ] && "
                     f"truncate -s -65536 {small_fs}/filler\nexit $rc\n")
    for f in (fill, outer):
        f.chmod(0o755)
    out = small_fs / "camp"
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", "-n", "2", "--ops", "delay", "--delay", "10ms",
                        "--nrep", "3", "--warmup", "0", "--mpiruns", "2", "--quiet", "--no-summary", "-o", str(out),
                        "--launcher", f"{outer} {{mpiexec}} -n {{np}} {fill} {{cmd}}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "1 of 2 mpiruns failed" in r.stderr, r.stderr
    rec = json.loads((out / "runs" / "default-001" / "failed.json").read_text())
    assert rec["reason"].startswith(f"the disk of '{out}' is full (") and "bytes free)" in rec["reason"], rec
    assert "printed nothing" not in rec["reason"] and rec["reason"] in r.stderr
