"""The history store: one entry per campaign (identified by its digest) and its per-mpirun medians, in a
DuckDB file (the default, embedded) or a PostgreSQL database (``postgresql://...``, for a centre whose
machines all write to one server). Both hold the same tables (docs/history.md, "Schema") and are read by
the same queries; only the placeholders and the connection differ.

* ``hist_entries``: digest (primary key), name, path, machine, started_at (the first mpirun's start,
  ISO 8601 UTC), ingested_at, host (where it was ingested from), runs, flagged_runs, factors (JSON: library,
  library_version, compiler, cflags, build_type, mpitempo_version, kernel, cpu_model, hosts, partition, ...).
* ``hist_points``: per (digest, config, op, msize, nprocs, run_id): the mpirun's median runtime
  (after the outlier filter of `summary`), its number of measurements, and its flags (comma-separated:
  why the run's number is not the machine's usual state; empty when none).

Ingest is idempotent: a campaign whose digest is already stored is one entry (nothing written again).
Concurrent ingests are safe: PostgreSQL serialises them on the entry's primary key (a second ingest of
the same digest waits for the first to commit, then finds it) and on an advisory lock for the schema;
DuckDB lets one process write the file at a time, and an ingest that finds it locked waits and retries.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import re
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from mpitempo.errors import MtError

HISTORY_SCHEMA = 1
ENTRY_COLUMNS = ("digest", "name", "path", "machine", "started_at", "ingested_at", "host", "runs",
                 "flagged_runs", "factors")
POINT_COLUMNS = ("digest", "machine", "config", "op", "msize", "nprocs", "run_id", "run_index", "started_at",
                 "median_s", "n", "flags")
DDL = (
    "CREATE TABLE IF NOT EXISTS hist_schema (version INTEGER)",
    "CREATE TABLE IF NOT EXISTS hist_entries (digest VARCHAR PRIMARY KEY, name VARCHAR, path VARCHAR, "
    "machine VARCHAR, started_at VARCHAR, ingested_at VARCHAR, host VARCHAR, runs INTEGER, "
    "flagged_runs INTEGER, factors VARCHAR)",
    "CREATE TABLE IF NOT EXISTS hist_points (digest VARCHAR, machine VARCHAR, config VARCHAR, op VARCHAR, "
    "msize BIGINT, nprocs INTEGER, run_id VARCHAR, run_index INTEGER, started_at VARCHAR, "
    "median_s DOUBLE PRECISION, n BIGINT, flags VARCHAR, "
    "PRIMARY KEY (digest, config, op, msize, nprocs, run_id))",
)
from mpitempo.analysis.store import LOCK_WAIT_S  # noqa: E402  (one value for both stores)
_PG_URL = re.compile(r"^postgres(ql)?://")


def is_postgres(db: str) -> bool:
    return bool(_PG_URL.match(str(db)))


def check_db(db: str, must_exist: bool) -> None:
    """Refuse a --db that cannot be a store before anything is read or written: a URL of another
    scheme, a PostgreSQL URL without a database, a missing DuckDB file (must_exist)."""
    s = str(db)
    if "://" in s and not is_postgres(s):
        raise MtError(f"invalid --db '{s}': give a DuckDB file or a postgresql://[user@]host[:port]/dbname URL")
    if is_postgres(s):
        from urllib.parse import urlsplit

        try:
            u = urlsplit(s)
            u.port
        except ValueError as e:
            raise MtError(f"invalid --db '{_hide_password(s)}': {e}") from None
        if not u.path.strip("/"):
            raise MtError(f"invalid --db '{_hide_password(s)}': name the database "
                          "(postgresql://[user@]host[:port]/dbname)")
        return
    if must_exist and not Path(s).is_file():
        raise MtError(f"store '{s}' not found (make one with `mpitempo ingest DIR... --db {s}`)")


def _hide_password(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def parse_date(flag: str, given: str | None) -> str | None:
    """A date option (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[+zone], UTC when no zone) as the store's sortable
    UTC text; a one-line MtError naming the value otherwise."""
    if given is None:
        return None
    try:
        t = datetime.fromisoformat(given.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MtError(f"invalid {flag} '{given}': give a date YYYY-MM-DD (or YYYY-MM-DDTHH:MM:SS, UTC)") from None
    return _iso(t.isoformat())


@dataclass
class Backend:
    """A connection to a history store with DB-API cursors; queries use '?' placeholders."""
    con: object
    kind: str       # duckdb | postgresql
    where: str

    def sql(self, q: str) -> str:
        return q.replace("?", "%s") if self.kind == "postgresql" else q

    def execute(self, q: str, params=()):
        if self.kind == "duckdb":
            return self.con.execute(q, list(params))
        cur = self.con.cursor()
        cur.execute(self.sql(q), tuple(params))
        return cur

    def executemany(self, q: str, rows):
        if self.kind == "duckdb":
            return self.con.executemany(q, [list(r) for r in rows])
        with self.con.cursor() as cur:
            cur.executemany(self.sql(q), [tuple(r) for r in rows])

    def close(self):
        self.con.close()


def _pg_connect(db: str):
    try:
        import psycopg
    except ImportError:
        raise MtError("a PostgreSQL store needs the psycopg driver: pip install 'mpitempo[postgresql]' "
                      "(or pip install 'psycopg[binary]')") from None
    try:
        return psycopg.connect(db, connect_timeout=10)
    except psycopg.Error as e:
        text = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        raise MtError(f"cannot connect to --db '{_hide_password(db)}': {text}") from None


def _duck_connect(db: str, read_only: bool):
    import duckdb

    deadline = time.monotonic() + (LOCK_WAIT_S / 4 if read_only else LOCK_WAIT_S)
    while True:
        try:
            con = duckdb.connect(db, read_only=read_only)
            con.execute("SET enable_progress_bar = false")
            return con
        except duckdb.Error as e:
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            if ("Could not set lock" in text or "Conflicting lock" in text) and time.monotonic() < deadline:
                time.sleep(0.05 + random.random() * 0.2)   # another ingest writes it: wait for it
                continue
            if "not a valid DuckDB database file" in text:
                raise MtError(f"cannot open store '{db}': it is not a DuckDB database file") from None
            if "Could not set lock" in text or "Conflicting lock" in text:
                raise MtError(f"cannot open store '{db}': another process has it open for writing") from None
            raise MtError(f"cannot open store '{db}': {re.sub(r'^[A-Za-z ]*Error: ', '', text)}") from None


def connect(db: str, read_only: bool = False) -> Backend:
    check_db(db, must_exist=read_only)
    if is_postgres(db):
        return Backend(_pg_connect(db), "postgresql", _hide_password(db))
    return Backend(_duck_connect(str(db), read_only), "duckdb", str(db))


def ensure_schema(b: Backend) -> None:
    if b.kind == "postgresql":
        with b.con.transaction():
            b.execute("SELECT pg_advisory_xact_lock(727274)")   # concurrent first ingests: one creates the tables
            _schema(b)
    else:
        _schema(b)


def _schema(b: Backend) -> None:
    for ddl in DDL:
        b.execute(ddl)
    got = b.execute("SELECT max(version) FROM hist_schema").fetchone()[0]
    if got is None:
        b.execute("INSERT INTO hist_schema VALUES (?)", [HISTORY_SCHEMA])
    elif got != HISTORY_SCHEMA:
        raise MtError(f"store '{b.where}' has history schema version {got}, this mpitempo reads {HISTORY_SCHEMA}")


def has_history(b: Backend) -> bool:
    q = "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('hist_entries', 'hist_points')"
    return int(b.execute(q).fetchone()[0]) == 2


# -- what one campaign contributes -------------------------------------------------------------------

def campaign_digest(root: Path, complete: list[Path], data_file: str) -> str:
    """sha256 over the complete runs' names, meta.json bytes and data file digests: the same campaign
    (wherever it is, however often ingested) has the same digest; a resumed campaign with more runs has
    another."""
    from mpitempo.io.integrity import digest

    h = hashlib.sha256()
    for d in sorted(complete, key=lambda p: p.name):
        h.update(d.name.encode() + b"\0")
        h.update(hashlib.sha256((d / "meta.json").read_bytes()).digest())
        h.update(repr(digest(d / data_file)).encode() + b"\0")
    return h.hexdigest()


def _get(m, *path):
    for p in path:
        if not isinstance(m, dict):
            return None
        m = m.get(p)
    return m


def entry_factors(metas: list[dict]) -> dict:
    """The factors of an entry, from the meta.json of its runs (the first run that has each)."""
    from mpitempo.io.rundir import FACTORS

    def first(fn):
        for m in metas:
            v = fn(m)
            if v not in (None, ""):
                return v if isinstance(v, (str, int, float, bool)) else str(v)
        return None

    env = lambda m, k: _get(m, "environment", k) or _get(m, "launch", "env", k)   # noqa: E731
    return {
        "library": first(FACTORS["library"]),
        "library_version": first(lambda m: (str(_get(m, "mpi", "library_version") or "").strip() or None)),
        "compiler": first(FACTORS["compiler"]),
        "cflags": first(FACTORS["cflags"]),
        "build_type": first(lambda m: _get(m, "build", "build_type")),
        "mpitempo_version": first(lambda m: _get(m, "build", "mpitempo_version")),
        "kernel": first(lambda m: _get(m, "machine", "kernel")),
        "cpu_model": first(lambda m: _get(m, "machine", "cpu_model")),
        "governor": first(FACTORS["governor"]),
        "hosts": ",".join(sorted({h for m in metas for h in FACTORS["host"](m).split(",") if h})) or None,
        "partition": first(lambda m: env(m, "SLURM_JOB_PARTITION") or _get(m, "launch", "partition")),
        "timer": first(FACTORS["timer"]),
        "scheme": first(FACTORS["scheme"]),
        "clock_sync": first(FACTORS["clock_sync"]),
        "binding": first(FACTORS["binding"]),
        "operation_params": first(lambda m: json.dumps(m["operation_params"], sort_keys=True, separators=(",", ":"))
                                  if isinstance(m.get("operation_params"), dict) else None),
        "mpi_env": first(lambda m: json.dumps(_get(m, "launch", "launcher", "env_added"), sort_keys=True,
                                              separators=(",", ":")) if _get(m, "launch", "launcher", "env_added") else None),
    }


def run_flags(per_run: list[dict], metas_by_run: dict) -> dict:
    """(config, op, msize, nprocs, run_id) -> [flags of that run's number]: the run facts of flags.run_facts
    that make a timing not the machine's usual state (oversubscribed, shared_cpu, simulated, clock sync
    off) and outlier_runs (>= 3x off its siblings, analysis.flags.group_flags)."""
    from mpitempo.analysis.flags import SYNC_ACCURACY_S, group_flags, run_facts

    facts = {rid: run_facts(m) for rid, m in metas_by_run.items()}
    out: dict = {}
    groups: dict = {}
    for r in per_run:
        groups.setdefault((r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r)
    for key, rows in groups.items():
        gf = group_flags(rows, metas_by_run)
        outl = {o["run_id"] for o in gf["outlier_runs"]}
        for r in rows:
            f = facts.get(r["run_id"], {})
            fl = [name for name, on in (
                ("simulated", f.get("simulated")), ("oversubscribed", f.get("oversubscribed")),
                ("shared_cpu", f.get("shared_cpu") and not f.get("oversubscribed")),
                ("sync_inaccurate", f.get("synced") and ((f.get("sync_max_s") or 0) > SYNC_ACCURACY_S
                                                         or f.get("sync_preempted") or f.get("sync_below"))),
                ("outlier_runs", r["run_id"] in outl),
                ("zero_time", r.get("median_s") == 0.0)) if on]
            out[key + (r["run_id"],)] = fl
    return out


def read_campaign(root: Path, machine: str | None, filt, date: str | None = None) -> tuple[dict, list[tuple]]:
    """(entry row dict, point rows) of one campaign directory (read-only: nothing is written). date (the
    store's UTC text, ingest --date): the entry's date in the history instead of its first run's start,
    which is kept in the factors as measured_at; the runs keep their measured start times."""
    from mpitempo import kinds
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.summary import per_run_table
    from mpitempo.io.rundir import check_root, find_runs, load_meta

    root = Path(root)
    check_root(root)
    kind = kinds.of_campaign(root)
    data = open_campaign(root)      # refuses kinds without measurements and damaged runs, with their message
    try:
        complete, _, _ = find_runs(root, kind)
        metas = {d.name: load_meta(d / "meta.json") for d in complete}
        per_run = per_run_table(data.con, filt)
    finally:
        data.con.close()
    starts = sorted(str(m.get("start_time") or "") for m in metas.values() if m.get("start_time"))
    started = _iso(starts[0]) if starts else None
    if started is None:
        raise MtError(f"campaign '{root}' has no start_time in its runs' meta.json: a history needs the date")
    factors = entry_factors(list(metas.values()))
    mach = machine or factors.get("hosts") or "unknown"   # the hosts of the runs, unless ingest --machine names it
    flags = run_flags(per_run, metas)
    points = []
    for r in per_run:
        if not r.get("n") or r.get("median_s") is None:
            continue
        fl = flags.get((r["config"], r["op"], r["msize"], r["nprocs"], r["run_id"]), [])
        points.append([None, mach, r["config"], r["op"], int(r["msize"]), int(r["nprocs"]), r["run_id"],
                       int(r["run_index"]), _iso(metas[r["run_id"]].get("start_time")) or started,
                       float(r["median_s"]), int(r["n"]), ",".join(fl)])
    flagged = len({p[6] for p in points if p[11]})
    digest = campaign_digest(root, complete, kind.data_files[0])
    for p in points:
        p[0] = digest
    factors["flags"] = sorted({f for p in points for f in p[11].split(",") if f})
    if date is not None:
        factors["measured_at"] = started
    entry = {"digest": digest, "name": root.resolve().name, "path": str(root.resolve()), "machine": mach,
             "started_at": date or started, "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "host": socket.gethostname(), "runs": len(complete), "flagged_runs": flagged,
             "factors": json.dumps(factors, sort_keys=True)}
    return entry, [tuple(p) for p in points]


def _iso(v) -> str | None:
    """An ISO 8601 time as UTC 'YYYY-MM-DDTHH:MM:SS(.ffffff)Z' (sortable as text), None if unreadable."""
    if not v:
        return None
    s = str(v).strip()
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_entry(b: Backend, entry: dict, points: list[tuple]) -> bool:
    """Insert one entry and its points in one transaction; False when its digest was there already."""
    cols = ", ".join(ENTRY_COLUMNS)
    ins = (f"INSERT INTO hist_entries ({cols}) VALUES ({', '.join('?' * len(ENTRY_COLUMNS))}) "
           "ON CONFLICT (digest) DO NOTHING")
    pins = f"INSERT INTO hist_points ({', '.join(POINT_COLUMNS)}) VALUES ({', '.join('?' * len(POINT_COLUMNS))})"
    vals = [entry[c] for c in ENTRY_COLUMNS]
    if b.kind == "postgresql":
        with b.con.transaction():
            cur = b.execute(ins, vals)      # a concurrent ingest of the same digest waits here for the other's commit
            if cur.rowcount == 0:
                return False
            b.executemany(pins, points)
        return True
    b.execute("BEGIN TRANSACTION")
    try:
        if b.execute("SELECT count(*) FROM hist_entries WHERE digest = ?", [entry["digest"]]).fetchone()[0]:
            b.execute("ROLLBACK")
            return False
        b.execute(ins, vals)
        if points:
            b.executemany(pins, points)
        b.execute("COMMIT")
    except BaseException:
        b.execute("ROLLBACK")
        raise
    return True


def ingest(db: str, roots, machine: str | None = None, filt=None, date: str | None = None) -> list[dict]:
    """Add campaigns to the history store db; returns per campaign {campaign, path, digest, machine,
    started_at, runs, flagged_runs, points, new}. date: the entry's date (one campaign only; see
    read_campaign)."""
    from mpitempo.stats.outliers import Filter

    filt = filt or Filter()
    read = [read_campaign(Path(r), machine, filt, date) for r in roots]   # everything read before the store is opened
    b = connect(str(db))
    try:
        ensure_schema(b)
        out = []
        for (entry, points), root in zip(read, roots):
            new = write_entry(b, entry, points)
            out.append({"campaign": entry["name"], "path": entry["path"], "digest": entry["digest"],
                        "machine": entry["machine"], "started_at": entry["started_at"], "runs": entry["runs"],
                        "flagged_runs": entry["flagged_runs"], "points": len(points), "new": new})
        return out
    finally:
        b.close()


# -- reading -------------------------------------------------------------------------------------------

SERIES_KEY = ("machine", "config", "op", "msize", "nprocs")


def _row_order(keys: list):
    """The order of rows sorted by the integer columns keys (first most significant): one stable argsort
    of a combined key when it fits 62 bits (2-3x faster than lexsort), else lexsort."""
    import numpy as np

    if not keys[0].size:
        return np.zeros(0, dtype=np.int64)
    lows = [int(k.min()) for k in keys]
    spans = [int(k.max()) - lo + 1 for k, lo in zip(keys, lows)]
    if math.prod(spans) >= 2 ** 62:
        return np.lexsort(keys[::-1])
    comb = np.zeros(keys[0].size, dtype=np.int64)
    for k, lo, sp in zip(keys, lows, spans):
        comb = comb * sp + (k - lo)
    return np.argsort(comb, kind="stable")


@dataclass
class Points:
    """The points of a history by columns: row i is one mpirun's median of one series in one entry.
    Rows are ordered by (series, entry, run_index, run_id); strings are numbered (series keys, flags,
    run ids): no Python object per row, so a million points load in well under a second from DuckDB."""
    series: list            # (machine, config, op, msize, nprocs) per series number, sorted
    sid: object             # int64 per row: the series number
    eid: object             # int64 per row: the entry's position in the entries list (oldest first)
    median_s: object        # float64 per row
    n: object               # int64 per row: measurements behind the median
    fid: object             # int64 per row: index into flag_names ("" = not flagged)
    flag_names: list
    rid: object             # int64 per row: index into run_names
    run_names: list

    def __len__(self) -> int:
        return int(self.sid.size)

    @classmethod
    def from_rows(cls, entries: list[dict], rows: list[dict]) -> "Points":
        """Points of row dicts (POINT_COLUMNS; tests and synthetic histories); entries must be oldest first.
        Rows of digests not among the entries are left out."""
        import numpy as np

        eidx = {e["digest"]: i for i, e in enumerate(entries)}
        rows = [r for r in rows if r["digest"] in eidx]
        keys = sorted({tuple(r[k] for k in SERIES_KEY) for r in rows},
                      key=lambda k: tuple(str(x) if isinstance(x, str) else f"{x:020d}" for x in k))
        sidx = {k: i for i, k in enumerate(keys)}
        fnames = sorted({r["flags"] or "" for r in rows} | {""})
        rnames = sorted({r["run_id"] for r in rows})
        fidx, ridx = {f: i for i, f in enumerate(fnames)}, {r: i for i, r in enumerate(rnames)}
        rows = sorted(rows, key=lambda r: (sidx[tuple(r[k] for k in SERIES_KEY)], eidx[r["digest"]],
                                           r["run_index"], r["run_id"]))
        col = lambda f, dt: np.array([f(r) for r in rows], dtype=dt)   # noqa: E731
        return cls(keys, col(lambda r: sidx[tuple(r[k] for k in SERIES_KEY)], np.int64),
                   col(lambda r: eidx[r["digest"]], np.int64), col(lambda r: float(r["median_s"]), np.float64),
                   col(lambda r: int(r["n"] or 0), np.int64), col(lambda r: fidx[r["flags"] or ""], np.int64), fnames,
                   col(lambda r: ridx[r["run_id"]], np.int64), rnames)



def load(db: str, since: str | None = None, machines=None, ops=None) -> tuple[list[dict], Points]:
    """(entries oldest first, Points) of the store, with the filters applied in the query. Unknown filter
    values are refused naming what the store has.

    The points come as columns: the query numbers the series, entries, flags and run ids (small tables
    read as rows) and returns per point only numbers, sorted; DuckDB hands them over as numpy arrays
    (fetchnumpy). PostgreSQL runs the same query and its rows are turned into arrays (psycopg has no
    columnar fetch: a row path, about 10x slower per point)."""
    import numpy as np

    b = connect(str(db), read_only=True)
    try:
        if not has_history(b):
            raise MtError(f"store '{b.where}' has no history (ingest campaigns with `mpitempo ingest DIR... --db {db}`)")
        for flag, col, want in (("--machine", "machine", machines), ("--op", "op", ops)):
            if want:
                have = {r[0] for r in b.execute(f"SELECT DISTINCT {col} FROM hist_points").fetchall()}
                bad = [w for w in want if w not in have]
                if bad:
                    raise MtError(f"{flag} '{bad[0]}' is not in the store: choose from {', '.join(sorted(have)) or '(none)'}")
        cond, params = [], []
        if machines:
            cond.append(f"p.machine IN ({', '.join('?' * len(machines))})")
            params += list(machines)
        if ops:
            cond.append(f"p.op IN ({', '.join('?' * len(ops))})")
            params += list(ops)
        ewhere, eparams = (" WHERE started_at >= ?", [since]) if since else ("", [])
        pwhere = (" WHERE " + " AND ".join(cond)) if cond else ""
        ents = b.execute(f"SELECT {', '.join(ENTRY_COLUMNS)} FROM hist_entries{ewhere} ORDER BY started_at, digest",
                         eparams).fetchall()
        # the entries (numbered as listed above) and the points they own, with the filters
        base = (f"WITH e AS (SELECT digest, row_number() OVER (ORDER BY started_at, digest) - 1 AS eid "
                f"FROM hist_entries{ewhere}), "
                f"p AS (SELECT p.*, e.eid FROM hist_points p JOIN e ON e.digest = p.digest{pwhere}) ")
        skey = ", ".join(SERIES_KEY)
        bparams = eparams + params
        num = (base + f", s AS (SELECT {skey}, row_number() OVER (ORDER BY {skey}) - 1 AS sid "
               f"FROM (SELECT DISTINCT {skey} FROM p) x), "
               "f AS (SELECT fl, row_number() OVER (ORDER BY fl) - 1 AS fid FROM "
               "(SELECT DISTINCT coalesce(flags, '') AS fl FROM p UNION SELECT '') y), "
               "r AS (SELECT run_id, row_number() OVER (ORDER BY run_id) - 1 AS rid "
               "FROM (SELECT DISTINCT run_id FROM p) z) ")
        # the numbering's tables as rows (small), then the points as numbers only
        series = [tuple(r) for r in b.execute(num + f"SELECT {skey} FROM s ORDER BY sid", bparams).fetchall()]
        fnames = [r[0] for r in b.execute(num + "SELECT fl FROM f ORDER BY fid", bparams).fetchall()]
        rnames = [r[0] for r in b.execute(num + "SELECT run_id FROM r ORDER BY rid", bparams).fetchall()]
        # joins with the small numbered tables are hash joins; the sort is left to numpy (integers)
        q = (num + "SELECT s.sid, p.eid, p.run_index, r.rid, p.median_s, coalesce(p.n, 0) AS n, f.fid FROM p "
             f"JOIN s ON {' AND '.join(f's.{k} = p.{k}' for k in SERIES_KEY)} "
             "JOIN f ON f.fl = coalesce(p.flags, '') JOIN r ON r.run_id = p.run_id")
        names = ("sid", "eid", "run_index", "rid", "median_s", "n", "fid")
        if b.kind == "duckdb":
            got = b.execute(q, bparams).fetchnumpy()
            cols = {k: np.asarray(got[k]) for k in names}
        else:   # row path: psycopg returns tuples
            rows = b.execute(q, bparams).fetchall()
            cols = {k: np.array([r[i] for r in rows], dtype=np.float64 if k == "median_s" else np.int64)
                    for i, k in enumerate(names)} if rows else {k: np.zeros(0) for k in names}
    finally:
        b.close()
    entries = []
    for r in ents:
        e = dict(zip(ENTRY_COLUMNS, r))
        try:
            e["factors"] = json.loads(e["factors"] or "{}")
        except ValueError:
            e["factors"] = {}
        entries.append(e)
    order = _row_order([cols[k].astype(np.int64, copy=False) for k in ("sid", "eid", "run_index", "rid")])
    c = {k: (cols[k] if k == "median_s" else cols[k].astype(np.int64, copy=False))[order] for k in names}
    pts = Points(series, c["sid"], c["eid"], c["median_s"].astype(np.float64, copy=False), c["n"], c["fid"],
                 fnames, c["rid"], rnames)
    return entries, pts
