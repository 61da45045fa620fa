"""Call sites of a trace: the address each MPI call returned to (events.csv column ``site``, per
rank) named as function and file:line.

At MPI_Finalize every rank resolves its distinct addresses with dladdr and rank 0 writes them to
DIR/sites.tsv (rank, address, object file, the object's load address on that rank, nearest
dynamic symbol and its address). Here each address is turned into an offset in its object (a
PIE executable or a shared library: address - load address; a fixed-address executable: the
address itself) and named with ``addr2line -f -C`` on the object (binutils; it needs the object's
symbol table for the function and its debug information, ``-g``, for file:line). Without
addr2line, or for a stripped object, the site is the dynamic symbol + offset, else object +
offset. One address on different ranks is one site when it names the same place.

The files read come from a trace directory that may not be the user's own: the object paths are
only passed to addr2line as a file to read (never run), and every name is shown through the
sanitising console like any other string from a file.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from mpitempo.errors import MtError

SITES_FILE = "sites.tsv"
HEADER = ["rank", "address", "object", "object_base", "symbol", "symbol_address"]
MAX_SITES_BYTES = 64 << 20


def _elf_type(path: str) -> int | None:
    """e_type of an ELF file (2 fixed-address executable, 3 PIE executable or shared object)."""
    try:   # the path comes from a trace directory: a FIFO there must not block, a device is not read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            head = f.read(18)
    except OSError:
        return None
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")


def trace_file_present(p: Path, root: Path, want: str = "file") -> bool:
    """Whether a file (or directory) of a trace directory is there; a trace directory may come from
    someone else: a symbolic link, a FIFO (reading it blocks) or a device in its place is refused."""
    from mpitempo.io.safefs import check_not_link

    st = check_not_link(p, root, want="any", verb="read")
    if st is None:
        return False
    import stat

    if (want == "dir") != stat.S_ISDIR(st.st_mode):
        raise MtError(f"'{p}' is {'not ' if want == 'dir' else ''}a directory: not a trace directory's "
                      f"{'directory' if want == 'dir' else 'file'}")
    return True


def read_sites(d: Path) -> dict[tuple[int, int], dict] | None:
    """{(rank, address): row} of DIR/sites.tsv, None when the trace has none (older tracers,
    partial traces)."""
    from mpitempo.io.safeload import read_bytes

    p = Path(d) / SITES_FILE
    if not trace_file_present(p, Path(d)):   # a link or a FIFO in its place is refused
        return None
    lines = read_bytes(p, MAX_SITES_BYTES).decode(errors="replace").splitlines()
    if not lines or lines[0].split("\t") != HEADER:
        raise MtError(f"'{p}' is not a call-site table of an mpitempo trace (expected the header "
                      f"{' '.join(HEADER)})")
    out = {}
    for k, line in enumerate(lines[1:], 2):
        f = line.split("\t")
        try:
            if len(f) != 6:
                raise ValueError
            rank, addr, base, saddr = int(f[0]), int(f[1], 16), int(f[3], 16), int(f[5], 16)
        except ValueError:
            raise MtError(f"{p}:{k}: not a call-site line (rank, address, object, base, symbol, "
                          "symbol address, tab-separated)") from None
        out[(rank, addr)] = {"object": f[2], "base": base, "symbol": f[4], "symbol_address": saddr}
    return out


_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def check_objects(p: Path, objects) -> None:
    """The object files a call-site table names are read (ELF header, addr2line), never run: each must be
    a regular file or absent (a trace from another machine: its sites stay unnamed). A FIFO would block
    the reader, a device be read without end: refused in one line, before anything is read."""
    for obj in sorted(set(o for o in objects if o)):
        try:
            mode = os.stat(obj).st_mode
        except (OSError, ValueError):
            continue
        what = next((w for test, w in _NOT_REGULAR if test(mode)), None)
        if what is not None:
            raise MtError(f"'{p}' names the object file '{obj}', which is {what}: a call-site table may name only "
                          "regular files (executables and shared libraries)")


def _addr2line(obj: str, pcs: list[int]) -> list[tuple[str, str]]:
    """(function, file:line) per pc from addr2line, ('??', '??:0') when unknown. The object is opened here
    without blocking and checked to be a regular file; addr2line reads that same open file
    (/proc/self/fd/N), so a FIFO put in its place after the check is never read."""
    tool = shutil.which("addr2line")
    if not tool or not pcs:
        return [("??", "??:0")] * len(pcs)
    try:
        fd = os.open(obj, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return [("??", "??:0")] * len(pcs)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [("??", "??:0")] * len(pcs)
        name = f"/proc/self/fd/{fd}" if os.path.isdir("/proc/self/fd") else obj
        r = subprocess.run([tool, "-f", "-C", "-e", name, *[hex(pc) for pc in pcs]], capture_output=True,
                           text=True, timeout=60, errors="replace", pass_fds=(fd,))
    except (OSError, subprocess.TimeoutExpired):
        return [("??", "??:0")] * len(pcs)
    finally:
        os.close(fd)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != 2 * len(pcs):
        return [("??", "??:0")] * len(pcs)
    return [(lines[2 * i].strip(), lines[2 * i + 1].split(" (discriminator")[0].strip()) for i in range(len(pcs))]


def resolve(d: Path, ranks: "np.ndarray", sites: "np.ndarray") -> tuple["np.ndarray", dict[str, dict]]:  # noqa: F821
    """A label per event ("" when the event has no call site, or the trace no sites.tsv) and {label:
    {function, file, line, object, offset}}. ``sites`` are the hexadecimal addresses of events.csv's column."""
    n = len(ranks)
    import numpy as np   # here: trace_file_present serves trace run's record, which reads no events

    labels = np.full(n, "", dtype=object)
    table = read_sites(d)
    info: dict[str, dict] = {}
    if n == 0 or table is None:   # no table (a partial trace, an older tracer): addresses cannot be named
        return labels, info
    keys = {}
    for i in range(n):
        s = sites[i]
        if not s or s == "0":
            continue
        try:
            keys.setdefault((int(ranks[i]), int(str(s), 16)), []).append(i)
        except ValueError:
            continue
    # (object, offset) of every address; the pc looked up is the byte before the return address
    check_objects(Path(d) / SITES_FILE, (table[k]["object"] for k in keys if k in table))
    where: dict[tuple[int, int], tuple[str, int, dict | None]] = {}
    by_obj: dict[str, set[int]] = {}
    for key in keys:
        row = (table or {}).get(key)
        if row is None or not row["object"]:
            where[key] = ("", key[1], row)
            continue
        et = _elf_type(row["object"])
        off = key[1] if et == 2 else key[1] - row["base"]
        where[key] = (row["object"], off, row)
        by_obj.setdefault(row["object"], set()).add(off)
    named: dict[tuple[str, int], tuple[str, str]] = {}
    for obj, offs in by_obj.items():
        offs_l = sorted(offs)
        for off, res in zip(offs_l, _addr2line(obj, [max(o - 1, 0) for o in offs_l])):
            named[(obj, off)] = res
    for key, rows in keys.items():
        obj, off, row = where[key]
        fn, fl = named.get((obj, off), ("??", "??:0"))
        base = os.path.basename(obj) if obj else "?"
        if fn in ("??", "") and row and row["symbol"]:
            fn = f"{row['symbol']}+{key[1] - row['symbol_address']:#x}"
        file, _, line = fl.rpartition(":")
        if file and file != "??" and line not in ("", "0", "?"):
            label = f"{fn if fn not in ('??', '') else base + '+' + hex(off)} ({os.path.basename(file)}:{line})"
        elif fn not in ("??", ""):
            label = f"{fn} ({base}+{off:#x})"
        else:
            label = f"{base}+{off:#x}"
        info.setdefault(label, {"function": None if fn in ("??", "") else fn,
                                "file": None if not file or file == "??" else file,
                                "line": int(line) if line.isdigit() and line != "0" else None,
                                "object": obj or None, "offset": off})
        for i in rows:
            labels[i] = label
    return labels, info
