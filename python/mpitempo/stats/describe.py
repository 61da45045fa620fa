"""Descriptive statistics per mpirun and across mpiruns (paper 001, Alg. 3; paper 004, section 4).

* ``describe(x)``: n, min, Q1, median, mean, Q3, max, std (n-1), CV = std/mean, SE = std/sqrt(n),
  RSE = SE/mean. Quartiles are linear-interpolated.
* ``median_ci(x)``: the distribution-free confidence interval of the median from order statistics
  (binomial(n, 1/2)); it exists only from 6 values at 95% (n = 5 covers at most 93.75%), so callers
  say "need >= 6 runs" instead of printing an interval the data cannot support.
* ``per_run_table`` / ``group_table``: the same statistics in bulk with DuckDB.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from mpitempo.stats.outliers import Filter, filtered_view

STAT_KEYS = ("n", "min_s", "q1_s", "median_s", "mean_s", "q3_s", "max_s", "std_s", "cv", "se_s", "rse")


def describe(x) -> dict:
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    if n == 0:
        return dict.fromkeys(STAT_KEYS, None) | {"n": 0}
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    mean = float(np.mean(x))
    std = float(np.std(x, ddof=1)) if n > 1 else None
    se = std / math.sqrt(n) if std is not None else None
    return {"n": n, "min_s": float(x.min()), "q1_s": float(q1), "median_s": float(med), "mean_s": mean,
            "q3_s": float(q3), "max_s": float(x.max()), "std_s": std,
            "cv": std / mean if std is not None and mean else None, "se_s": se,
            "rse": se / mean if se is not None and mean else None}


def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    """1-based ranks (l, u) of the order statistics with P(x_(l) <= median <= x_(u)) >= level, the
    narrowest symmetric pair; None when even (1, n) does not reach the level."""
    if n < 1:
        return None
    best = None
    for l in range(1, n // 2 + 1):
        cover = 1.0 - 2.0 * sps.binom.cdf(l - 1, n, 0.5)
        if cover >= level - 1e-12:
            best = (l, n - l + 1)
        else:
            break
    return best


def runs_needed(level: float = 0.95) -> int:
    n = 1
    while median_ci_ranks(n, level) is None:
        n += 1
    return n


def median_ci(x, level: float = 0.95) -> dict:
    """{level, lo_s, hi_s, coverage, need_runs}: lo/hi None and need_runs set when n is too small."""
    x = np.sort(np.asarray(x, dtype=float))
    r = median_ci_ranks(x.size, level)
    if r is None:
        return {"level": level, "lo_s": None, "hi_s": None, "coverage": None, "need_runs": runs_needed(level)}
    l, u = r
    cover = 1.0 - 2.0 * sps.binom.cdf(l - 1, x.size, 0.5)
    return {"level": level, "lo_s": float(x[l - 1]), "hi_s": float(x[u - 1]), "coverage": float(cover),
            "need_runs": None}


def mean_ci(x, level: float = 0.95) -> tuple[float, float] | None:
    """Student-t confidence interval of the mean (None below 2 values)."""
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return None
    m, se = float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(x.size))
    h = float(sps.t.ppf(0.5 + level / 2, x.size - 1)) * se
    return m - h, m + h


# -- bulk ------------------------------------------------------------------------------------------

def _stats_sql(col: str, cond: str) -> str:
    f = f"FILTER (WHERE {cond})"
    return (f"count({col}) {f} AS n, min({col}) {f} AS min_s, quantile_cont({col}, [0.25, 0.5, 0.75]) {f} AS qq, "
            f"avg({col}) {f} AS mean_s, max({col}) {f} AS max_s, stddev_samp({col}) {f} AS std_s")


def _finish(r: dict) -> dict:
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
    from mpitempo.stats.outliers import NONE

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
