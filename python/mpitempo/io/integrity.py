"""Is a run's data what its meta.json says it is?

The core records in meta.json, for every data file of a complete run, its size in
bytes, its number of lines and its CRC-32 (``files`` key, docs/file-formats.md).
A file truncated at a line boundary, emptied to its header, edited or swapped for
another run's no longer matches; readers call `verify_run` and refuse such a run
(`io.rundir.check_runs`), and `run --resume` treats it as not complete and runs it again
(the mismatching files are kept aside as an incomplete attempt).
"""
from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

from mpitempo.errors import MtError


def _stat_key(path) -> tuple:
    st = os.stat(path)
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# stat identity -> ((bytes, lines, crc32), time_ns when the reading began): each file is read once per process
_CACHE: dict[tuple, tuple[tuple[int, int, str], int]] = {}


def digest(path: Path) -> tuple[int, int, str]:
    """(bytes, lines, crc32 as 8 hex digits) of a file, as the core computes them."""
    return digest_info(path)[0]


def digest_info(path: Path) -> tuple[tuple[int, int, str], tuple, int]:
    """(digest, the file's stat identity (path, dev, ino, size, mtime_ns, ctime_ns), time_ns at which
    the reading that gave the digest began)."""
    key = _stat_key(path)
    hit = _CACHE.get(key)
    if hit is None:
        t0 = time.time_ns()
        hit = (_digest(str(path)), t0)
        if len(_CACHE) > 8192:
            _CACHE.clear()
        _CACHE[key] = hit
    return hit[0], key, hit[1]


def remember(key: tuple, dig: tuple[int, int, str], t0_ns: int) -> None:
    """Take dig as the digest of the file of stat identity key (read at t0_ns) without reading it: for a
    digest recorded earlier (io.columnar), when the file's identity has not changed since."""
    _CACHE.setdefault(tuple(key), (tuple(dig), int(t0_ns)))


# A received data file is read whole only when its size is what its record says (a differing size is
# refused without reading) and it is not mostly holes: a sparse file (a 20 GB measurements.parquet of a
# few allocated blocks) would be read for minutes to find zeros. Files below SPARSE_MIN are not checked;
# above it, less than 1/SPARSE_RATIO of the size allocated on disk is a sparse file (compressing file
# systems keep far more than that of a CSV or Parquet file).
SPARSE_MIN = 64 << 20
SPARSE_RATIO = 64


def sparse_problem(path, st: os.stat_result | None = None) -> str | None:
    """A one-line reason when path is a large file that is mostly holes, else None."""
    st = st or os.stat(path)
    blocks = getattr(st, "st_blocks", None)
    if blocks is None or st.st_size < SPARSE_MIN or blocks * 512 * SPARSE_RATIO >= st.st_size:
        return None
    return (f"{Path(path).name} is a sparse file ({st.st_size} bytes, {blocks * 512} allocated, "
            "not data a run writes)")


def _digest(path: str) -> tuple[int, int, str]:
    n = lines = 0
    crc = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += len(b)
            lines += b.count(b"\n")
            crc = zlib.crc32(b, crc)
    return n, lines, f"{crc & 0xFFFFFFFF:08x}"


def verify_run(rundir: Path, meta: dict, data_files) -> str | None:
    """None when every data file matches its record in meta.json (or meta.json predates the records);
    otherwise one line saying which file differs and how."""
    recs = meta.get("files")
    if recs is None:   # a run older than the records: its data files are still not read when sparse
        for name in data_files:
            try:
                sparse = sparse_problem(Path(rundir) / name)
            except OSError:
                continue
            if sparse:
                return sparse
        return None
    if not isinstance(recs, dict):
        return f"meta.json 'files' is {type(recs).__name__}, not an object"
    for name in data_files:
        rec = recs.get(name)
        path = Path(rundir) / name
        if not isinstance(rec, dict):
            return f"meta.json has no record of {name}"
        want_n, want_lines, want_crc = rec.get("bytes"), rec.get("lines"), rec.get("crc32")
        try:   # the size first: a large file larger than its record (a 20 GB sparse one) is refused unread
            st = os.stat(path)
            if isinstance(want_n, int) and not isinstance(want_n, bool) and st.st_size > max(want_n, SPARSE_MIN):
                return f"{name} has {st.st_size} bytes, meta.json records {want_n} (truncated or edited)"
            sparse = sparse_problem(path, st)
            if sparse:
                return sparse
            n, lines, crc = digest(path)
        except OSError as e:
            return f"cannot read {name}: {e.strerror}"
        if want_lines != lines:
            return f"{name} has {lines} lines, meta.json records {want_lines} (truncated or edited)"
        if want_n != n:
            return f"{name} has {n} bytes, meta.json records {want_n} (truncated or edited)"
        if want_crc != crc:
            return f"{name} has CRC-32 {crc}, meta.json records {want_crc} (edited or corrupted)"
    return None


_NUMERIC = {"BIGINT": int, "INTEGER": int, "DOUBLE": float}
_INT_RANGE = {"BIGINT": (-(1 << 63), (1 << 63) - 1, "a 64-bit integer"),
              "INTEGER": (-(1 << 31), (1 << 31) - 1, "a 32-bit integer")}


def _shown(v: str) -> str:
    return repr(v[:30] + ("..." if len(v) > 30 else ""))


def _header_problem(header: list[str], columns) -> str | None:
    """What is wrong with a data file's header: the reader takes the columns by position, so they must be
    exactly ``columns``, in that order."""
    cols = list(columns)
    if header == cols:
        return None
    missing = [c for c in cols if c not in header]
    if missing:
        return f"header lacks column '{missing[0]}'"
    extra = [c for c in header if c not in cols]
    if extra:
        return f"header has column {_shown(extra[0])}, which this format does not have (the columns: {','.join(cols)})"
    twice = [c for i, c in enumerate(header) if c in header[:i]]
    if twice:
        return f"header has column {_shown(twice[0])} twice"
    return f"header has the columns in another order ({','.join(header)}; the format: {','.join(cols)})"


def csv_header_problem(path: Path, columns) -> str | None:
    """'FILE:1: what is wrong' with the header of a CSV data file (see _header_problem), or None. Reads the
    first line only: cheap enough for every file read."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as f:
            line = f.readline(1 << 16)
    except UnicodeDecodeError as e:
        return f"{path}: not UTF-8 text ({e.reason} at byte {e.start})"
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if not line:
        return f"{path}:1: empty file (no header)"
    bad = _header_problem(next(csv.reader([line]), []), columns)
    return f"{path}:1: {bad}" if bad else None


def first_bad_csv_line(path: Path, columns: dict[str, str]) -> str | None:
    """'FILE:LINE: what is wrong' for the first line of a CSV data file that does not fit ``columns``
    (name -> DuckDB type: every column of the file, in any order), or None. For messages only: the
    reader itself is DuckDB. The core writes no quotes: a quoted field is named too (DuckDB's sniffer
    fails on it with a message naming no line)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as f:
            header_line = f.readline()
            if not header_line:
                return f"{path}:1: empty file (no header)"
            header = next(csv.reader([header_line]))
            bad = _header_problem(header, columns)
            if bad:
                return f"{path}:1: {bad}"
            idx = {c: header.index(c) for c in columns}
            for no, line in enumerate(f, 2):
                if '"' in line:
                    return f"{path}:{no}: a quoted field (the format has none)"
                row = next(csv.reader([line]), [])
                if len(row) != len(header):
                    return f"{path}:{no}: {len(row)} fields, the header has {len(header)}"
                for c, t in columns.items():
                    conv = _NUMERIC.get(t)
                    v = row[idx[c]]
                    if conv and v != "":
                        try:
                            x = conv(v)
                        except ValueError:
                            return f"{path}:{no}: column {c} is {_shown(v)}, not a number"
                        rng = _INT_RANGE.get(t)
                        if rng and not rng[0] <= x <= rng[1]:
                            return f"{path}:{no}: column {c} is {_shown(v)}, outside the range of {rng[2]}"
    except UnicodeDecodeError as e:
        return f"{path}: not UTF-8 text ({e.reason} at byte {e.start})"
    except (OSError, csv.Error) as e:
        return f"{path}: {e}"
    return None
