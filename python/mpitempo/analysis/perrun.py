"""The per-run statistics of a campaign in one pass over its runs, one run in memory at a time.

For every run, its measurements sorted by (op, msize, nprocs, valid, runtime_s) are one contiguous
segment per group (the columnar copy is written in that order, the CSV rows are sorted here), so the
valid runtimes of a group are sorted and every order statistic is an index: the quartiles and the
Tukey fences (Hunold and Carpen-Amarie 2016; the cut_coef limit of Luecke et al. 2009), the kept
range (two binary searches), the outlier classes (four more), the median, the minimum and maximum.
Sums (mean, standard deviation) are taken over the sorted kept values, so they do not depend on the
order in which the rows were stored. The kept values of each run stay in memory (8 bytes a
measurement) for the pooled order statistics across runs, which are selected from the sorted runs
without merging them.

Quantiles interpolate as DuckDB's ``quantile_cont`` does (the SQL filter of ``analysis.filtering``):
position (n - 1) q between the values lo and hi around it, lo (1 - d) + hi d with one rounding of
the first product, so that this and the SQL filter keep the same measurements.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mpitempo.stats.outliers import NONE, Filter


def _interp(lo: float, hi: float, d: float) -> float:
    # fma(lo, 1 - d, hi * d): DuckDB's interpolation of doubles as compiled (one rounding)
    return float(Fraction(lo) * Fraction(1.0 - d) + Fraction(hi * d))


def quantile_sorted(x: np.ndarray, q: float) -> float | None:
    n = x.size
    if n == 0:
        return None
    rn = (n - 1) * q
    f, c = math.floor(rn), math.ceil(rn)
    lo = float(x[f])
    return lo if f == c else _interp(lo, float(x[c]), rn - f)


class PerRun(list):
    """The per-run rows, with the kept values of each group's runs for the pooled statistics."""
    kept: dict


def _fences(v: np.ndarray, filt: Filter):
    """(lo, hi, slo, shi) of the valid sorted values v; None bounds are open."""
    if filt.kind == "tukey":
        q1, q3 = quantile_sorted(v, 0.25), quantile_sorted(v, 0.75)
        if q1 is None:
            return None, None, None, None
        k = float(filt.k)
        iqr = q3 - q1
        return q1 - k * iqr, q3 + k * iqr, q1 - 2 * k * iqr, q3 + 2 * k * iqr
    if filt.kind == "cutcoef":
        m = quantile_sorted(v, 0.5)
        return None, (None if m is None else float(filt.cut_coef) * m), None, None
    return None, None, None, None


def _group_stats(v: np.ndarray, filt: Filter) -> tuple[dict, np.ndarray]:
    """describe() of the kept values of one group of one run and its outlier counts; (row, kept)."""
    lo, hi, slo, shi = _fences(v, filt)
    n = v.size
    a = 0 if lo is None else int(np.searchsorted(v, lo, "left"))
    b = n if hi is None else int(np.searchsorted(v, hi, "right"))
    kept = v[a:b]
    below_slo = 0 if slo is None else int(np.searchsorted(v, slo, "left"))
    above_shi = 0 if shi is None else n - int(np.searchsorted(v, shi, "right"))
    low, high = a, n - b
    if filt.kind == "tukey":
        severe = below_slo + above_shi
        mild = low + high - severe
    else:
        severe, mild = 0, low + high
    k = kept.size
    row = {"n": k, "min_s": float(kept[0]) if k else None, "q1_s": quantile_sorted(kept, 0.25),
           "median_s": quantile_sorted(kept, 0.5), "q3_s": quantile_sorted(kept, 0.75),
           "max_s": float(kept[-1]) if k else None,
           "outliers": n - k, "mild": mild, "severe": severe, "low": low, "high": high}
    if k:
        mean = float(np.sum(kept)) / k
        row["mean_s"] = mean
        row["std_s"] = float(np.sqrt(np.sum((kept - mean) ** 2) / (k - 1))) if k > 1 else None
    else:
        row["mean_s"] = row["std_s"] = None
    return row, kept


def _finish(r: dict) -> dict:
    n, mean, std = r["n"], r["mean_s"], r["std_s"]
    r["cv"] = std / mean if std is not None and mean else None
    r["se_s"] = std / math.sqrt(n) if std is not None and n else None
    r["rse"] = r["se_s"] / mean if r["se_s"] is not None and mean else None
    return r


def _run_source(con, run_no: int, copies: dict) -> tuple[str, list]:
    path = copies.get(run_no)
    if path is not None:
        from mpitempo.kinds.base import sql_path

        return f"(SELECT op, msize, nprocs, valid::BOOLEAN AS valid, runtime_s FROM read_parquet({sql_path(path)}))", []
    return "(SELECT op, msize, nprocs, valid, runtime_s FROM meas WHERE run_no = ?)", [run_no]


def _run_arrays(con, run_no: int, copies: dict):
    """(groups [(op, msize, nprocs, rows, valid)], valid flags, runtimes) of one run, sorted by
    (op, msize, nprocs, valid, runtime_s)."""
    src, args = _run_source(con, run_no, copies)
    groups = None
    if run_no in copies:   # listed in the copy's record, whose copy matched its digest (counts and order checked below)
        from mpitempo.io.columnar import groups as recorded

        groups = recorded(copies[run_no])
    if groups is None:
        groups = con.execute(f"""SELECT op, msize, nprocs, count(*), count(*) FILTER (WHERE valid) FROM {src}
            GROUP BY ALL ORDER BY op, msize, nprocs""", args).fetchall()
    if run_no in copies:   # written sorted: read in file order, check the order below
        a = con.execute(f"SELECT valid, runtime_s FROM {src}", args).fetchnumpy()
        valid, rt = np.asarray(a["valid"], dtype=bool), np.asarray(a["runtime_s"], dtype=float)
        if _sorted(groups, valid, rt):
            return groups, valid, rt
        groups = con.execute(f"""SELECT op, msize, nprocs, count(*), count(*) FILTER (WHERE valid) FROM {src}
            GROUP BY ALL ORDER BY op, msize, nprocs""", args).fetchall()
    a = con.execute(f"SELECT valid, runtime_s FROM {src} ORDER BY op, msize, nprocs, valid, runtime_s",
                    args).fetchnumpy()
    return groups, np.asarray(a["valid"], dtype=bool), np.asarray(a["runtime_s"], dtype=float)


def _sorted(groups, valid, rt) -> bool:
    s = 0
    for _, _, _, rows, nvalid in groups:
        e = s + rows
        inv = rows - nvalid
        if valid[s:s + inv].any() or not valid[s + inv:e].all():
            return False
        v = rt[s + inv:e]
        if v.size > 1 and not bool(np.all(v[1:] >= v[:-1])):
            return False
        s = e
    return s == rt.size


def per_run_table(con, filt: Filter | None) -> PerRun:
    """One row per (campaign, config, op, msize, nprocs, run): describe() of the kept measurements
    plus outliers, invalid, mild, severe, low, high; ordered by campaign, config, op, msize,
    nprocs, run_index, run_id (as the SQL of analysis.summary was)."""
    filt = filt or NONE
    copies = {}
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = '_mt_copies'").fetchone()[0]:
        copies = dict(con.execute("SELECT run_no, path FROM _mt_copies").fetchall())
    runs = con.execute("SELECT run_no, campaign, run_id, config, run_index FROM runs ORDER BY run_no").fetchall()
    out = PerRun()
    out.kept = {}
    for run_no, camp, run_id, config, run_index in runs:
        groups, valid, rt = _run_arrays(con, run_no, copies)
        s = 0
        for op, msize, nprocs, rows, nvalid in groups:
            inv = rows - nvalid
            v = rt[s + inv:s + rows]
            row, kept = _group_stats(v, filt)
            key = (camp, config, op, int(msize), int(nprocs))
            out.append(_finish({"campaign": camp, "config": config, "op": op, "msize": int(msize),
                                "nprocs": int(nprocs), "run_id": run_id, "run_index": int(run_index),
                                "n": row["n"], "min_s": row["min_s"], "mean_s": row["mean_s"], "max_s": row["max_s"],
                                "std_s": row["std_s"], "outliers": row["outliers"], "invalid": int(inv),
                                "mild": row["mild"], "severe": row["severe"], "low": row["low"], "high": row["high"],
                                "q1_s": row["q1_s"], "median_s": row["median_s"], "q3_s": row["q3_s"]}))
            out.kept.setdefault(key, []).append(kept)
            s += rows
    out.sort(key=lambda r: tuple((r[k] is None, r[k]) for k in ("campaign", "config", "op", "msize", "nprocs",
                                                                  "run_index", "run_id")))
    return out


def pooled_quantiles(arrays: list[np.ndarray], qs=(0.25, 0.5, 0.75)) -> list[float | None]:
    """The quantiles qs of the union of the arrays (selection, no full sort)."""
    arrays = [a for a in arrays if a.size]
    n = sum(a.size for a in arrays)
    if n == 0:
        return [None for _ in qs]
    x = np.concatenate(arrays) if len(arrays) > 1 else arrays[0].copy()
    pos = [((n - 1) * q, math.floor((n - 1) * q), math.ceil((n - 1) * q)) for q in qs]
    idx = sorted({i for _, f, c in pos for i in (f, c)})
    x.partition(idx)
    return [float(x[f]) if f == c else _interp(float(x[f]), float(x[c]), rn - f) for rn, f, c in pos]


def pooled_order_stats(per_run: PerRun) -> dict[tuple, dict]:
    """Per group: n, min_s, q1_s, median_s, q3_s, max_s of all kept values of its runs."""
    out = {}
    for key, arrays in per_run.kept.items():
        arrays = [a for a in arrays if a.size]
        n = sum(a.size for a in arrays)
        q1, med, q3 = pooled_quantiles(arrays)
        out[key] = {"n": n, "min_s": min(float(a[0]) for a in arrays) if n else None,
                    "max_s": max(float(a[-1]) for a in arrays) if n else None,
                    "q1_s": q1, "median_s": med, "q3_s": q3}
    return out
