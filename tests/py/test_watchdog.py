"""The watchdog every MPI job runs under (mpitempo.runner.watchdog), without MPI: process trees made of
sh and sleep, a /dev/shm stand-in directory; and the naming of a full disk (runner.reason)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mpitempo.runner import watchdog
from mpitempo.runner.reason import disk_full, with_disk_full


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def c_watchdog(tmp_path_factory) -> str:
    """The compiled watchdog (src/watchdog/watchdog.c), built here as CMake builds it with the core."""
    cc = os.environ.get("CC", "cc")
    out = tmp_path_factory.mktemp("watchdog") / "mpitempo-watchdog"
    r = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                        str(ROOT / "src" / "watchdog" / "watchdog.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.fixture(autouse=True, params=["python", "c"])
def impl(request, monkeypatch) -> str:
    """Every test once with each watchdog: this module, and the compiled twin with the same contract."""
    path = "python" if request.param == "python" else request.getfixturevalue("c_watchdog")
    monkeypatch.setenv("MPITEMPO_WATCHDOG", path)
    return request.param


def _head() -> list[str]:
    """The argv prefix that starts the watchdog in use (as watchdog.command builds it)."""
    impl = watchdog.implementation()
    return [sys.executable, "-I", "-S", impl] if impl.endswith(".py") else [impl]


def test_the_watchdog_in_use_is_the_one_chosen(impl, c_watchdog):
    assert (watchdog.implementation() == c_watchdog) == (impl == "c")
    assert watchdog.command(["true"])[0][0] == (c_watchdog if impl == "c" else sys.executable)


def test_a_core_directory_with_a_compiled_watchdog_selects_it(c_watchdog, tmp_path, monkeypatch):
    monkeypatch.delenv("MPITEMPO_WATCHDOG")
    monkeypatch.setattr(watchdog, "_binary", None)
    watchdog.use_binary_in(tmp_path)                  # no watchdog there: the module
    assert watchdog.implementation() == os.path.abspath(watchdog.__file__)
    watchdog.use_binary_in(Path(c_watchdog).parent)
    assert watchdog.implementation() == c_watchdog


def test_a_bad_watchdog_setting_is_refused_before_anything_is_created(tmp_path, monkeypatch):
    """MPITEMPO_WATCHDOG naming no executable: one line naming the variable and what is allowed, exit 2,
    no campaign directory (not 'cannot start <the launcher>')."""
    for bad in (str(tmp_path / "missing"), str(tmp_path)):
        monkeypatch.setenv("MPITEMPO_WATCHDOG", bad)
        assert watchdog.env_problem().startswith(f"MPITEMPO_WATCHDOG {bad!r} is not an executable file")
        out = tmp_path / "camp"
        r = subprocess.run([sys.executable, "-m", "mpitempo.cli", "run", "--ops", "allreduce", "--nrep", "5",
                            "--mpiruns", "1", "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 2 and not out.exists(), r.stderr
        assert r.stderr.strip().splitlines() == [f"mpitempo: error: {watchdog.env_problem()}"], r.stderr


def test_bad_arguments_are_refused(c_watchdog):
    for args in (["--fd"], ["--fd", "x", "--", "true"], ["--grace", "-1", "--", "true"], ["--bogus", "1", "--", "true"],
                 ["--fd", "3"]):
        r = subprocess.run([*_head(), *args], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("mpitempo watchdog: "), (args, r.stderr)


def test_a_missing_launcher_is_named():
    r = subprocess.run([*_head(), "--", "/nonexistent/mpiexec", "-n", "2"], capture_output=True, text=True)
    assert r.returncode == 127 and "cannot start '/nonexistent/mpiexec'" in r.stderr


def test_output_and_stdin_pass_through():
    r = subprocess.run([*_head(), "--", "sh", "-c", "cat; echo err >&2"], input="hello\n", capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "hello\n", "err\n")


def _procs(marker: str) -> list[int]:
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{e}/cmdline").read_bytes():
                    out.append(int(e))
            except OSError:
                pass
    return [p for p in out if watchdog.alive(p)]


def _gone(marker: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _procs(marker):
            return True
        time.sleep(0.05)
    return False


def _tree(marker: str) -> list[str]:
    """A job whose processes escape its process group (setsid, as hydra_pmi_proxy and the ranks do),
    ignore SIGTERM, or are orphaned (their parent exits)."""
    s = f"sleep 300.{marker}"
    return ["sh", "-c", f"{s} & setsid {s} & (trap '' TERM; {s}) & sh -c '{s} &' ; wait"]


def test_exit_status_is_the_launchers():
    assert watchdog.popen(["sh", "-c", "exit 3"]).wait() == 3
    assert watchdog.popen(["sh", "-c", "kill -KILL $$"]).wait() == -signal.SIGKILL
    assert watchdog.popen(["sh", "-c", "kill -TERM $$"]).wait() == -signal.SIGTERM


def test_stop_kills_every_process_of_the_job():
    """Hostile job: processes in other sessions, one that ignores SIGTERM, an orphan: stop() leaves
    none of them (SIGKILL after the grace period)."""
    marker = str(uuid.uuid4().int)[:9]
    p = watchdog.popen(_tree(marker), grace=1.0)
    deadline = time.monotonic() + 10
    while len(_procs(marker)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_procs(marker)) >= 4
    watchdog.stop(p, grace=1.0)
    assert _gone(marker), _procs(marker)


def test_sigkill_of_mpitempo_kills_the_job(tmp_path):
    """Hostile fault: the process that started the job (mpitempo) is killed with SIGKILL: the pipe's
    write end closes, and the watchdog kills the whole job."""
    marker = str(uuid.uuid4().int)[:9]
    script = tmp_path / "parent.py"
    script.write_text("import sys, time\nfrom mpitempo.runner import watchdog\n"
                      f"p = watchdog.popen({_tree(marker)!r}, grace=1.0)\nprint(p.pid, flush=True)\ntime.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    wd = int(parent.stdout.readline())
    deadline = time.monotonic() + 10
    while len(_procs(marker)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_procs(marker)) >= 4
    parent.kill()
    parent.wait()
    assert _gone(marker), _procs(marker)
    deadline = time.monotonic() + 10      # then the watchdog sweeps /dev/shm and exits
    while watchdog.alive(wd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not watchdog.alive(wd)


def test_launcher_is_not_started_after_mpitempo_died(tmp_path):
    """The watchdog starts nothing when its parent is already gone (killed between the two starts)."""
    r, w = os.pipe()
    os.close(w)
    flag = tmp_path / "started"
    rc = subprocess.run([*_head(), "--fd", str(r), "--", "touch", str(flag)], pass_fds=(r,)).returncode
    os.close(r)
    assert rc != 0 and not flag.exists()


def test_orphans_of_a_finished_launcher_are_killed():
    """The launcher exits and leaves a process behind (a rank its launcher lost): killed after the grace."""
    marker = str(uuid.uuid4().int)[:9]
    p = watchdog.popen(["sh", "-c", f"setsid sleep 300.{marker} & exit 0"], grace=0.5)
    assert p.wait(timeout=20) == 0
    assert _gone(marker, 2.0)


def test_new_mpi_segments_are_removed_and_others_kept(tmp_path):
    """The job leaves segments named as MPICH and Open MPI name theirs (mpich_shm_*, sm_segment.*),
    a file of another name that a job process had mapped, and a file of another name it never mapped
    (not the job's: kept); a file that existed before the job is kept, as is one that another process
    still holds open."""
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "mpich_shm_old_0").write_bytes(b"x")
    holder = subprocess.Popen(["sh", "-c", f"exec 3>{shm}/mpich_shm_busy_0; sleep 30"])
    time.sleep(0.2)
    job = ["sh", "-c", f"echo > {shm}/mpich_shm_1a2b_0; echo > {shm}/sm_segment.h.0.1.0; "
                       f"echo > {shm}/mpich_shar_tmpAbC; echo > {shm}/sem.other; exit 1"]
    try:
        assert watchdog.popen(job, shm_dir=str(shm)).wait() == 1
    finally:
        holder.kill()
        holder.wait()
    assert sorted(os.listdir(shm)) == ["mpich_shm_busy_0", "mpich_shm_old_0", "sem.other"]


def test_leftover_shm_rules():
    before = {"a": (1, 0), "mpich_shm_x_0": (2, 0)}
    after = {"a": (1, 0), "mpich_shm_x_0": (9, 0), "mpich_shm_y_0": (3, 0), "ucx_1": (4, 0), "other": (5, 0),
             "sm_segment.h.0.1.0": (6, 0)}
    # a new inode under an old name is new; "ucx_1" was mapped by the job; "other" is not the job's;
    # the Open MPI segment is still in use by a live process
    assert watchdog.leftover_shm(before, after, {"ucx_1"}, {"sm_segment.h.0.1.0"}) == \
        ["mpich_shm_x_0", "mpich_shm_y_0", "ucx_1"]


def test_disk_full_is_named(tmp_path, monkeypatch):
    """Hostile fault: the disk fills up, so that the launcher's output is lost (stderr.log empty) or the
    core says ENOSPC: the reason names the full disk and its free bytes."""
    from mpitempo.runner import reason

    assert disk_full(tmp_path).startswith(f"the disk of '{tmp_path}' is full (")
    core = "writing /x/.meta.json.1.tmp failed: No space left on device"
    assert with_disk_full(core, f"mpitempo-bench: error: {core}\n", tmp_path, 1) == f"{disk_full(tmp_path)}: {core}"
    monkeypatch.setattr(reason, "free_bytes", lambda p: 4096)
    got = with_disk_full("the launcher exited with code 255 and printed nothing on stderr", "\n", tmp_path, 255)
    assert got == f"the disk of '{tmp_path}' is full (4096 bytes free): the launcher exited with code 255 and " \
                  "what it printed could not be written"
    monkeypatch.setattr(reason, "free_bytes", lambda p: 10 << 30)   # room enough: not the disk
    assert with_disk_full("x", "", tmp_path, 255) == "x"


def test_segments_are_removed_when_the_watchdog_itself_is_killed(tmp_path):
    """Hostile fault: the watchdog itself is killed with SIGKILL (by a user, the OOM killer): the
    launcher gets SIGTERM from its parent-death signal, and mpitempo removes the segments the job
    left once no process holds them (watchdog.finish)."""
    shm = tmp_path / "shm"
    shm.mkdir()
    marker = str(uuid.uuid4().int)[:9]
    p = watchdog.popen(["sh", "-c", f"echo > {shm}/mpich_shm_k_0; exec sleep 300.{marker}"], shm_dir=str(shm))
    deadline = time.monotonic() + 10
    while not _procs(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    assert p.wait(timeout=10) == -signal.SIGKILL
    watchdog.finish(p)
    assert _gone(marker) and os.listdir(shm) == []
