"""One line saying why an mpirun failed, from what it wrote to stderr.

The launcher (mpiexec, prterun, srun) prints its own banners around a failure; the line the user
needs is the core's `mpitempo-<app>: error: ...` when there is one, then what the runner itself
recorded (timeout, signal), then the text of the launcher's last banner made one line. Pure
functions: tested with recorded stderr of MPICH, Open MPI and Slurm (tests/py/test_failure_reason.py).
"""
from __future__ import annotations

import errno
import os
import re
import signal

from mpitempo import mpilib

_CORE = re.compile(r"^(?:\[[^\]]*\]\s*)?(mpitempo-[a-z]+): error: (.*\S)")
_LAUNCHER = re.compile(r"^((?:srun|slurmstepd|salloc|sbatch|mpiexec|mpirun|prterun)(?:\[\d+\])?: error: .*\S)")
# a launcher line that names a lost node: the cause, where the ranks' deaths it brought (a task killed
# by a signal) may be reported first (srun: "n1: task 0: Segmentation fault" before "Node failure on n2")
_NODE_LOST = re.compile(r"Node failure|NODE_FAIL|lost (?:contact|communication)", re.I)
_RUNNER = re.compile(r"^mpitempo: ((?:killed after the timeout|interrupted by) .*\S)")
# a line made only of banner decoration: dashes, equal signs, stars (Open MPI, MPICH)
_RULE = re.compile(r"^\s*[-=*]{3,}\s*$")
MAX_LEN = 300


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


# MPICH Hydra's banner (on stdout): the lines that say nothing about this failure
_HYDRA_NOISE = ("BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "CLEANING UP REMAINING PROCESSES",
                "YOU CAN IGNORE THE BELOW CLEANUP MESSAGES")
_HYDRA_EXIT = re.compile(r"^YOUR APPLICATION TERMINATED WITH THE EXIT STRING: (.*\S)")


def _banners(lines: list[str]) -> list[str]:
    """The text of each block framed by rule lines, each made one line."""
    out, cur, inside, hydra = [], [], False, False
    for ln in lines:
        if _RULE.match(ln):
            if inside and cur:
                out.append(("a rank terminated badly: " if hydra else "") + _join(cur))
            cur, inside, hydra = [], True, False
            continue
        if inside:
            text = ln.strip().lstrip("=").strip()
            if text in _HYDRA_NOISE:
                hydra = True
            elif text:
                cur.append(text)
    return out


def _join(parts: list[str]) -> str:
    s = parts[0]
    for p in parts[1:]:
        # a sentence wrapped over lines goes on with a space; separate facts get a semicolon
        s += " " if (s[-1] in ",:" or p[:1].islower()) else "; "
        s += p
    return re.sub(r"\s+", " ", s)


def _cut(s: str) -> str:
    return s if len(s) <= MAX_LEN else s[: MAX_LEN - 1] + "…"


ENOSPC_TEXT = os.strerror(errno.ENOSPC)   # "No space left on device", as the core and the launcher print it
LOW_SPACE = 1 << 20   # a failed mpirun that printed nothing, on a disk with less free: the disk was full


def free_bytes(path) -> int | None:
    """Bytes available to this user on the file system of path (or of its nearest existing parent)."""
    p = os.path.abspath(os.fspath(path))
    while True:
        try:
            st = os.statvfs(p)
            return st.f_bavail * st.f_frsize
        except OSError:
            if os.path.dirname(p) == p:
                return None
            p = os.path.dirname(p)


def disk_full(path) -> str:
    """'the disk of 'DIR' is full (N bytes free)': how a write that failed with ENOSPC is named."""
    n = free_bytes(path)
    return f"the disk of '{path}' is full" + (f" ({n} bytes free)" if n is not None else "")


def with_disk_full(reason: str, output: str, path, returncode: int | None) -> str:
    """The reason of a failed mpirun, naming a full disk: when the output reports ENOSPC, or when the
    launcher printed nothing (its stderr.log could not be written) and the disk has less than 1 MiB free."""
    if ENOSPC_TEXT in output:
        return _cut(f"{disk_full(path)}: {reason}")
    n = free_bytes(path)
    if not output.strip() and n is not None and n < LOW_SPACE:
        return _cut(f"{disk_full(path)}: the launcher exited with code {returncode} and what it printed "
                    "could not be written")
    return reason


def known_library_bug(output: str, argv: list[str]) -> str | None:
    """A known bug of the MPI library that this failed mpirun shows, or None: the core's command line
    (argv) says what it measured, the output what crashed (each library's own list: mpilib)."""
    return mpilib.known_bug(output, argv)


def with_known_bug(reason: str, output: str, argv: list[str]) -> str:
    """The reason of a failed mpirun, led by the known library bug it shows (if any)."""
    bug = known_library_bug(output, argv)
    return _cut(f"{bug} ({reason})") if bug else reason


def failure_reason(stderr: str, status: str, returncode: int | None) -> str:
    """Why an mpirun failed, in one line (never empty)."""
    lines = [ln.rstrip() for ln in stderr.splitlines()]
    for ln in lines:
        m = _RUNNER.match(ln)
        if m:
            return _cut(m.group(1))
    for ln in lines:
        m = _CORE.match(ln)
        if m:
            return _cut(m.group(2))
    if status == "incomplete":
        return "the mpirun exited with code 0 without writing its complete results (no meta.json)"
    found = [m.group(1) for m in (_LAUNCHER.match(ln.strip()) for ln in lines) if m]
    if found:
        return _cut(next((f for f in found if _NODE_LOST.search(f)), found[0]))
    banners = _banners(lines)
    for ln in lines:
        m = _HYDRA_EXIT.match(ln.strip())
        if m:
            return _cut(f"a rank terminated: {m.group(1)}" + (f" ({banners[-1].split(': ', 1)[-1]})" if banners else ""))
    if banners:
        return _cut(banners[-1])
    plain = [ln.strip() for ln in lines if ln.strip() and not _RULE.match(ln)]
    if plain:
        return _cut(plain[-1])
    if isinstance(returncode, int) and returncode < 0:
        return f"the launcher was killed by {_signame(-returncode)} and printed nothing on stderr"
    return f"the launcher exited with code {returncode} and printed nothing on stderr"
