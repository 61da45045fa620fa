"""Read campaign directories with DuckDB, straight from the files.

``open_campaign(dir)`` / ``open_campaigns([dir, ...])`` return a connection with
two relations:

* ``runs``: one row per complete mpirun: campaign, run_id, config, run_index,
  nprocs and the experimental factors of meta.json (library, timer, scheme,
  compiler, host, governor, cache_policy, clock_sync), start_time, file;
* ``meas``: every row of every measurements.csv, with campaign, run_id, config
  and run_index.

Incomplete runs (no meta.json) and failed runs are listed separately and are
never mixed into the measurements.

A persistent store (``ingest(db, dirs)``, `mpitempo ingest`) keeps the same two
tables plus ``campaigns`` in a DuckDB file that accumulates campaigns over time;
ingesting a campaign again replaces its rows (a resumed campaign gains its new
runs, nothing is counted twice). ``open_store(path)`` reads such a file back as
a CampaignData, so every analysis command also takes a ``.duckdb`` file.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from mpitempo.errors import MtError
from mpitempo.io.columnar import MAX_RUNTIME_S   # 1e9 s: a runtime above it is damage (defined once there)
from mpitempo.io.rundir import FACTORS, campaign_name as _campaign_name, check_root as _check_root, find_runs, load_meta

SCHEMA_VERSION = 3   # 2: runs.binding, runs.cflags; 3: runs."like" (the profile, --like), last

RUN_COLUMNS = (["run_no", "campaign", "run_id", "config", "run_index", "nprocs", "library", "timer", "scheme",
                "compiler", "host", "governor", "cache_policy", "clock_sync", "binding", "cflags", "start_time",
                "file", "like"])
FILE = RUN_COLUMNS.index("file")   # of a runs row
RUNS_DDL = ("CREATE TABLE IF NOT EXISTS runs (run_no INTEGER, campaign VARCHAR, run_id VARCHAR, config VARCHAR, "
            "run_index INTEGER, nprocs INTEGER, library VARCHAR, timer VARCHAR, scheme VARCHAR, "
            "compiler VARCHAR, host VARCHAR, governor VARCHAR, cache_policy VARCHAR, clock_sync VARCHAR, "
            "binding VARCHAR, cflags VARCHAR, start_time VARCHAR, file VARCHAR, \"like\" VARCHAR)")
# the measurements themselves, keyed by the small integer run_no (memory: ~45 bytes per row)
MEAS_RAW_DDL = ("CREATE TABLE IF NOT EXISTS meas_raw (run_no INTEGER, op VARCHAR, msize BIGINT, nprocs INTEGER, "
                "scheme VARCHAR, exp INTEGER, rep INTEGER, runtime_s DOUBLE, valid BOOLEAN, local_max_s DOUBLE)")
MEAS_VIEW = """CREATE OR REPLACE VIEW meas AS
    SELECT r.campaign, r.run_id, r.config, r.run_index, m.run_no, m.op, m.msize, m.nprocs, m.scheme, m.exp,
           m.rep, m.runtime_s, m.valid, m.local_max_s
    FROM {src}meas_raw m JOIN {src}runs r USING (run_no)"""
CAMPAIGNS_DDL = ("CREATE TABLE IF NOT EXISTS campaigns (campaign VARCHAR, path VARCHAR, name VARCHAR, "
                 "ingested_at VARCHAR, runs INTEGER, failed INTEGER, incomplete INTEGER, measurements BIGINT)")


LOCK_WAIT_S = 120.0     # DuckDB: how long an ingest waits for another process to release the file (a reader: a quarter)

def connect(path: str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(path or ":memory:", read_only=read_only)
    con.execute("SET enable_progress_bar = false")   # it would write to stdout
    return con


@dataclass
class CampaignData:
    con: duckdb.DuckDBPyConnection
    root: Path
    metas: dict[str, dict]                       # run_id -> meta.json (first campaign wins on a clash)
    failed: list[dict] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)   # campaign label of each root


def _load_one(con: duckdb.DuckDBPyConnection, root: Path, label: str, lazy: bool = False):
    """Append one campaign to runs and meas_raw (new run_no values). Returns (metas, failed, incomplete).

    Runs with a columnar copy (io.columnar) are read from it, the others from their CSV. With
    ``lazy`` (open_campaigns) the copies are not loaded: meas_raw becomes a view that scans them
    at each query (out of core), and only CSV rows are held in memory (table meas_csv)."""
    from mpitempo import kinds

    _check_root(root)
    kind = kinds.of_campaign(root)
    if not kind.has_measurements:
        raise MtError(f"'{root}' is a campaign of kind '{kind.name}', which has no measurement table; "
                      f"see `mpitempo summary {root}`")
    use_copies = getattr(kind, "columnar", False)
    if use_copies:
        from mpitempo.io import columnar

        use_copies = columnar.enabled()
    if use_copies:   # digests recorded with the copies of files unchanged since: not read again
        for d in sorted(p for p in (root / "runs").iterdir() if p.is_dir()):
            columnar.prime(d, kind.data_files[0], root)
    complete, failed, incomplete = find_runs(root, kind)
    if not complete:
        extra = f" ({len(failed)} failed, {len(incomplete)} incomplete)" if failed or incomplete else ""
        raise MtError(f"campaign '{root}' has no complete runs{extra}")
    for d in complete:   # a kind whose files the query cannot check itself (tree: by position)
        kind.check_run_files(d, root)
    metas: dict[str, dict] = {}
    rows = []
    first = int(con.execute("SELECT coalesce(max(run_no) + 1, 0) FROM runs").fetchone()[0])
    for d in complete:
        meta = load_meta(d / "meta.json")
        metas[d.name] = meta
        f = FACTORS
        rows.append((first + len(rows), label, d.name, f["config"](meta), _int(meta.get("run_index", 0)),
                     f["nprocs"](meta), f["library"](meta), f["timer"](meta), f["scheme"](meta), f["compiler"](meta),
                     f["host"](meta), f["governor"](meta), f["cache_policy"](meta), f["clock_sync"](meta),
                     f["binding"](meta), f["cflags"](meta), str(meta.get("start_time", "") or ""), str((d / kind.data_files[0]).resolve()),
                     f["like"](meta)))
    con.execute("CREATE OR REPLACE TEMP TABLE _new_runs AS SELECT * FROM runs LIMIT 0")
    con.executemany(f"INSERT INTO _new_runs VALUES ({', '.join('?' * len(RUN_COLUMNS))})", rows)
    ready, staged = {}, {}
    if use_copies:
        ready, staged = columnar.ensure_copies(con, complete, kind.data_files[0], kind.csv_select, root)
    try:
        cols = getattr(kind, "csv_columns", None)
        if cols:   # DuckDB takes the columns by position: a header of other or reordered columns is refused
            from mpitempo.io.integrity import csv_header_problem

            for d in complete:
                bad = csv_header_problem(d / kind.data_files[0], cols)   # one line per run: cheap
                if bad:
                    raise MtError(f"cannot read measurements of '{root}': {bad}")
        copies = {**ready, **{d: s.path for d, s in staged.items()}}
        by_dir = dict(zip(complete, rows))
        pq = [(by_dir[d][0], p) for d, p in copies.items()]
        from_csv = [r for d, r in by_dir.items() if d not in copies]
        table = "meas_csv" if lazy else "meas_raw"
        if from_csv:
            _insert_csv(con, kind, root, from_csv, metas, table)
        if pq and lazy:
            con.executemany("INSERT INTO _mt_copies VALUES (?, ?)", [(n, str(p)) for n, p in pq])
            _lazy_view(con)
        elif pq:
            try:
                con.execute(f"INSERT INTO meas_raw {_copies_sql(pq)}")
            except duckdb.Error:   # a copy that matches its record but does not read back: rebuild from the CSV
                con.execute("DELETE FROM meas_raw WHERE run_no >= ?", [first])
                for d in ready:
                    columnar.remove_copy(d, kind.data_files[0], root)
                _insert_csv(con, kind, root, rows, metas, table)
        checked = [by_dir[d][0] for d in ready if columnar.clean(d, kind.data_files[0], by_dir[d][5], root)]
        _check_loaded(con, root, first, table, skip=checked, kind=kind)
        for d, s in staged.items():   # the rows are good: put the new copies in place
            final = columnar.commit(s, root)
            if lazy:
                if final is None:   # could not be put in place after all: read the CSV
                    con.execute("DELETE FROM _mt_copies WHERE run_no = ?", [by_dir[d][0]])
                    _insert_csv(con, kind, root, [by_dir[d]], metas, table)
                else:
                    con.execute("UPDATE _mt_copies SET path = ? WHERE run_no = ?", [str(final), by_dir[d][0]])
        if staged and lazy:
            _lazy_view(con)
    finally:
        for s in staged.values():
            columnar.discard(s)
    con.execute("INSERT INTO runs SELECT * FROM _new_runs")
    nmeas = con.execute("SELECT count(*) FROM meas_raw WHERE run_no >= ?", [first]).fetchone()[0]
    con.execute("DROP TABLE _new_runs")
    return metas, failed, incomplete, len(rows), int(nmeas)


# valid is 0 or 1 in every data file; any other value (2, -1, missing) becomes NULL, which _check_loaded
# refuses (a cast alone would read 2 as true)
VALID_SQL = "CASE WHEN {v} IN (0, 1) THEN {v}::BOOLEAN END"
MEAS_COLS = f"op, msize, nprocs, scheme, exp, rep, runtime_s, {VALID_SQL.format(v='valid')} AS valid, local_max_s"
# No measurement lasts longer than this: the largest duration mpitempo accepts (docs/reliability.md), far
# more than any mpirun's timeout. A runtime above it is damage, not a slow run.


def _copies_sql(pq: list[tuple[int, Path]]) -> str:
    """The rows of meas_raw from columnar copies ((run_no, path) pairs), one scan per copy."""
    from mpitempo.kinds.base import sql_path

    return " UNION ALL ".join(f"SELECT {int(n)}::INTEGER AS run_no, {MEAS_COLS} FROM read_parquet({sql_path(p)})"
                              for n, p in pq)


def _lazy_view(con) -> None:
    pq = con.execute("SELECT run_no, path FROM _mt_copies ORDER BY run_no").fetchall()
    src = "SELECT * FROM meas_csv" + (f" UNION ALL {_copies_sql(pq)}" if pq else "")
    con.execute(f"CREATE OR REPLACE VIEW meas_raw AS {src}")


def _insert_csv(con, kind, root: Path, rows: list, metas: dict, table: str) -> None:
    source = kind.meas_sql([(r[FILE], metas[r[2]]) for r in rows])
    try:
        con.execute(f"""INSERT INTO {table}
            SELECT r.run_no, m.op, m.msize, m.nprocs, m.scheme, m.exp, m.rep, m.runtime_s,
                   {VALID_SQL.format(v="m.valid")}, m.local_max_s
            FROM ({source}) m
            JOIN _new_runs r ON r.file = m.filename""")
    except duckdb.Error as e:
        where = None
        cols = getattr(kind, "csv_columns", None)
        if cols:
            from mpitempo.io.integrity import first_bad_csv_line

            where = next(filter(None, (first_bad_csv_line(Path(r[FILE]), cols) for r in rows)), None)
        if where is None:   # name the file DuckDB cannot read, at least (one file at a time: the error path only)
            for r in rows:
                try:
                    con.execute(f"SELECT count(*) FROM ({kind.meas_sql([(r[FILE], metas[r[2]])])})").fetchone()
                except duckdb.Error as e1:
                    where = f"'{r[FILE]}' is not a data file of this format ({str(e1).splitlines()[0][:200]})"
                    break
        raise MtError(f"cannot read measurements of '{root}': "
                      f"{where or str(e).splitlines()[0]}") from None


def _int(v) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


# The checks of every row (_check_loaded), each: (what it counts as a DuckDB condition over m (the rows)
# and r (the run), what the message says of the rows it counts, the Python test of one CSV row (a dict of
# the columns as read: None for an empty field) that finds the first such line for the message).
def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _bad_float(v) -> bool:
    import math

    x = _num(v)
    return x is None or not math.isfinite(x)


ROW_CHECKS = (
    ("r.nprocs > 0 AND m.nprocs <> r.nprocs", None, None),   # message of its own (the count seen and meta.json's)
    ("m.runtime_s IS NULL OR isnan(m.runtime_s) OR isinf(m.runtime_s)", "a missing, NaN or infinite runtime_s",
     lambda row: _bad_float(row.get("runtime_s"))),
    ("m.runtime_s < 0", "a negative runtime_s", lambda row: (_num(row.get("runtime_s")) or 0) < 0),
    (f"m.runtime_s > {MAX_RUNTIME_S:g}", "a runtime_s above 1e9 s (longer than any mpirun may last)",
     lambda row: (_num(row.get("runtime_s")) or 0) > MAX_RUNTIME_S),
    ("m.msize < 0", "a negative msize", lambda row: (_num(row.get("msize")) or 0) < 0),
    ("m.valid IS NULL", "a valid other than 0 or 1",
     lambda row: (row.get("valid") or "").strip() not in ("0", "1")),
    ("m.local_max_s IS NULL OR isnan(m.local_max_s) OR isinf(m.local_max_s)",
     "a missing, NaN or infinite local_max_s", lambda row: _bad_float(row.get("local_max_s"))),
    ("m.local_max_s < 0", "a negative local_max_s", lambda row: (_num(row.get("local_max_s")) or 0) < 0),
    (f"m.local_max_s > {MAX_RUNTIME_S:g}", "a local_max_s above 1e9 s (longer than any mpirun may last)",
     lambda row: (_num(row.get("local_max_s")) or 0) > MAX_RUNTIME_S),
)


def _first_line(path: Path, test) -> int | None:
    """The line number of the first row of CSV path for which test(row) holds (for a message only: this
    reads the file row by row, and runs only when a run is refused)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as f:
            for no, row in enumerate(csv.DictReader(f), 2):
                if test({k: (v if v != "" else None) for k, v in row.items()}):
                    return no
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


def _check_loaded(con, root: Path, first: int, table: str = "meas_raw", skip=(), kind=None) -> None:
    """Refuse rows that cannot be measurements of the run they are in: a process count other than the
    run's (meta.json nprocs), NaN, infinite, negative or impossibly long (> MAX_RUNTIME_S) runtimes and
    local_max_s, negative message sizes, a valid other than 0 or 1, a run without any row (ROW_CHECKS;
    one vectorised query). The message names the run and, for a CSV of the kind's columns, the file
    and line of the first such row. The runs in skip (run_no) were checked when their columnar copy
    was written (io.columnar.clean)."""
    skip = ", ".join(str(int(n)) for n in skip) or "-1"
    counts = ", ".join(f"count(*) FILTER (WHERE {cond})" for cond, _, _ in ROW_CHECKS)
    any_bad = " OR ".join(f"count(*) FILTER (WHERE {cond}) > 0" for cond, _, _ in ROW_CHECKS)
    bad = con.execute(f"""
        SELECT r.run_id, any_value(r.file), count(m.run_no), {counts},
               min(m.nprocs) FILTER (WHERE (r.nprocs > 0 AND m.nprocs <> r.nprocs)), any_value(r.nprocs)
        FROM (SELECT * FROM _new_runs WHERE run_no NOT IN ({skip})) r
        LEFT JOIN (SELECT * FROM meas_raw WHERE run_no >= ? AND run_no NOT IN ({skip})) m ON m.run_no = r.run_no
        GROUP BY r.run_id
        HAVING count(m.run_no) = 0 OR {any_bad}
        ORDER BY r.run_id LIMIT 1""", [first]).fetchone()
    if not bad:
        return
    run_id, file, n, *found, np_seen, np_meta = bad
    if n == 0:
        what = "its data file has no measurement rows (header only?)"
    else:
        i = next(k for k, c in enumerate(found) if c)
        _, said, test = ROW_CHECKS[i]
        if i == 0:
            what = f"{found[0]} row(s) have nprocs {np_seen}, but its meta.json says {np_meta}"
            test = lambda row: row.get("nprocs") is not None and _num(row["nprocs"]) != np_meta   # noqa: E731
        else:
            what = f"{found[i]} row(s) have {said}"
        line = _first_line(Path(file), test) if getattr(kind, "csv_columns", None) and Path(file).name.endswith(".csv") \
            else None
        if line is not None:
            try:
                shown = Path(file).relative_to(Path(root).resolve())
            except ValueError:
                shown = Path(file)
            what += f" (the first: {Path(root) / shown}:{line})"
    con.execute(f"DELETE FROM {table} WHERE run_no >= ?", [first])
    raise MtError(f"run '{run_id}' of '{root}' is damaged: {what}; refusing to use it "
                  f"(rerun it with: mpitempo run --resume {root})")


def _labels(roots: list[Path]) -> list[str]:
    names = [r.name or str(r) for r in roots]
    if len(set(names)) == len(names):
        return names
    return [str(r) for r in roots]


def open_campaigns(roots, con: duckdb.DuckDBPyConnection | None = None) -> CampaignData:
    """Load one or more campaign directories (or one .duckdb store) into an in-memory DuckDB."""
    roots = [Path(r) for r in roots]
    if len(roots) == 1 and roots[0].is_file():
        return open_store(roots[0])
    for r in roots:
        if r.is_file():
            raise MtError(f"'{r}' is a file: give campaign directories, or one .duckdb store alone")
    seen: dict[Path, Path] = {}
    for r in roots:
        key = r.resolve()
        if key in seen:
            also = f" (as '{seen[key]}' and '{r}')" if str(seen[key]) != str(r) else ""
            raise MtError(f"campaign '{r}' is given twice{also}: its runs would be counted twice")
        seen[key] = r
    labels = _labels(roots)
    if con is not None:     # a fresh connection has no cached fences to forget
        from mpitempo.analysis.filtering import drop_fences

        drop_fences(con)
    con = con or connect()
    con.execute("DROP VIEW IF EXISTS meas")
    con.execute("DROP TABLE IF EXISTS runs")
    for name, typ in con.execute("SELECT table_name, table_type FROM information_schema.tables WHERE table_name IN "
                                 "('meas_raw', 'meas_csv', '_mt_copies')").fetchall():
        con.execute(f"DROP {'VIEW' if typ == 'VIEW' else 'TABLE'} IF EXISTS {name}")
    con.execute(RUNS_DDL)
    # the CSV rows in memory (meas_csv), the columnar copies scanned at each query (out of core)
    con.execute(MEAS_RAW_DDL.replace("meas_raw", "meas_csv"))
    con.execute("CREATE TEMP TABLE _mt_copies (run_no INTEGER, path VARCHAR)")
    _lazy_view(con)
    con.execute(MEAS_VIEW.format(src=""))
    all_metas: dict[str, dict] = {}
    failed_all, incomplete_all = [], []
    for root, label in zip(roots, labels):
        try:
            metas, failed, incomplete, _, _ = _load_one(con, root, label, lazy=True)
        except MtError:
            con.execute("DROP TABLE IF EXISTS _new_runs")
            raise
        for k, v in metas.items():
            all_metas.setdefault(k, v)
        pre = f"{label}/" if len(roots) > 1 else ""
        failed_all += [dict(f, run_id=pre + str(f.get("run_id", "?"))) for f in failed]
        incomplete_all += [pre + i for i in incomplete]
    return CampaignData(con=con, root=roots[0], metas=all_metas, failed=failed_all,
                        incomplete=incomplete_all, roots=roots, labels=labels)


def open_campaign(root: str | Path, con: duckdb.DuckDBPyConnection | None = None) -> CampaignData:
    return open_campaigns([root], con)


# -- persistent store ------------------------------------------------------------------------------

def _store_con(db: Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A writer waits (LOCK_WAIT_S) while another process writes the file: concurrent
    ingests from several hosts take turns."""
    import time


    deadline = time.monotonic() + (LOCK_WAIT_S / 4 if read_only else LOCK_WAIT_S)
    while True:
        try:
            return connect(str(db), read_only=read_only)
        except duckdb.Error as e:
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            if ("Could not set lock" in text or "Conflicting lock" in text) and time.monotonic() < deadline:
                time.sleep(0.05 + 0.2 * (time.monotonic() % 1))   # another ingest writes it
                continue
            _store_error(db, e)


def _store_error(db: Path, e: Exception):
    import re

    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    if "not a valid DuckDB database file" in text:
        why = "it is not a DuckDB database file (a store is made by `mpitempo ingest`)"
    elif "Could not set lock" in text or "Conflicting lock" in text:
        why = "another process has it open for writing"
    else:   # without DuckDB's "IO Error:" and the path it repeats
        why = re.sub(r'^[A-Za-z ]*Error: ', "", text).replace(f'"{Path(db).resolve()}"', "").replace(" : ", ": ")
    raise MtError(f"cannot open store '{db}': {why}") from None


def ingest(db: str | Path, roots) -> list[dict]:
    """Add campaign directories to a persistent DuckDB store; re-ingesting replaces a campaign's rows.

    Returns one record per campaign: campaign (label), path, name, ingested_at, runs, failed,
    incomplete, measurements, replaced (True when the campaign was there before)."""
    db = Path(db)
    con = _store_con(db)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS mt_schema (version INTEGER)")
        got = con.execute("SELECT max(version) FROM mt_schema").fetchone()[0]
        if got is None:
            con.execute("INSERT INTO mt_schema VALUES (?)", [SCHEMA_VERSION])
        elif got == 2:   # runs of version 2 had no profile
            con.execute("ALTER TABLE runs ADD COLUMN \"like\" VARCHAR DEFAULT 'none'")
            con.execute("UPDATE mt_schema SET version = ?", [SCHEMA_VERSION])
        elif got != SCHEMA_VERSION:
            raise MtError(f"store '{db}' has schema version {got}, this mpitempo writes {SCHEMA_VERSION}")
        for ddl in (RUNS_DDL, MEAS_RAW_DDL, CAMPAIGNS_DDL, MEAS_VIEW.format(src="")):
            con.execute(ddl)
        out = []
        for root in [Path(r) for r in roots]:
            path = str(root.resolve())
            known = dict(con.execute("SELECT path, campaign FROM campaigns").fetchall())
            label = known.get(path)
            replaced = label is not None
            if label is None:
                label = root.resolve().name
                if label in known.values():
                    label = f"{label}#{hashlib.sha1(path.encode()).hexdigest()[:6]}"
            _check_root(root)
            before = con.execute("SELECT ingested_at FROM campaigns WHERE campaign = ?", [label]).fetchone()
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute("DELETE FROM meas_raw WHERE run_no IN (SELECT run_no FROM runs WHERE campaign = ?)",
                            [label])
                for t in ("runs", "campaigns"):
                    con.execute(f"DELETE FROM {t} WHERE campaign = ?", [label])
                _, failed, incomplete, nruns, nmeas = _load_one(con, root, label)
                rec = {"campaign": label, "path": path, "name": _campaign_name(root),
                       "ingested_at": before[0] if before else datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "runs": nruns, "failed": len(failed), "incomplete": len(incomplete), "measurements": nmeas}
                con.execute("INSERT INTO campaigns VALUES (?, ?, ?, ?, ?, ?, ?, ?)", list(rec.values()))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            out.append(dict(rec, replaced=replaced))
        return out
    finally:
        con.close()


def open_store(db: str | Path) -> CampaignData:
    """Read a persistent store (attached read-only) as a CampaignData."""
    db = Path(db)
    try:
        src = _store_con(db, read_only=True)
    except MtError:
        raise MtError(f"'{db}' is neither a campaign directory nor an mpitempo store") from None
    tables = {r[0] for r in src.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    cols = {r[0] for r in src.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'runs'").fetchall()}
    src.close()
    if not {"runs", "meas_raw", "campaigns"} <= tables:
        raise MtError(f"'{db}' is not an mpitempo store (made by `mpitempo ingest`)")
    con = connect()
    path = str(db.resolve()).replace("'", "''")
    con.execute(f"ATTACH '{path}' AS store (READ_ONLY)")
    # a store of schema 2 (not ingested into since) has no profile column: its runs had none
    con.execute("CREATE VIEW runs AS SELECT *" + ("" if "like" in cols else ", 'none' AS \"like\"") + " FROM store.runs")
    con.execute(MEAS_VIEW.format(src="store."))
    camps = con.execute("SELECT campaign, path FROM store.campaigns ORDER BY ingested_at, campaign").fetchall()
    if not camps:
        raise MtError(f"store '{db}' holds no campaigns")
    return CampaignData(con=con, root=db, metas={}, roots=[Path(p) for _, p in camps],
                        labels=[c for c, _ in camps])


def export_parquet(data: CampaignData, out: str | Path) -> dict:
    """Write meas and runs as Parquet files into directory OUT (measurements.parquet, runs.parquet)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise MtError(f"'{out}' exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    res = {}
    for table, name in (("meas", "measurements.parquet"), ("runs", "runs.parquet")):
        # into a new temporary file (mkstemp: never a planted link), renamed over the file: a link
        # named like the output is replaced, not written through; a failure leaves no half file
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out)
        os.close(fd)
        try:
            p = str(Path(tmp).resolve()).replace("'", "''")
            data.con.execute(f"COPY (SELECT * FROM {table}) TO '{p}' (FORMAT parquet, COMPRESSION zstd)")
            os.chmod(tmp, 0o644)
            os.replace(tmp, out / name)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, duckdb.IOException):
                raise MtError(f"cannot write --parquet '{out / name}': {str(e).splitlines()[0]}") from None
            raise
        res[name] = int(data.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    return res


def summarize(data: CampaignData, filt=None, per_run: list[dict] | None = None) -> list[dict]:
    """Per (campaign, config, op, msize, nprocs): the distribution of per-run medians.

    ``filt`` is an outlier filter (stats.outliers.Filter); None keeps every valid measurement.
    Keys: campaign, config, op, msize, nprocs, runs, runs_without_valid, measurements (valid),
    invalid, outliers, median_s, mean_s, min_s, max_s (of the run medians), spread_pct."""
    import numpy as np

    from mpitempo.analysis.perrun import per_run_table

    per_run = per_run if per_run is not None else per_run_table(data.con, filt)
    groups: dict[tuple, list[dict]] = {}
    for r in per_run:
        groups.setdefault((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r)
    out = []
    for key in sorted(groups):
        rs = groups[key]
        meds = np.array([r["median_s"] for r in rs if r["n"] > 0], dtype=float)
        r = dict(zip(("campaign", "config", "op", "msize", "nprocs"), key))
        r.update(runs=int(meds.size), runs_without_valid=sum(1 for x in rs if x["n"] == 0),
                 measurements=sum(x["n"] + x["outliers"] for x in rs), invalid=sum(x["invalid"] for x in rs),
                 outliers=sum(x["outliers"] for x in rs))
        if meds.size:
            r.update(median_s=float(np.median(meds)), mean_s=float(meds.mean()), min_s=float(meds.min()),
                     max_s=float(meds.max()))
        else:
            r.update(median_s=None, mean_s=None, min_s=None, max_s=None)
        med = r["median_s"]
        r["spread_pct"] = (100.0 * (r["max_s"] - r["min_s"]) / med) if med else None
        out.append(r)
    return out
