"""Statistics of ping-pong timings (Luecke et al. 2009, section 3.4). Pure functions on
arrays of one-way times in seconds (ping-pong time / npp / 2).

The statistics come from ``stats.describe.describe`` and the filter from
``stats.outliers.cutcoef_keep``, the same functions the campaign summary uses; this module fixes
the ping-pong conventions (documented in docs/pingpong.md):
- variance is the sample variance (ddof = 1; 0 for one value), std its root;
- cv = std / mean as a fraction (Luecke et al. print it in percent);
- se = std / sqrt(n); rse = se / mean (a fraction, as in Appendix C);
- an undefined quantity (no value, or cv and rse of a zero mean) is NaN;
- rates are msize / time in MB/s with MB = 10^6 bytes (Appendix C: 8 B in
  1.2451 µs = 6.425 MB/s);
- filtering keeps t <= cut_coef * median of the unfiltered data, and counts
  the rest as removed (never deletes the raw data).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from mpitempo.stats.describe import describe
from mpitempo.stats.outliers import cutcoef_keep

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


_FIELDS = tuple(f.name for f in fields(Summary))


def _summary(times_s, weights=None) -> Summary:
    d = describe(times_s, weights=weights, missing=float("nan"), one_value_spread=0.0, variance=True)
    return Summary(**{k: d[k] for k in _FIELDS})


def summarize(times_s) -> Summary:
    """min, median, mean, max, variance, std, cv, se, rse of one-way times: describe() with the
    ping-pong conventions (NaN when undefined, variance 0 for one value)."""
    return _summary(times_s)


def check_cut_coef(cut_coef: float) -> float:
    c = float(cut_coef)
    if not (c > 1.0) or not math.isfinite(c):
        raise ValueError(f"invalid cut_coef {cut_coef!r}: must be > 1 (Luecke et al. 2009 use 2.0)")
    return c


def filter_cut(times_s, cut_coef: float = DEFAULT_CUT_COEF) -> tuple[np.ndarray, int]:
    """(kept, removed count): keeps t <= cut_coef * median(t) (outliers.cutcoef_keep), in order."""
    c = check_cut_coef(cut_coef)
    t = np.asarray(times_s, dtype=float)
    kept = t[cutcoef_keep(t, c)]
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
    the count of values >= upper (the last line "9.80 <= times" of Luecke et al. 2009, Appendix A).
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
    # values a few ulps apart: numpy cannot cut so narrow a range into finite bins; widen the range
    # (not the selection above) to a relative 1e-9
    hi = max(hi, lo + (abs(lo) * 1e-9 or 1e-12))
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
    return _summary(values, weights=counts)
