"""Locks and signals of a running campaign.

* ``campaign_lock(dir)``: an exclusive lock (flock) on ``DIR/.mpitempo.lock`` held
  while a campaign runs or resumes in DIR; a second `run --resume` on the same
  directory is refused at once with who holds it (pid, host, command, since when).
  The kernel drops the lock when the holder dies, so a killed `mpitempo` never
  leaves a stale lock behind.
* ``builds_in_use(builds)``: shared locks on the cache directories of the cores a
  campaign runs; `build --force` takes the exclusive lock and refuses while a
  campaign uses that core (mpitempo.build.ensure_build).
* ``signals_interrupt()``: SIGTERM and SIGHUP act like Ctrl-C: the runner stops the
  mpirun (its watchdog kills every process of it, runner.watchdog), records the run as
  interrupted and prints the resume command.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from mpitempo.errors import MtError

LOCK_NAME = ".mpitempo.lock"


def _holder() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "argv": " ".join(sys.argv),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _describe(text: str) -> str:
    try:
        h = json.loads(text)
        return f"pid {h['pid']} on {h['host']} ({h['argv']}, since {h['since']})"
    except (ValueError, KeyError, TypeError):
        return "another mpitempo process"


@contextlib.contextmanager
def campaign_lock(outdir: Path, exclusive_create: bool = False):
    """Hold DIR/.mpitempo.lock exclusively. The lock file is never opened through a link (nor as a
    FIFO, device or hard-linked file: io.safefs); with exclusive_create it must not exist yet
    (FileExistsError otherwise): the claim of a new campaign directory."""
    from mpitempo.io import safefs

    path = Path(outdir) / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    if exclusive_create:
        flags |= os.O_EXCL
    else:
        safefs.check_not_link(path, outdir, want="file")
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        if exclusive_create:
            raise
        raise MtError(f"cannot lock the campaign directory '{outdir}': {LOCK_NAME} appeared while it was opened") \
            from None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):
            safefs.check_not_link(path, outdir, want="file")
        raise MtError(f"cannot lock the campaign directory '{outdir}': {e.strerror}") from None
    try:
        safefs.check_open_file(path, fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _describe(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
            raise MtError(f"campaign directory '{outdir}' is in use by {who}; "
                          "wait for it to finish (or stop it) and try again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(_holder()) + "\n").encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _in_use_path(build) -> Path | None:
    if getattr(build, "origin", "built") != "built":
        return None
    return Path(build.bindir).parent / ".in-use"


@contextlib.contextmanager
def builds_in_use(builds):
    fds = []
    try:
        for b in {id(b): b for b in builds}.values():
            p = _in_use_path(b)
            if p is None or not p.parent.is_dir():
                continue
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        for fd in fds:
            os.close(fd)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


@contextlib.contextmanager
def signals_interrupt():
    """While inside, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main thread."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            # None: the handler was installed outside Python (an MPI library preloaded into this process);
            # Python cannot reinstall it, and None is not a handler: the default action instead
            signal.signal(s, h if h is not None else signal.SIG_DFL)
