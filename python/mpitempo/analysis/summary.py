"""The statistics of ``mpitempo.stats.describe`` in bulk, as DuckDB queries: one row per mpirun
(``per_run_table``), all measurements of a group pooled (``pooled_table``), and the distributions
of the run medians and means across mpiruns with the median CI (``group_table``), following the
analysis of Hunold and Carpen-Amarie 2016 (Alg. 3). Each statistic is computed once: the per-run
rows also give the outlier counts (``counts_from_per_run``).
"""
from __future__ import annotations

import math

import numpy as np

from mpitempo.analysis.filtering import filtered_view
from mpitempo.stats.describe import describe, median_ci
from mpitempo.stats.outliers import NONE, Filter


def _stats_sql(col: str, cond: str) -> str:
    """describe() as SQL aggregates of ``col`` over the rows where ``cond`` holds."""
    f = f"FILTER (WHERE {cond})"
    return (f"count({col}) {f} AS n, min({col}) {f} AS min_s, quantile_cont({col}, [0.25, 0.5, 0.75]) {f} AS qq, "
            f"avg({col}) {f} AS mean_s, max({col}) {f} AS max_s, stddev_samp({col}) {f} AS std_s")


def _finish(r: dict) -> dict:
    """The derived keys of describe() (quartiles, cv, se, rse) from a row of _stats_sql."""
    qq = r.pop("qq", None) or [None, None, None]
    r["q1_s"], r["median_s"], r["q3_s"] = qq
    n, mean, std = r.get("n") or 0, r.get("mean_s"), r.get("std_s")
    r["n"] = int(n)
    r["cv"] = std / mean if std is not None and mean else None
    r["se_s"] = std / math.sqrt(n) if std is not None and n else None
    r["rse"] = r["se_s"] / mean if r["se_s"] is not None and mean else None
    return r


def _rows(cur) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def per_run_table(con, filt: Filter | None) -> list[dict]:
    """One row per (config, op, msize, nprocs, campaign, run): describe() of the kept measurements,
    plus outliers (valid measurements removed by the filter) and invalid."""
    src = filtered_view(con, filt)
    cur = con.execute(f"""SELECT campaign, config, op, msize, nprocs, run_id, any_value(run_index) AS run_index,
            {_stats_sql('runtime_s', 'keep')},
            count(*) FILTER (WHERE valid AND NOT keep) AS outliers, count(*) FILTER (WHERE NOT valid) AS invalid,
            count(*) FILTER (WHERE abs(oclass) = 1) AS mild, count(*) FILTER (WHERE abs(oclass) = 2) AS severe,
            count(*) FILTER (WHERE oclass < 0) AS low, count(*) FILTER (WHERE oclass > 0) AS high
        FROM {src} GROUP BY campaign, config, op, msize, nprocs, run_id, run_no
        ORDER BY campaign, config, op, msize, nprocs, run_index, run_id""")
    out = []
    for r in _rows(cur):
        r = _finish(r)
        for k in ("msize", "nprocs", "run_index", "outliers", "invalid", "mild", "severe", "low", "high"):
            r[k] = int(r[k])
        out.append(r)
    return out


def counts_from_per_run(per_run: list[dict], filt: Filter | None) -> dict:
    """outlier_counts() from the per-run rows (no extra pass over the measurements)."""
    tot = {k: sum(r[k] for r in per_run) for k in ("outliers", "mild", "severe", "low", "high")}
    return {"measurements": sum(r["n"] + r["outliers"] for r in per_run), **tot, "filter": (filt or NONE).settings()}


def pooled_table(con, filt: Filter | None) -> dict[tuple, dict]:
    """Per (campaign, config, op, msize, nprocs): describe() of all kept measurements of all runs together."""
    src = filtered_view(con, filt)
    cur = con.execute(f"""SELECT campaign, config, op, msize, nprocs, {_stats_sql('runtime_s', 'keep')}
        FROM {src} GROUP BY ALL""")
    out = {}
    for r in _rows(cur):
        key = (r.pop("campaign"), r.pop("config"), r.pop("op"), int(r.pop("msize")), int(r.pop("nprocs")))
        out[key] = _finish(r)
    return out


def group_table(con, filt: Filter | None, level: float = 0.95, per_run: list[dict] | None = None) -> list[dict]:
    """Per (campaign, config, op, msize, nprocs): the distributions of run medians and run means across
    mpiruns (describe() of each), the median CI across runs, pooled statistics of the measurements."""
    per_run = per_run if per_run is not None else per_run_table(con, filt)
    pooled = pooled_table(con, filt)
    groups: dict[tuple, list[dict]] = {}
    for r in per_run:
        groups.setdefault((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r)
    out = []
    for key, rs in groups.items():
        meds = np.array([r["median_s"] for r in rs if r["median_s"] is not None], dtype=float)
        means = np.array([r["mean_s"] for r in rs if r["mean_s"] is not None], dtype=float)
        out.append({"campaign": key[0], "config": key[1], "op": key[2], "msize": key[3], "nprocs": key[4],
                    "run_medians": describe(meds), "run_means": describe(means),
                    "median_ci": median_ci(meds, level), "pooled": pooled.get(key, describe([])),
                    "outliers": sum(r["outliers"] for r in rs)})
    return out


def summary_rows(data, filt: Filter, level: float = 0.95, per_run: list[dict] | None = None) -> list[dict]:
    """The summary rows of `mpitempo summary`: the store's summarize() plus the per-group statistics
    (median CI, run medians, run means, pooled) as nested objects."""
    from mpitempo.analysis.store import summarize

    per_run = per_run if per_run is not None else per_run_table(data.con, filt)
    rows = summarize(data, filt, per_run)
    groups = {(g["campaign"], g["config"], g["op"], g["msize"], g["nprocs"]): g
              for g in group_table(data.con, filt, level, per_run)}
    from mpitempo.analysis.flags import campaign_metas, flags_by_group

    fl = flags_by_group(per_run, campaign_metas(data))
    from mpitempo.analysis.flags import regime_changes

    reg = regime_changes(data.con)
    for r in rows:
        key = (r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"])
        g = groups.get(key, {})
        r["filter"] = filt.settings()
        for k in ("median_ci", "run_medians", "run_means", "pooled"):
            r[k] = g.get(k)
        f = fl.get(key, {})
        for k in ("flags", "modes", "runs_needed_5pct", "outlier_runs", "mode_factor", "core_strata"):
            r[k] = f.get(k, [] if k in ("flags", "outlier_runs") else None)
        r["flags"] = list(r["flags"])
        r["regimes"] = None if reg is None else reg.get(key, [])
        if r["regimes"]:
            r["flags"].append("regime_change")
    return rows
