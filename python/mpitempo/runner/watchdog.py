"""The watchdog between mpitempo and every MPI job it launches: no rank outlives mpitempo.

mpitempo starts each job as ``python watchdog.py --fd R -- LAUNCHER ARGS...``: a small process (this
file, standard library only, run without the package) in a new session, which

* makes itself a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so that every process of the job
  stays below it even when the launcher puts its proxies and ranks into new sessions (MPICH's
  hydra_pmi_proxy, Open MPI's prted) or dies before them;
* starts the launcher with a parent-death signal (``PR_SET_PDEATHSIG``: SIGTERM when the watchdog
  itself is gone);
* holds the read end ``R`` of a pipe whose only write end mpitempo keeps open for its whole life and
  shares among all its watchdogs: when mpitempo exits or dies (SIGKILL, a crash, the OOM killer), the
  kernel closes the write end and the watchdog sees the pipe hang up;
* on that hang-up, or on SIGTERM/SIGINT/SIGHUP (how mpitempo stops a job at a timeout or on Ctrl-C),
  sends SIGTERM to the launcher and every process below it, then SIGKILL to whatever is left after the
  grace period;
* when the launcher has exited by itself, gives the processes it left behind the grace period and
  kills them too;
* once no process of the job is left, removes the /dev/shm files the job created (see ``leftover_shm``)
  and exits with the launcher's status (the same signal when the launcher was killed by one), so that
  its parent sees what it would have seen from the launcher.

Everything is event-driven (poll on the pipe and on a SIGCHLD wake-up pipe, at most one idle wake-up a
second): the watchdog does not take CPU time from the ranks it watches.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

SHM_DIR = "/dev/shm"
GRACE_S = 3.0

# /dev/shm files of MPI libraries: MPICH (ch4 and ch3 shared memory), Open MPI 4 (btl vader),
# Open MPI 5 (btl sm), Open MPI's posix shmem component and UCX's posix transport (the MPICH wheel's
# netmod; UCX unlinks its segment once mapped, so it is left only by a kill in between). A file of these names that appeared while the
# job ran and that no process maps or holds open once the job is gone is the job's leftover.
# (prefixes, not a regular expression: compiling one took up to 15 ms of every mpirun's start-up here)


class _Prefixes:
    def __init__(self, *prefixes: str):
        self.prefixes = prefixes

    def match(self, name: str) -> bool:
        return name.startswith(self.prefixes)


MPI_SHM = _Prefixes("mpich_shm_", "mpich_shar_tmp", "vader_segment.", "sm_segment.", "open_mpi.", "ucx_shm_posix_")

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):   # not Linux
        return False


# -------------------------------------------------------------------------------- /proc and /dev/shm

def _ppids() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(e))
    return children


def descendants(pid: int) -> set[int]:
    """Every process below pid (from /proc)."""
    children = _ppids()
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def mapped_shm(pids, shm_dir: str = SHM_DIR) -> set[str]:
    """Names of the files of shm_dir that these processes map or hold open."""
    prefix = shm_dir.rstrip("/") + "/"
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                for ln in f:
                    parts = ln.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith(prefix):
                        name = parts[5].rstrip("\n")
                        if not name.endswith(" (deleted)"):
                            out.add(name[len(prefix):])
        except OSError:
            pass
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(prefix) and not target.endswith(" (deleted)"):
                out.add(target[len(prefix):])
    return out


def shm_snapshot(shm_dir: str = SHM_DIR) -> dict[str, tuple[int, int]]:
    """{name: (inode, ctime_ns)} of the files of shm_dir owned by this user."""
    out = {}
    uid = os.getuid()
    try:
        with os.scandir(shm_dir) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid == uid and e.is_file(follow_symlinks=False):
                    out[e.name] = (st.st_ino, st.st_ctime_ns)
    except OSError:
        pass
    return out


def leftover_shm(before: dict, after: dict, job_mapped: set[str], in_use: set[str]) -> list[str]:
    """The files of the job to remove once it is gone: new since ``before`` (a name not there or a new
    inode), owned by this user (both snapshots hold only those), mapped or held open by no live process
    (``in_use``), and either seen mapped by a process of the job (``job_mapped``) or named as an MPI
    library names its segments (``MPI_SHM``). Pure: tested without MPI."""
    out = []
    for name, (ino, _) in sorted(after.items()):
        if name in before and before[name][0] == ino:
            continue
        if name in in_use:
            continue
        if name in job_mapped or MPI_SHM.match(name):
            out.append(name)
    return out


def _all_pids() -> list[int]:
    try:
        return [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def remove_leftover_shm(before: dict, job_mapped: set[str], shm_dir: str = SHM_DIR) -> list[str]:
    after = shm_snapshot(shm_dir)
    new = {n: v for n, v in after.items() if not (n in before and before[n][0] == v[0])}
    if not new:
        return []
    in_use = mapped_shm([p for p in _all_pids() if p != os.getpid()], shm_dir) if new else set()
    removed = []
    for name in leftover_shm(before, new, job_mapped, in_use):
        path = os.path.join(shm_dir, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if st.st_ino == new[name][0] and st.st_uid == os.getuid():
                os.unlink(path)
                removed.append(name)
    return removed


# -------------------------------------------------------------------------------------- the watchdog

class _Job:
    def __init__(self, argv: list[str], parent_fd: int | None, grace: float, shm_dir: str):
        self.argv, self.parent_fd, self.grace, self.shm_dir = argv, parent_fd, grace, shm_dir
        self.status: int | None = None      # the launcher's wait status
        self.stop: str | None = None        # why the job is being stopped
        self.job_mapped: set[str] = set()
        self.me = os.getpid()

    def _reap(self) -> None:
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child.pid and self.status is None:
                self.status = st
                self.child.returncode = os.waitstatus_to_exitcode(st)

    def _left(self) -> set[int]:
        self._reap()
        return {p for p in descendants(self.me) if alive(p)}

    def _kill_all(self) -> None:
        """SIGTERM to every process of the job (the launcher first: it forwards it to its ranks),
        SIGKILL to whatever is left after the grace period; returns when none is left."""
        procs = self._left()
        self.job_mapped |= mapped_shm(procs, self.shm_dir)
        order = ([self.child.pid] if self.child.pid in procs else []) + sorted(procs - {self.child.pid})
        for p in order:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            left = self._left()
            if not left:
                return
            self.job_mapped |= mapped_shm(left, self.shm_dir)
            time.sleep(0.05)
        for _ in range(100):      # SIGKILL until nothing is left (a process may fork while it dies)
            left = self._left()
            if not left:
                return
            for p in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGKILL)
            time.sleep(0.05)

    def _parent_gone(self) -> bool:
        import select

        if self.parent_fd is None:
            return False
        p = select.poll()
        p.register(self.parent_fd, select.POLLIN | select.POLLHUP)
        return bool(p.poll(0))

    def run(self) -> int:
        import select

        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)

        def on_stop(signum, frame):
            self.stop = self.stop or signal.Signals(signum).name

        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, on_stop)
        signal.signal(signal.SIGCHLD, lambda *a: None)   # wakes the poll below
        if self._parent_gone():
            return 128 + signal.SIGTERM   # mpitempo died before the job started: start nothing
        before = shm_snapshot(self.shm_dir)

        def child_setup():
            # the launcher gets SIGTERM if the watchdog itself is killed; default signal dispositions
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(s, signal.SIG_DFL)

        try:
            self.child = subprocess.Popen(self.argv, preexec_fn=child_setup)
        except OSError as e:
            print(f"mpitempo: cannot start '{self.argv[0]}': {e.strerror or e}", file=sys.stderr, flush=True)
            return 127
        poller = select.poll()
        poller.register(wake_r, select.POLLIN)
        if self.parent_fd is not None:
            poller.register(self.parent_fd, select.POLLIN | select.POLLHUP)
        while self.status is None and self.stop is None:
            for fd, ev in poller.poll(1000):
                if fd == wake_r:
                    with contextlib.suppress(OSError):
                        os.read(wake_r, 512)
                elif fd == self.parent_fd:
                    self.stop = "the death of mpitempo"
                    poller.unregister(fd)
            self._reap()
        left = self._left()
        if self.stop is None:
            # the launcher is gone: what it left behind gets the grace period to exit by itself
            # (polled at 1, 2, 4, ... ms up to 50 ms: the launcher's proxies usually exit within a few
            # ms of it, and a first nap of 50 ms was most of the watchdog's cost per mpirun)
            deadline = time.monotonic() + self.grace
            nap = 0.001
            while left and time.monotonic() < deadline and self.stop is None:
                time.sleep(nap)
                nap = min(2 * nap, 0.05)
                left = self._left()
        if left:
            self._kill_all()
        self._reap()
        remove_leftover_shm(before, self.job_mapped, self.shm_dir)
        if self.status is None:   # killed before it was reaped: cannot happen after _kill_all, but never hang
            return 128 + signal.SIGKILL
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            signal.set_wakeup_fd(-1)
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), sig)     # exit as the launcher did: the parent sees the same signal
            time.sleep(1)
            return 128 + sig
        return os.WEXITSTATUS(self.status)


def main(argv: list[str]) -> int:
    fd, grace, shm_dir = None, GRACE_S, SHM_DIR

    def bad(msg: str) -> int:
        print(f"mpitempo watchdog: {msg}", file=sys.stderr)
        return 2

    i = 0
    while i < len(argv) and argv[i] != "--":
        if i + 1 >= len(argv):
            return bad(f"option {argv[i]} needs a value")
        opt, val = argv[i], argv[i + 1]
        if opt == "--fd":
            if not (val.isascii() and val.isdigit()):
                return bad(f"bad --fd {val}")
            fd = int(val)
        elif opt == "--grace":
            try:
                grace = float(val)
            except ValueError:
                return bad(f"bad --grace {val}")
            if not 0 <= grace < 1e6:
                return bad(f"bad --grace {val}")
        elif opt == "--shm-dir":
            shm_dir = val
        else:
            return bad(f"unknown option {opt}")
        i += 2
    cmd = argv[i + 1:]
    if not cmd:
        return bad("no command after --")
    return _Job(cmd, fd, grace, shm_dir).run()


# ---------------------------------------------------------------------------- mpitempo's side of it

_pipe: tuple[int, int, int] | None = None   # (read end, write end, pid of the process that made it)

# The compiled watchdog (src/watchdog/watchdog.c, `mpitempo-watchdog` in the core's build), the same
# contract without an interpreter start per mpirun; None: this module is the watchdog.
# MPITEMPO_WATCHDOG=python forces this module, MPITEMPO_WATCHDOG=PATH a given binary.
BINARY_NAME = "mpitempo-watchdog"
_binary: str | None = None


def use_binary_in(bindir: str | os.PathLike | None) -> None:
    """Run jobs under the compiled watchdog of this core directory when it has one (build.ensure_build
    calls it with the core it found), else under this module."""
    global _binary
    path = os.path.join(os.fspath(bindir), BINARY_NAME) if bindir else None
    _binary = path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def env_problem() -> str | None:
    """What is wrong with MPITEMPO_WATCHDOG, in one line (None: unset, 'python', or an executable file)."""
    forced = os.environ.get("MPITEMPO_WATCHDOG", "")
    if not forced or forced == "python" or (os.path.isfile(forced) and os.access(forced, os.X_OK)):
        return None
    return (f"MPITEMPO_WATCHDOG {forced!r} is not an executable file (allowed: 'python', or the path of "
            f"a {BINARY_NAME}; unset, the core's own is used when it has one)")


def implementation() -> str:
    """The watchdog jobs run under: the path of the compiled one, or this module's path."""
    forced = os.environ.get("MPITEMPO_WATCHDOG", "")
    if forced == "python":
        return os.path.abspath(__file__)
    if forced:
        return forced
    return _binary or os.path.abspath(__file__)


def _parent_pipe() -> int:
    """The read end of the pipe every watchdog watches; mpitempo holds the write end until it exits."""
    global _pipe
    if _pipe is None or _pipe[2] != os.getpid():
        r, w = os.pipe()      # both ends close-on-exec: no other child inherits the write end
        _pipe = (r, w, os.getpid())
    return _pipe[0]


def command(argv: list[str], grace: float = GRACE_S, shm_dir: str = SHM_DIR) -> tuple[list[str], int]:
    """(the argv that runs ``argv`` under a watchdog, the fd to pass to it)."""
    fd = _parent_pipe()
    impl = implementation()
    head = [sys.executable, "-I", "-S", impl] if impl.endswith(".py") else [impl]
    return [*head, "--fd", str(fd), "--grace", f"{grace:g}", "--shm-dir", shm_dir, "--", *argv], fd


def popen(argv: list[str], grace: float = GRACE_S, shm_dir: str = SHM_DIR, **kw) -> subprocess.Popen:
    """subprocess.Popen of ``argv`` under a watchdog, in a new session; its returncode is the
    launcher's. Stop it with ``stop``."""
    cmd, fd = command(argv, grace, shm_dir)
    kw["pass_fds"] = tuple(kw.get("pass_fds", ())) + (fd,)
    kw["start_new_session"] = True
    before = shm_snapshot(shm_dir)
    try:
        p = subprocess.Popen(cmd, **kw)
    except FileNotFoundError as e:   # the interpreter: never the launcher, which the watchdog starts
        raise OSError(e.errno, e.strerror, argv[0]) from None
    p.mt_shm = (shm_dir, before)
    return p


def wait(p: subprocess.Popen, timeout: float | None = None) -> int:
    """``p.wait(timeout)``, woken by the exit itself: Popen.wait with a timeout polls with naps of up to
    50 ms, which added 25 ms on average to every mpirun; a pidfd (Linux 5.3) is readable the moment the
    process exits. Raises subprocess.TimeoutExpired as Popen.wait does."""
    if timeout is not None and p.returncode is None and hasattr(os, "pidfd_open"):
        import select

        try:
            fd = os.pidfd_open(p.pid)
        except OSError:       # an older kernel: Popen's own polling below
            fd = None
        if fd is not None:
            try:
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                if not poller.poll(max(0.0, timeout) * 1000):
                    raise subprocess.TimeoutExpired(p.args, timeout)
            finally:
                os.close(fd)
    return p.wait(timeout)


def finish(p: subprocess.Popen, wait_s: float = 5.0) -> None:
    """After the watchdog has exited: the sweep it does itself, once more from mpitempo, for the case
    where the watchdog was killed (SIGKILL) before it could clean up: the MPI segments that appeared
    since the job started and that no process maps or holds open any more are removed. After an exit
    by SIGKILL the job's processes may still be on their way out (the launcher got SIGTERM from its
    parent-death signal): they are given ``wait_s`` to release them."""
    shm_dir, before = getattr(p, "mt_shm", (SHM_DIR, None))
    if before is None:
        return
    deadline = time.monotonic() + (wait_s if p.returncode == -signal.SIGKILL else 0)
    while True:
        after = shm_snapshot(shm_dir)
        new = {n: v for n, v in after.items() if not (n in before and before[n][0] == v[0]) and MPI_SHM.match(n)}
        if not new:
            return
        in_use = mapped_shm(_all_pids(), shm_dir)
        if not set(new) & in_use or time.monotonic() >= deadline:
            remove_leftover_shm(before, set(), shm_dir)
            return
        time.sleep(0.1)


def stop(p: subprocess.Popen, grace: float = GRACE_S) -> None:
    """Stop the job: the watchdog kills every process of it (SIGTERM, SIGKILL after ``grace``) and
    removes its /dev/shm files; if the watchdog does not finish in time, everything below it is
    killed from here."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(p.pid, signal.SIGTERM)
    try:
        wait(p, grace + 10)
        finish(p)
        return
    except subprocess.TimeoutExpired:
        pass
    procs = descendants(p.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)
    for pid in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        wait(p, 5)
    finish(p)


def run(argv: list[str], timeout: float, grace: float = GRACE_S, **kw) -> subprocess.CompletedProcess:
    """subprocess.run under a watchdog: on the timeout (or Ctrl-C) the job is stopped as ``stop`` does,
    then TimeoutExpired (or KeyboardInterrupt) is raised. capture_output=True as for subprocess.run."""
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    with popen(argv, grace, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException:
            stop(p, grace)
            raise
        finish(p)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
