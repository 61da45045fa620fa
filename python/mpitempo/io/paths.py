"""Output paths checked before any work: a file that cannot be written is a one-line error at the
start, not a traceback after a long run."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mpitempo.errors import MtError


def _probe(d: Path, what: str, p: Path) -> None:
    """Create and remove a file in directory d: the only test that sees read-only mounts, /proc, quotas."""
    if not d.is_dir():
        why = "does not exist" if not d.exists() else "is not a directory"
        raise MtError(f"cannot write {what} '{p}': '{d}' {why}")
    try:
        fd, name = tempfile.mkstemp(prefix=".mpitempo-probe-", dir=d)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise MtError(f"cannot write {what} '{p}': {e.strerror} (in '{d}')") from None


def check_output_file(path, what: str = "the output file") -> Path:
    """PATH can be written as a file: its directory exists and takes files, it is not a directory."""
    p = Path(path)
    if p.is_dir():
        raise MtError(f"cannot write {what} '{p}': it is a directory")
    _probe(p.parent if str(p.parent) else Path("."), what, p)
    return p


def check_output_dir(path, what: str = "the output directory") -> Path:
    """PATH is a directory that takes files, or can be created below an existing one."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise MtError(f"cannot write {what} '{p}': it exists and is not a directory")
    q = p
    while not q.exists():
        if q.parent == q:
            break
        q = q.parent
    _probe(q, what, p)
    return p
