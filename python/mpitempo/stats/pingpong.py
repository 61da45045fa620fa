"""Statistics of ping-pong timings (paper 004, section 3.4). Pure functions on
arrays of one-way times in seconds (ping-pong time / npp / 2).

Conventions (documented in docs/pingpong.md):
- variance is the sample variance (ddof = 1; 0 for one value), std its root;
- cv = std / mean as a fraction (the paper prints it in percent);
- se = std / sqrt(n); rse = se / mean (a fraction, as in Appendix C);
- rates are msize / time in MB/s with MB = 10^6 bytes (Appendix C: 8 B in
  1.2451 µs = 6.425 MB/s);
- filtering keeps t <= cut_coef * median of the unfiltered data, and counts
  the rest as removed (never deletes the raw data).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_CUT_COEF = 2.0


@dataclass(frozen=True)
class Summary:
    n: int
    min_s: float
    median_s: float
    mean_s: float
    max_s: float
    variance_s2: float
    std_s: float
    cv: float
    se_s: float
    rse: float

    def to_dict(self) -> dict:
        return asdict(self)


def _nan_summary(n: int = 0) -> Summary:
    nan = float("nan")
    return Summary(n, nan, nan, nan, nan, nan, nan, nan, nan, nan)


def summarize(times_s) -> Summary:
    """min, median, mean, max, variance, std, cv, se, rse of one-way times."""
    t = np.asarray(times_s, dtype=float)
    n = int(t.size)
    if n == 0:
        return _nan_summary()
    mean = float(np.mean(t))
    var = float(np.var(t, ddof=1)) if n > 1 else 0.0
    std = math.sqrt(var)
    se = std / math.sqrt(n)
    return Summary(n=n, min_s=float(np.min(t)), median_s=float(np.median(t)), mean_s=mean, max_s=float(np.max(t)),
                   variance_s2=var, std_s=std, cv=std / mean if mean != 0 else float("nan"), se_s=se,
                   rse=se / mean if mean != 0 else float("nan"))


def check_cut_coef(cut_coef: float) -> float:
    c = float(cut_coef)
    if not (c > 1.0) or not math.isfinite(c):
        raise ValueError(f"invalid cut_coef {cut_coef!r}: must be > 1 (the paper uses 2.0)")
    return c


def filter_cut(times_s, cut_coef: float = DEFAULT_CUT_COEF) -> tuple[np.ndarray, int]:
    """(kept, removed count): keeps t <= cut_coef * median(t)."""
    c = check_cut_coef(cut_coef)
    t = np.asarray(times_s, dtype=float)
    if t.size == 0:
        return t, 0
    limit = c * float(np.median(t))
    kept = t[t <= limit]
    return kept, int(t.size - kept.size)


def rate_mb_s(msize: int, time_s: float) -> float:
    """Uni-directional communication rate in MB/s (10^6 bytes per second)."""
    if not (time_s > 0) or not math.isfinite(time_s):
        return float("nan")
    return msize / time_s / 1e6


def rates(msize: int, s: Summary) -> dict:
    """Rates from the minimum, median, mean and maximum time (Appendix C)."""
    return {"rate_min_mb_s": rate_mb_s(msize, s.min_s), "rate_median_mb_s": rate_mb_s(msize, s.median_s),
            "rate_mean_mb_s": rate_mb_s(msize, s.mean_s), "rate_max_mb_s": rate_mb_s(msize, s.max_s)}


def histogram(values, bins: int = 40, upper: float | None = None, weights=None) -> dict:
    """Equal-width bins from min(values) to `upper` (default: the max), plus
    the count of values >= upper (the paper's last line "9.80 <= times").
    Returns {"edges": [...], "counts": [...], "over": n, "upper": u}."""
    v = np.asarray(values, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    if bins < 1:
        raise ValueError(f"invalid bins {bins}: must be >= 1")
    if v.size == 0:
        return {"edges": [], "counts": [], "over": 0, "upper": float("nan")}
    lo = float(np.min(v))
    hi = float(np.max(v)) if upper is None else float(upper)
    if hi <= lo:
        hi = lo + (abs(lo) * 1e-9 or 1e-12)
    inside = v <= hi if upper is None else v < hi
    counts, edges = np.histogram(v[inside], bins=bins, range=(lo, hi), weights=None if w is None else w[inside])
    over = float(np.sum(w[~inside])) if w is not None else int(np.count_nonzero(~inside))
    counts = counts.astype(int).tolist() if w is None else [int(round(c)) for c in counts]
    return {"edges": edges.tolist(), "counts": counts, "over": int(over), "upper": hi}


def frequency_table(ticks, per_tick_s: float) -> list[tuple[float, int]]:
    """Exact distinct values and their counts (Appendix B): ticks are the
    integer timer differences; per_tick_s turns one tick into seconds of the
    reported quantity (s_per_tick / (2 npp) for ping-pong times)."""
    vals, counts = np.unique(np.asarray(ticks, dtype=np.int64), return_counts=True)
    return [(float(v) * per_tick_s, int(c)) for v, c in zip(vals, counts)]


def weighted_summary(values, counts) -> Summary:
    """Summary of a frequency table (value, count) without expanding it: used
    for the timer study of 2^24 differences."""
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    if n == 0:
        return _nan_summary()
    order = np.argsort(v)
    v, c = v[order], c[order]
    cum = np.cumsum(c)

    def kth(k):  # 0-based k-th smallest
        return float(v[int(np.searchsorted(cum, k + 1))])

    med = kth(n // 2) if n % 2 else 0.5 * (kth(n // 2 - 1) + kth(n // 2))
    mean = float(np.sum(v * c) / n)
    var = float(np.sum(c * (v - mean) ** 2) / (n - 1)) if n > 1 else 0.0
    std = math.sqrt(var)
    se = std / math.sqrt(n)
    return Summary(n=n, min_s=float(v[0]), median_s=med, mean_s=mean, max_s=float(v[-1]), variance_s2=var, std_s=std,
                   cv=std / mean if mean else float("nan"), se_s=se, rse=se / mean if mean else float("nan"))
