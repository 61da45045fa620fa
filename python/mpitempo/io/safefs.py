"""Writing inside a directory that mpitempo did not just create, without following links.

A campaign directory may come from someone else (a tarball, a shared file system). Whatever the
runner writes or appends there (the lock, runlog.jsonl, runs/<id>/ and the files in it, order.json,
system-check.json, the study directories' records) is opened here:

* never through a symbolic link: each path component below the directory the user named (the
  ``root``) is checked with lstat, and files are opened with O_NOFOLLOW, so a link planted as
  ``runlog.jsonl`` or ``runs/<id>`` cannot make mpitempo truncate, append to or fill a file or
  directory elsewhere;
* only when it is a regular file (not a FIFO, which would block, nor a device) with a single link
  (a hard link would write into the file it shares its contents with) or a real directory;
* with O_CLOEXEC, so that the mpiruns started later do not inherit it.

The root itself is what the user typed and may be a link. Every refusal is one line
(:class:`UnsafePath`, an MtError) naming the path and what it is.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from mpitempo.errors import MtError


class UnsafePath(MtError):
    """A path in a campaign directory that mpitempo refuses to write through."""


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISREG, "a regular file"))


def _what(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path, what: str, verb: str = "write") -> UnsafePath:
    return UnsafePath(f"refusing to {verb} '{path}': it is {what}; a campaign or trace directory holds only "
                      "regular files and directories (check where this directory came from)")


def _components(path: Path, root: Path | None) -> list[Path]:
    """The paths from the first component below root down to path (path itself last)."""
    path = Path(path)
    if root is None:
        return [path]
    root = Path(root)
    try:
        rel = path.relative_to(root)
    except ValueError:
        return [path]
    out, cur = [], root
    for part in rel.parts:
        cur = cur / part
        out.append(cur)
    return out


def check_not_link(path, root=None, want: str = "any", verb: str = "write") -> os.stat_result | None:
    """Refuse when path, or a directory between root and path, is a symbolic link; when it exists
    it must be a directory (want="dir"), a regular file with one link (want="file"), or either.
    Returns path's lstat (None when it does not exist). ``verb`` ("read" for the readers of a
    campaign) is what the refusal says mpitempo was about to do."""
    comps = _components(Path(path), None if root is None else Path(root))
    if not comps:   # path is root: what the user named
        return None
    st = None
    for i, p in enumerate(comps):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            raise _refuse(p, "below a file, not a directory", verb) from None
        last = i == len(comps) - 1
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(p, "a symbolic link", verb)
        if not last and not stat.S_ISDIR(st.st_mode):
            raise _refuse(p, _what(st.st_mode) + ", where a directory is expected", verb)
    if want == "dir" and not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, _what(st.st_mode) + ", where a directory is expected", verb)
    if want == "file":
        _check_file(path, st)
    elif want == "any" and not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise _refuse(path, _what(st.st_mode), verb)
    return st


def _check_file(path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, _what(st.st_mode))
    if st.st_nlink > 1:
        raise _refuse(path, f"a file with {st.st_nlink} hard links (writing it would change the others)")


def check_open_file(path, fd: int) -> None:
    """An fd opened with O_NOFOLLOW is a regular file with one link (fstat), else refused."""
    _check_file(path, os.fstat(fd))


def safe_mkdir(path, root=None, exist_ok: bool = True) -> Path:
    """Create directory path (its parent must exist), or accept it when it is already a real
    directory and exist_ok; never through a link."""
    p = Path(path)
    check_not_link(p.parent, root, want="dir")
    try:
        os.mkdir(p)
    except FileExistsError:
        if not exist_ok:
            raise
        check_not_link(p, root, want="dir")
    return p


def _check_parent(p: Path, root) -> None:
    """The directories between root and p's parent are real directories (root itself may be a link)."""
    if root is not None and p.parent != Path(root):
        check_not_link(p.parent, root, want="dir")


_MODES = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
          "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "r": os.O_RDONLY}


def safe_open(path, mode: str = "w", root=None, binary: bool = False, perm: int = 0o644):
    """open() for mode w, a, w+ or r that never follows a link (O_NOFOLLOW, every component below
    root checked), opens only a regular file with one link, and closes on exec. A FIFO is refused
    without blocking on it."""
    p = Path(path)
    flags = _MODES[mode]
    _check_parent(p, root)
    before = check_not_link(p, None, want="file")
    trunc = flags & os.O_TRUNC
    fd = _open_fd(p, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, perm)
    try:
        st = os.fstat(fd)
        _check_file(p, st)
        if before is not None and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise _refuse(p, "a file that was replaced while it was opened")
        os.set_blocking(fd, True)
        if trunc:
            os.ftruncate(fd, 0)
        f = os.fdopen(fd, mode + "b") if binary else os.fdopen(fd, mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
    return f


def _open_fd(p: Path, flags: int, perm: int) -> int:
    try:
        return os.open(p, flags, perm)
    except OSError as e:
        if e.errno == errno.ELOOP:   # a link appeared between the check and the open
            raise _refuse(p, "a symbolic link") from None
        if e.errno == errno.ENXIO:   # O_NONBLOCK write-open of a FIFO without a reader
            raise _refuse(p, "a FIFO") from None
        raise


def safe_append(path, text: str, root=None) -> None:
    """Append text to path (created when missing) as one write."""
    with safe_open(path, "a", root) as f:
        f.write(text)


def safe_write_text(path, text: str, root=None, binary: bool = False) -> None:
    """Write path whole: a temporary file in the same directory, created exclusively (O_EXCL: never
    a link or an existing file), renamed over path (a rename replaces a link, never writes through
    it). path may exist only as a regular file."""
    p = Path(path)
    _check_parent(p, root)
    check_not_link(p, None, want="file")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)   # unlink removes a link itself, never its target
    fd = _open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if binary else text.encode("utf-8"))
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def safe_read_text(path, root=None, limit: int = 64 << 20) -> str:
    """Read a regular file below root, never through a link and never blocking on a FIFO; at most
    limit bytes (a larger file is refused)."""
    p = Path(path)
    _check_parent(p, root)
    st = check_not_link(p, None, want="any")
    if st is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(p))
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"cannot read '{p}': it is {_what(st.st_mode)}, not a regular file")
    fd = _open_fd(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise UnsafePath(f"cannot read '{p}': it is not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafePath(f"cannot read '{p}': larger than {limit >> 20} MiB")
    return data.decode("utf-8", errors="replace")


def safe_rename(src, dst, root=None) -> None:
    """Rename src to dst inside root: both parents real directories, dst absent or a regular file."""
    for q in (Path(src), Path(dst)):
        _check_parent(q, root)
    check_not_link(dst, None, want="file")
    os.replace(src, dst)


def campaign_entries_check(root, names=(), run_files=True) -> None:
    """Refuse a campaign directory that holds a link (or a FIFO, device, socket, hard-linked file)
    where the runner writes: the given top-level names, runs/, every runs/<id>/ and, with run_files,
    every entry inside them (checked before anything is launched; the writes check again)."""
    root = Path(root)
    for name in names:
        st = check_not_link(root / name, root)
        if st is not None and stat.S_ISREG(st.st_mode):
            _check_file(root / name, st)
    runs = root / "runs"
    if check_not_link(runs, root, want="dir") is None:
        return
    with os.scandir(runs) as it:
        for e in it:
            d = runs / e.name
            check_not_link(d, root, want="dir")
            if not run_files:
                continue
            with os.scandir(d) as inner:
                for f in inner:
                    st = check_not_link(d / f.name, None, want="any")
                    if st is not None and stat.S_ISREG(st.st_mode):
                        _check_file(d / f.name, st)
                    if st is not None and stat.S_ISDIR(st.st_mode):   # incomplete-attempt-N/
                        with os.scandir(d / f.name) as deeper:
                            for g in deeper:
                                check_not_link(d / f.name / g.name, None, want="any")


__all__ = ["UnsafePath", "check_not_link", "safe_mkdir", "safe_open", "safe_append", "safe_write_text",
           "safe_read_text", "safe_rename", "campaign_entries_check"]
