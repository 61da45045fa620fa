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
from mpitempo.analysis.adaptive import annotate, campaign_spec
from mpitempo.analysis.derived import group_derived, pure_op
from mpitempo.analysis.flags import by_severity, campaign_metas, flags_by_group, regime_changes
from mpitempo.analysis.perrun import PerRun, per_run_table as scan, pooled_order_stats


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
    plus outliers (valid measurements removed by the filter) and invalid (analysis.perrun: one run
    in memory at a time)."""

    return scan(con, filt)


def counts_from_per_run(per_run: list[dict], filt: Filter | None) -> dict:
    """outlier_counts() from the per-run rows (no extra pass over the measurements)."""
    tot = {k: sum(r[k] for r in per_run) for k in ("outliers", "mild", "severe", "low", "high")}
    return {"measurements": sum(r["n"] + r["outliers"] for r in per_run), **tot, "filter": (filt or NONE).settings()}


def pooled_table(con, filt: Filter | None, per_run: list[dict] | None = None) -> dict[tuple, dict]:
    """Per (campaign, config, op, msize, nprocs): describe() of all kept measurements of all runs together.

    The order statistics are selected from the sorted kept values of the runs (analysis.perrun); the
    mean and standard deviation are combined from the per-run counts, means and variances (Chan,
    Golub and LeVeque 1983) with correctly rounded sums (math.fsum), in the order of the runs: the
    result does not depend on the order in which the rows were stored, so it is the same, bit for
    bit, on every read of the same data (CSV or columnar copy)."""

    if not isinstance(per_run, PerRun) or not hasattr(per_run, "kept"):
        from mpitempo.analysis.perrun import per_run_table as scan

        per_run = scan(con, filt)
    parts: dict[tuple, list[tuple]] = {}
    for r in per_run:
        if r["n"]:
            parts.setdefault((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]), []).append(
                (r["n"], r["mean_s"], r["std_s"]))
    out = {}
    for key, r in pooled_order_stats(per_run).items():
        mean, std = _combine(parts.get(key, []))
        out[key] = _finish({"n": r["n"], "min_s": r["min_s"], "qq": [r["q1_s"], r["median_s"], r["q3_s"]],
                            "mean_s": mean, "max_s": r["max_s"], "std_s": std})
    return out


def _combine(parts: list[tuple]) -> tuple:
    """(mean, sample standard deviation) of the union of groups given as (n, mean, sample std)."""
    n = sum(p[0] for p in parts)
    if n == 0:
        return None, None
    mean = math.fsum(k * m for k, m, _ in parts) / n
    if n < 2:
        return mean, None
    m2 = math.fsum([(k - 1) * s * s for k, _, s in parts if k > 1 and s is not None]
                   + [k * (m - mean) ** 2 for k, m, _ in parts])
    return mean, math.sqrt(max(m2, 0.0) / (n - 1))


def group_table(con, filt: Filter | None, level: float = 0.95, per_run: list[dict] | None = None) -> list[dict]:
    """Per (campaign, config, op, msize, nprocs): the distributions of run medians and run means across
    mpiruns (describe() of each), the median CI across runs, pooled statistics of the measurements."""
    per_run = per_run if per_run is not None else per_run_table(con, filt)
    pooled = pooled_table(con, filt, per_run)
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
    (median CI, run medians, run means, pooled) as nested objects, and the derived quantities of
    analysis.derived: bandwidth_MBps (ops with bytes_per_call > 0), msg_rate_per_s (rate ops),
    overlap_pct, compute, compute_off_runs and compute_miscalibrated (overlap ops)."""
    from mpitempo.analysis.store import summarize

    per_run = per_run if per_run is not None else per_run_table(data.con, filt)
    rows = summarize(data, filt, per_run)
    groups = {(g["campaign"], g["config"], g["op"], g["msize"], g["nprocs"]): g
              for g in group_table(data.con, filt, level, per_run)}

    metas = campaign_metas(data)
    fl = flags_by_group(per_run, metas)

    # a campaign that added mpiruns adaptively states its intervals at 1 - 0.05 / looks (analysis.adaptive):
    # the derived quantities' intervals (MB/s, ...) are order statistics of the same run medians
    levels = [sp["level"] for sp in (campaign_spec(rt) for rt in data.roots if rt.is_dir()) if sp and sp["level"]]
    derived = group_derived(per_run, metas, min(levels + [level]))

    reg = regime_changes(data.con)
    for r in rows:
        key = (r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"])
        g = groups.get(key, {})
        r["filter"] = filt.settings()
        for k in ("median_ci", "run_medians", "run_means", "pooled"):
            r[k] = g.get(k)
        f = fl.get(key, {})
        for k in ("flags", "modes", "runs_needed_5pct", "outlier_runs", "mode_factor", "core_strata", "zero_time_runs",
                  "sync"):
            r[k] = f.get(k, [] if k in ("flags", "outlier_runs", "zero_time_runs") else None)
        r["flags"] = list(r["flags"])
        r.update(derived.get(key, {}))      # bandwidth_MBps, msg_rate_per_s, overlap_pct, compute
        if pure_op(r["op"]) is not None:
            r["compute_off_runs"] = f.get("compute_off_runs") or []
            r["compute_miscalibrated"] = "compute_miscalibrated" in r["flags"]
        r["warmup"] = f.get("warmup")
        r["regimes"] = None if reg is None else reg.get(key, [])
        if r["regimes"]:
            r["flags"] = by_severity(r["flags"] + ["regime_change"])

    annotate(rows, per_run, metas, {label: root for label, root in zip(data.labels, data.roots) if root.is_dir()})
    return rows
