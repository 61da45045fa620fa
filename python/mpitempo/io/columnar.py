"""The columnar copy of a run's measurements: written once, read by every analysis.

Users keep, share and edit the CSV (``runs/<id>/measurements.csv``); analysis reads
``runs/<id>/measurements.parquet``, a Parquet copy of the same rows and columns written by DuckDB,
with its record ``runs/<id>/measurements.parquet.json``:

    {"columnar_version": 1, "source": "measurements.csv",
     "csv": {"bytes": B, "lines": L, "crc32": "8 hex"},        the CSV it was made from
     "copy": {"bytes": B, "crc32": "8 hex"}, "rows": N}        the Parquet file itself

A copy is used only when both records match the files as they are now (the CSV's digest is the one
``io.integrity`` checks against meta.json; the copy's own digest catches a damaged or swapped copy);
otherwise it is ignored and written again from the CSV. Writing never follows a link: the Parquet
file is made by DuckDB inside a fresh private directory (mkdtemp) next to the run's files and
renamed into place, the record is written with ``safefs.safe_write_text``; a copy or record that is
a symbolic link (or a FIFO, a device, a hard-linked file) is refused with an error, as everything
else in a campaign directory is (``io.safefs``). Where the run directory cannot be written (a
read-only campaign) no copy is written anywhere and that run is read from its CSV.

``MPITEMPO_COLUMNAR=off`` reads every run from its CSV (and writes no copy).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io import safefs
from mpitempo.io.integrity import digest

COLUMNAR_VERSION = 1
MAX_RUNTIME_S = 1e9   # as analysis.store.MAX_RUNTIME_S: a runtime above it is damage
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


_ON, _OFF = ("on", "1", "yes", "true", ""), ("off", "0", "no", "false")


def enabled() -> bool:
    """MPITEMPO_COLUMNAR as a switch; a value that is neither on nor off is refused (a typo such as
    'of' was taken as on)."""
    v = os.environ.get("MPITEMPO_COLUMNAR", "on").strip().lower()
    if v not in _ON + _OFF:
        raise MtError(f"invalid MPITEMPO_COLUMNAR {os.environ['MPITEMPO_COLUMNAR'][:40]!r} (allowed: "
                      f"{', '.join(x for x in _ON + _OFF if x)}; unset: on)")
    return v in _ON


def copy_name(csv_name: str) -> str:
    return Path(csv_name).stem + ".parquet"


def paths(run_dir: Path, csv_name: str) -> tuple[Path, Path]:
    """(copy, record) of the CSV csv_name of run_dir."""
    p = Path(run_dir) / copy_name(csv_name)
    return p, p.with_name(p.name + ".json")


def _csv_record(csv_path: Path) -> dict:
    n, lines, crc = digest(csv_path)
    return {"bytes": n, "lines": lines, "crc32": crc}


# A digest recorded for a file stands for the file without reading it again while the file keeps its
# identity (device, inode, size, modification and change times: what any write or utime changes) and
# the digest was taken at least RACY_NS after the file's last change (as git's index: a write in the
# same clock tick as the digest would not show in the times).
RACY_NS = 2_000_000_000


def _stat_fields(key: tuple) -> list:
    return list(key[1:])          # without the path: a moved campaign keeps its records


def _read_record(rec_path: Path, root) -> dict | None:
    try:
        rec = json.loads(safefs.safe_read_text(rec_path, root, limit=1 << 20))
    except (ValueError, OSError, MtError):
        return None
    return rec if isinstance(rec, dict) else None


def _prime(path: Path, dig: dict, stat_rec, read_at) -> None:
    """Seed io.integrity with a recorded digest when the file has kept its identity since (not racy)."""
    from mpitempo.io import integrity

    if not isinstance(dig, dict) or not isinstance(stat_rec, list) or not isinstance(read_at, int):
        return
    try:
        key = integrity._stat_key(path)
    except OSError:
        return
    if _stat_fields(key) != stat_rec or read_at < key[5] + RACY_NS:
        return
    integrity.remember(key, (dig.get("bytes"), dig.get("lines"), dig.get("crc32")), read_at)


def prime(run_dir: Path, csv_name: str, root=None) -> None:
    """Before a campaign's runs are verified: take the CSV's and the copy's recorded digests for the files
    that have not changed since they were recorded (see RACY_NS), so they are not read again."""
    copy, rec_path = paths(Path(run_dir), csv_name)
    try:
        if safefs.check_not_link(rec_path, root, want="file") is None:
            return
    except MtError:
        return        # check_copy refuses it with the reason
    rec = _read_record(rec_path, root)
    if not rec or rec.get("columnar_version") != COLUMNAR_VERSION:
        return
    _prime(Path(run_dir) / csv_name, rec.get("csv"), rec.get("csv_stat"), rec.get("csv_read_at_ns"))
    cp = rec.get("copy")
    if isinstance(cp, dict):
        _prime(copy, cp, rec.get("copy_stat"), rec.get("copy_read_at_ns"))


def _file_record(path: Path) -> tuple[dict, list, int]:
    from mpitempo.io import integrity

    (n, lines, crc), key, t0 = integrity.digest_info(path)
    return {"bytes": n, "lines": lines, "crc32": crc}, _stat_fields(key), t0


def check_copy(run_dir: Path, csv_name: str, root=None) -> tuple[Path | None, str]:
    """(the copy's path, "ok") when run_dir's copy of csv_name matches the CSV as it is now, else
    (None, why not: "missing", "stale", "damaged", ...). A copy or record that is a link (or any
    other non-regular or hard-linked file) is an UnsafePath error."""
    run_dir = Path(run_dir)
    copy, rec_path = paths(run_dir, csv_name)
    st_copy = safefs.check_not_link(copy, root, want="file")
    st_rec = safefs.check_not_link(rec_path, root, want="file")
    if st_copy is None or st_rec is None:
        return None, "missing"
    rec = _read_record(rec_path, root)
    if rec is None:
        return None, "unreadable record"
    if rec.get("columnar_version") != COLUMNAR_VERSION or rec.get("source") != csv_name:
        return None, "other version"
    from mpitempo.io.integrity import sparse_problem

    want = rec.get("copy") if isinstance(rec.get("copy"), dict) else {}
    if want.get("bytes") != st_copy.st_size or sparse_problem(copy, st_copy):
        # not read: a copy of another size than its record (a sparse 20 GB file) is not the copy
        return None, "damaged (its size does not match its record)"
    csv_dig, csv_stat, csv_t0 = _file_record(run_dir / csv_name)
    if rec.get("csv") != csv_dig:
        return None, "stale (the CSV changed)"
    copy_dig, copy_stat, copy_t0 = _file_record(copy)
    if rec.get("copy") != copy_dig:
        return None, "damaged (its digest does not match its record)"
    if (rec.get("csv_stat"), rec.get("csv_read_at_ns"), rec.get("copy_stat"), rec.get("copy_read_at_ns")) != \
            (csv_stat, csv_t0, copy_stat, copy_t0):
        # digests read again (racy or moved): record when, so that the next reader need not (best effort)
        rec.update(csv_stat=csv_stat, csv_read_at_ns=csv_t0, copy_stat=copy_stat, copy_read_at_ns=copy_t0)
        with contextlib.suppress(OSError, MtError):
            safefs.safe_write_text(rec_path, json.dumps(rec, indent=1) + "\n", root)
    return copy, "ok"


@dataclass
class Staged:
    """A copy written to a private temporary directory, not yet in place (commit or discard it)."""
    run_dir: Path
    csv_name: str
    tmpdir: Path
    path: Path           # the Parquet file inside tmpdir: readable now
    record: dict


def stage_copy(con, run_dir: Path, csv_name: str, select_sql: str, root=None) -> Staged | None:
    """Write run_dir's copy from ``select_sql`` (a query over the CSV giving the copy's columns) into a
    fresh private directory (mkdtemp: nothing can be planted in it) in the run directory. None when
    the run directory cannot be written (read-only) or the CSV cannot be read (the caller then reads
    the CSV and reports what is wrong with it)."""
    import duckdb

    run_dir = Path(run_dir)
    copy, _ = paths(run_dir, csv_name)
    safefs.check_not_link(run_dir, root, want="dir")
    csv_rec, csv_stat, csv_t0 = _file_record(run_dir / csv_name)   # before reading it: a CSV changed meanwhile gives a stale copy
    try:
        tmpdir = Path(tempfile.mkdtemp(prefix=".columnar-", dir=run_dir))
    except OSError as e:
        if e.errno in _UNWRITABLE:
            return None
        raise
    ok = False
    try:
        tmp = tmpdir / copy.name
        q = str(tmp).replace("'", "''")
        from mpitempo.kinds.base import glob_escape

        qr = glob_escape(tmp).replace("'", "''")   # read back as itself: DuckDB globs the names it reads
        try:
            con.execute(f"COPY ({select_sql}) TO '{q}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1048576)")
            groups = con.execute(f"""SELECT op, msize, nprocs, count(*), count(*) FILTER (WHERE valid::BOOLEAN)
                FROM read_parquet('{qr}') GROUP BY ALL ORDER BY op, msize, nprocs""").fetchall()
            checks = con.execute(f"""SELECT count(*), min(nprocs), max(nprocs),
                count(*) FILTER (WHERE runtime_s IS NULL OR isnan(runtime_s) OR isinf(runtime_s)),
                count(*) FILTER (WHERE runtime_s < 0), count(*) FILTER (WHERE msize < 0),
                count(*) FILTER (WHERE runtime_s > {MAX_RUNTIME_S:g} OR local_max_s > {MAX_RUNTIME_S:g}),
                count(*) FILTER (WHERE valid IS NULL OR valid NOT IN (0, 1)),
                count(*) FILTER (WHERE local_max_s IS NULL OR isnan(local_max_s) OR isinf(local_max_s)
                                 OR local_max_s < 0)
                FROM read_parquet('{qr}')""").fetchone()
        except duckdb.IOException as e:
            if any(w in str(e) for w in ("Permission denied", "Read-only file system", "No space left")):
                return None
            raise MtError(f"cannot write the columnar copy '{copy}': {str(e).splitlines()[0]}") from None
        except duckdb.Error:
            return None      # the CSV does not parse: the caller reads it and names the bad line
        if not stat.S_ISREG(os.lstat(tmp).st_mode):
            raise MtError(f"the columnar copy written to '{tmp}' is not a regular file")
        copy_rec, _, _ = _file_record(tmp)
        rows, np_min, np_max, nonfinite, negative, negative_msize, too_long, bad_valid, bad_local = checks
        rec = {"columnar_version": COLUMNAR_VERSION, "source": csv_name, "csv": csv_rec,
               "csv_stat": csv_stat, "csv_read_at_ns": csv_t0, "copy": copy_rec,
               "checks": {"rows": int(rows), "nprocs_min": np_min, "nprocs_max": np_max,
                          "nonfinite": int(nonfinite), "negative": int(negative),
                          "negative_msize": int(negative_msize), "too_long": int(too_long),
                          "bad_valid": int(bad_valid), "bad_local_max": int(bad_local)},
               "groups": [[g[0], g[1], g[2], int(g[3]), int(g[4])] for g in groups]}
        ok = True
        return Staged(run_dir, csv_name, tmpdir, tmp, rec)
    finally:
        if not ok:
            shutil.rmtree(tmpdir, ignore_errors=True)


def commit(staged: Staged, root=None) -> Path | None:
    """Put a staged copy in place (the copy first, then its record: a crash in between leaves a record
    that does not match, so the copy is rebuilt). None when the run directory turned out read-only."""
    copy, rec_path = paths(staged.run_dir, staged.csv_name)
    try:
        safefs.safe_rename(staged.path, copy, root)
        safefs.safe_write_text(rec_path, json.dumps(staged.record, indent=1) + "\n", root)
    except OSError as e:
        if e.errno in _UNWRITABLE + (errno.ENOSPC,):
            return None
        raise
    finally:
        discard(staged)
    return copy


def discard(staged: Staged) -> None:
    shutil.rmtree(staged.tmpdir, ignore_errors=True)


def groups(copy: Path) -> list | None:
    """The record's (op, msize, nprocs, rows, valid rows) of each experiment, in the copy's order."""
    rec = _read_record(Path(copy).with_name(Path(copy).name + ".json"), None) or {}
    g = rec.get("groups")
    if not isinstance(g, list) or not all(isinstance(x, list) and len(x) == 5 for x in g):
        return None
    return [tuple(x) for x in g]


def clean(run_dir: Path, csv_name: str, nprocs: int, root=None) -> bool:
    """The checks recorded when the copy was written say its rows are all usable measurements of a run
    of nprocs ranks (rows > 0, no missing/NaN/infinite, negative or too long runtime or local_max_s, no negative
    msize, valid 0 or 1, every row of nprocs ranks): the reader need not scan it for them again. A record
    without one of these counts (written by an older mpitempo) is not clean: its rows are checked again."""
    rec = _read_record(paths(Path(run_dir), csv_name)[1], root) or {}
    c = rec.get("checks")
    if not isinstance(c, dict):
        return False
    return (isinstance(c.get("rows"), int) and c["rows"] > 0 and c.get("nonfinite") == 0 and c.get("negative") == 0
            and c.get("negative_msize") == 0 and c.get("too_long") == 0 and c.get("bad_valid") == 0
            and c.get("bad_local_max") == 0
            and (nprocs <= 0 or c.get("nprocs_min") == c.get("nprocs_max") == nprocs))


LEFTOVER_S = 600


def _drop_leftovers(run_dir: Path) -> None:
    """Remove the private directories of copies that were never put in place (a reader killed while
    writing), once they are older than LEFTOVER_S (a reader writing one now is left alone)."""
    import time

    with contextlib.suppress(OSError):
        for e in os.scandir(run_dir):
            if e.name.startswith(".columnar-") and e.is_dir(follow_symlinks=False) \
                    and time.time() - e.stat(follow_symlinks=False).st_mtime > LEFTOVER_S:
                shutil.rmtree(e.path, ignore_errors=True)


def ensure_copies(con, run_dirs, csv_name: str, select_for, root=None) -> tuple[dict[Path, Path], dict[Path, Staged]]:
    """(run_dir -> its matching copy, run_dir -> a copy staged for it now); the runs in neither (read-only,
    unreadable CSV, MPITEMPO_COLUMNAR=off) are read from the CSV. ``select_for(csv_path)`` gives the
    query over one CSV that produces the copy's columns. The caller reads the staged copies, checks
    the rows, then commits them (or discards them when the campaign is refused: nothing is left)."""
    ready: dict[Path, Path] = {}
    staged: dict[Path, Staged] = {}
    if not enabled():
        return ready, staged
    try:
        for d in run_dirs:
            d = Path(d)
            _drop_leftovers(d)
            copy, _ = check_copy(d, csv_name, root)
            if copy is not None:
                ready[d] = copy
                continue
            s = stage_copy(con, d, csv_name, select_for(d / csv_name), root)
            if s is not None:
                staged[d] = s
    except BaseException:
        for s in staged.values():
            discard(s)
        raise
    return ready, staged


def remove_copy(run_dir: Path, csv_name: str, root=None) -> None:
    """Delete a run's copy and record (a copy DuckDB could not read back)."""
    for p in paths(run_dir, csv_name):
        safefs.check_not_link(p, root, want="file")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)
