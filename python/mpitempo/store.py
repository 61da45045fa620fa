"""Read campaign directories with DuckDB, straight from the files.

``open_campaign(dir)`` returns a connection with two relations:

* ``runs``: one row per complete mpirun (run_id, config, run_index, nprocs,
  library, timer, scheme, start_time, dir), from meta.json;
* ``meas``: every row of every measurements.csv, with run_id and config.

Incomplete runs (no meta.json) and failed runs are listed separately and are
never mixed into the measurements.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from .errors import MtError

CSV_COLUMNS = {
    "op": "VARCHAR", "msize": "BIGINT", "nprocs": "INTEGER", "scheme": "VARCHAR", "exp": "INTEGER",
    "rep": "INTEGER", "runtime_s": "DOUBLE", "valid": "INTEGER", "local_max_s": "DOUBLE",
}


@dataclass
class CampaignData:
    con: duckdb.DuckDBPyConnection
    root: Path
    metas: dict[str, dict]
    failed: list[dict] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)


def find_runs(root: Path) -> tuple[list[Path], list[dict], list[str]]:
    runs_dir = root / "runs"
    complete, failed, incomplete = [], [], []
    for d in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        if (d / "meta.json").exists() and (d / "measurements.csv").exists():
            complete.append(d)
        elif (d / "failed.json").exists():
            try:
                failed.append(json.loads((d / "failed.json").read_text()))
            except (OSError, json.JSONDecodeError):
                failed.append({"run_id": d.name, "status": "failed"})
        else:
            incomplete.append(d.name)
    return complete, failed, incomplete


def open_campaign(root: str | Path, con: duckdb.DuckDBPyConnection | None = None) -> CampaignData:
    root = Path(root)
    if not root.is_dir():
        raise MtError(f"'{root}' is not a directory")
    if not (root / "runs").is_dir():
        raise MtError(f"'{root}' is not a campaign directory (no runs/ inside)")
    complete, failed, incomplete = find_runs(root)
    if not complete:
        extra = f" ({len(failed)} failed, {len(incomplete)} incomplete)" if failed or incomplete else ""
        raise MtError(f"campaign '{root}' has no complete runs{extra}")
    con = con or duckdb.connect()
    metas: dict[str, dict] = {}
    rows = []
    for d in complete:
        try:
            meta = json.loads((d / "meta.json").read_text())
        except json.JSONDecodeError as e:
            raise MtError(f"'{d / 'meta.json'}' is not valid JSON: {e}") from None
        metas[d.name] = meta
        rows.append((d.name, meta.get("config", "default"), int(meta.get("run_index", 0)),
                     int(meta.get("nprocs", 0)), (meta.get("mpi") or {}).get("library", ""),
                     (meta.get("timer") or {}).get("name", ""), (meta.get("scheme") or {}).get("name", ""),
                     meta.get("start_time", ""), str((d / "measurements.csv").resolve())))
    con.execute("CREATE OR REPLACE TABLE runs (run_id VARCHAR, config VARCHAR, run_index INTEGER, "
                "nprocs INTEGER, library VARCHAR, timer VARCHAR, scheme VARCHAR, start_time VARCHAR, "
                "file VARCHAR)")
    con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    files = [r[-1] for r in rows]
    cols = ", ".join(f"'{k}': '{v}'" for k, v in CSV_COLUMNS.items())
    file_list = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    try:
        con.execute(f"""CREATE OR REPLACE TABLE meas AS
            SELECT r.run_id, r.config, r.run_index, m.op, m.msize, m.nprocs, m.scheme, m.exp, m.rep,
                   m.runtime_s, m.valid::BOOLEAN AS valid, m.local_max_s
            FROM read_csv({file_list}, header=true, columns={{{cols}}}, filename=true) m
            JOIN runs r ON r.file = m.filename""")
    except duckdb.Error as e:
        raise MtError(f"cannot read measurements of '{root}': {str(e).splitlines()[0]}") from None
    return CampaignData(con=con, root=root, metas=metas, failed=failed, incomplete=incomplete)


def summarize(data: CampaignData) -> list[dict]:
    """Per (config, op, msize, nprocs): the distribution of per-run medians of valid measurements."""
    q = """
    WITH per_run AS (
        SELECT config, op, msize, nprocs, run_id,
               median(runtime_s) FILTER (WHERE valid) AS med,
               count(*) FILTER (WHERE valid) AS nvalid,
               count(*) AS n
        FROM meas GROUP BY ALL
    )
    SELECT config, op, msize, nprocs,
           count(med) AS runs,
           count(*) FILTER (WHERE med IS NULL) AS runs_without_valid,
           sum(nvalid) AS measurements,
           sum(n) - sum(nvalid) AS invalid,
           median(med) AS median_s, avg(med) AS mean_s, min(med) AS min_s, max(med) AS max_s
    FROM per_run GROUP BY ALL
    ORDER BY config, op, msize, nprocs
    """
    cur = data.con.execute(q)
    names = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        r = dict(zip(names, row))
        for k in ("runs", "runs_without_valid", "measurements", "invalid", "msize", "nprocs"):
            r[k] = int(r[k]) if r[k] is not None else 0
        med = r["median_s"]
        r["spread_pct"] = (100.0 * (r["max_s"] - r["min_s"]) / med) if med else None
        out.append(r)
    return out
