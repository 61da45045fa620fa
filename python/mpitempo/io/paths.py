"""Output paths checked before any work: a file that cannot be written is a one-line error at the
start, not a traceback after a long run."""
from __future__ import annotations

import contextlib
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


# what --plot writes: matplotlib's savefig by the name's suffix (clocks, trace); PNG bytes (drift, pingpong)
PLOT_FORMATS = ("png", "pdf", "svg")


def check_output_file(path, what: str = "the output file", formats: tuple[str, ...] = ()) -> Path:
    """PATH can be written as a file: its directory exists and takes files, it is not a directory;
    with formats (e.g. ("png", "pdf", "svg")) its name ends in one of them. A plot's name needs its
    suffix: matplotlib fails on an unknown one after the run, and appends .png to a name without one
    (--plot /dev/null would write /dev/null.png)."""
    p = Path(path)
    if p.is_dir():
        raise MtError(f"cannot write {what} '{p}': it is a directory")
    if formats and p.suffix[1:].lower() not in formats:
        allowed = ", ".join(f".{f}" for f in formats[:-1]) + (" or " if len(formats) > 1 else "") + f".{formats[-1]}"
        raise MtError(f"cannot write {what} '{p}': give a file name ending in {allowed}")
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


def write_output(path, data, what: str = "the output file") -> Path:
    """Write an output file whole: a new temporary file in its directory (created exclusively, so
    never a planted link), renamed over PATH. A link at PATH is replaced, never written through; a
    failure (disk full) leaves PATH as it was and no temporary file. A device or FIFO that PATH
    names (/dev/null, /dev/stdout) is written to, never replaced."""
    import stat

    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        try:
            with open(p, "wb") as f:
                f.write(raw)
        except OSError as e:
            raise MtError(f"cannot write {what} '{p}': {e.strerror}") from None
        return p
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    except OSError as e:
        raise MtError(f"cannot write {what} '{p}': {e.strerror}") from None
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())   # a full disk surfaces here (delayed allocation), before the rename
        os.replace(tmp, p)
        _fsync_dir(p.parent if str(p.parent) else Path("."))
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise MtError(f"cannot write {what} '{p}': {e.strerror}") from None
    return p


def _fsync_dir(d: Path) -> None:
    """Make a rename in d durable (best effort: some file systems refuse fsync on a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def data_dir_of(d: Path) -> str | None:
    """What kind of data directory d is (never following a link at d's entries): "campaign" (a
    campaign.toml file beside a runs/ directory), "run" (a meta.json in a directory below runs/),
    "trace" (a trace.json), else None."""
    import stat as _st

    def kind(name: str, test) -> bool:
        try:
            return test(os.lstat(d / name).st_mode)
        except OSError:
            return False

    if kind("campaign.toml", _st.S_ISREG) and kind("runs", _st.S_ISDIR):
        return "campaign"
    if kind("trace.json", _st.S_ISREG):
        return "trace"
    if d.parent.name == "runs" and kind("meta.json", _st.S_ISREG):
        return "run"
    return None


def check_not_in_data_dir(out, what: str, top_ok: bool = False, directory: bool = False) -> None:
    """Refuse an output (file or directory) inside any campaign, run or trace directory, not only the
    ones being read: it would mix into or replace data (a report onto another campaign's
    measurements.csv, a trace into a completed run directory). With top_ok a file directly in a
    campaign directory is allowed (the default report.html beside campaign.toml), never in its runs/.
    The path is resolved first: a link leading into such a directory counts. With directory=True the
    output is a directory to write files into, and it must not be such a directory itself either."""
    o = Path(os.path.realpath(out))
    if directory and o.is_dir() and data_dir_of(o) is not None:
        raise MtError(f"refusing to write {what} '{out}': it is a {data_dir_of(o)} directory (its data); "
                      "choose an output outside every campaign's runs/ and every trace directory")
    for i, d in enumerate(o.parents):
        kind = data_dir_of(d)
        if kind is None or (top_ok and i == 0 and kind == "campaign"):
            continue
        raise MtError(f"refusing to write {what} '{out}': it is inside the {kind} directory '{d}' (its data); "
                      "choose an output outside every campaign's runs/ and every trace directory")


def check_replaceable(out, what: str, looks_like, head_bytes: int = 64 << 10) -> None:
    """An -o that exists as a regular file may be replaced only when it holds what this same command
    wrote before (looks_like(first 64 KiB) is true); a device or FIFO (/dev/null) is written to, not
    replaced, and a link is replaced itself (write_output), its target untouched; any other file is
    refused (check before anything runs)."""
    import stat as _st

    p = Path(out)
    try:
        st = os.lstat(p)
    except OSError:
        return
    if not _st.S_ISREG(st.st_mode):   # a link is replaced (never written through), a device written to
        return
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            head = f.read(head_bytes)
    except OSError as e:
        raise MtError(f"cannot check {what} '{out}': {e.strerror}") from None
    if not looks_like(head):
        raise MtError(f"refusing to write {what} '{out}': the file exists and is not one this command wrote "
                      "(it would be replaced); choose a new file name or remove it")


def looks_like_report(head: bytes) -> bool:
    """The start of an HTML report written by mpitempo (an empty file too: nothing to lose)."""
    text = head.lstrip().lower()
    return not text or (text.startswith((b"<!doctype html", b"<html")) and b"mpitempo" in text)


def looks_like_plot(head: bytes) -> bool:
    """The start of a plot file as matplotlib writes it (PNG, PDF, SVG), or an empty file."""
    return not head.strip() or head.startswith((b"\x89PNG\r\n\x1a\n", b"%PDF-")) or (
        head.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in head)


def looks_like_export(head: bytes) -> bool:
    """An OSU or IMB text file that `export` wrote (its notes name mpitempo), or an empty file."""
    return not head.strip() or b"mpitempo" in head


def looks_like_parquet(head: bytes) -> bool:
    """A Parquet file (its magic number), as `export --parquet` writes, or an empty file."""
    return not head or head.startswith(b"PAR1")


# the files of a campaign directory besides runs/ (docs/file-formats.md), and the study records
CAMPAIGN_FILES = ("campaign.toml", "runlog.jsonl", "order.json", "spec.json", "system-check.json",
                  ".mpitempo.lock", "dvfs.json", "slurm.json", "sbatch.sh", "barrier-study.json",
                  "timer-study.txt")


def _inside(p: Path, d: Path) -> bool:
    return p == d or d in p.parents


def _protected(root: Path) -> tuple[list[Path], list[Path]]:
    """(directories whose whole content is data, single files) of a campaign, store or run read."""
    if root.is_file():
        return [], [root]
    if (root / "meta.json").exists() and not (root / "runs").is_dir():   # one run directory
        return [root], []
    dirs = [root / "runs"] if (root / "runs").exists() else []
    for sub in ("logp", "campaign"):   # the campaigns inside a barrier or tune directory
        if (root / sub / "runs").is_dir():
            d, f = _protected(root / sub)
            dirs += d
            dirs.append(root / sub)
    return dirs, [root / n for n in CAMPAIGN_FILES]


def check_not_input(out, inputs, what: str, directory: bool = False) -> None:
    """Refuse an output (a file, or with directory=True a directory to write files into) that is a
    file of a campaign or store being read, or lies in its runs/: writing it would overwrite the
    data being read. Links and hard links to those files count too."""
    o = Path(os.path.realpath(out))
    try:
        ost = os.stat(out)
    except OSError:
        ost = None
    for inp in inputs:
        if str(inp) == "-":
            continue
        root = Path(os.path.realpath(inp))
        dirs, files = _protected(root)
        inside = next((d for d in dirs if _inside(o, d)), None)
        same = next((f for f in files if o == f), None)
        if inside is None and same is None and ost is not None and not directory:
            same = _same_file(ost, dirs, files)   # a link or hard link to one of its files
        if inside is None and same is None:
            continue
        if root.is_file():
            raise MtError(f"refusing to write {what} '{out}': it is the store '{inp}', which is being read; "
                          "choose another output file")
        else:
            hit = o if _inside(o, root) and o != root else (same or inside)
            rel = hit.relative_to(root) if _inside(hit, root) and hit != root else Path(".")
            where = f"{'inside ' if directory else ''}'{rel}'" + (" (the same file)" if hit != o else "")
        raise MtError(f"refusing to write {what} '{out}': it is {where} of '{inp}', which is being read; "
                      "choose an output outside the campaign's runs/ and its files")


def _same_file(ost: os.stat_result, dirs: list[Path], files: list[Path]) -> Path | None:
    key = (ost.st_dev, ost.st_ino)
    cands = list(files)
    for d in dirs:
        for base, _, names in os.walk(d):
            cands += [Path(base) / n for n in names]
    for p in cands:
        try:
            st = os.stat(p)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == key:
            return p
    return None
