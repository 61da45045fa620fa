"""Descriptive statistics and confidence intervals: pure functions on arrays, the one place where
a median, a quantile, a standard deviation or a confidence interval of the median is computed.

* ``describe(x)``: n, min, Q1, median, mean, Q3, max, std (n - 1), CV = std/mean, SE = std/sqrt(n),
  RSE = SE/mean, as in the per-mpirun analysis of Hunold and Carpen-Amarie 2016 (Alg. 3) and the
  full statistics of Luecke et al. 2009 (section 3.4). Quartiles are linear-interpolated (numpy's
  default, DuckDB ``quantile_cont``); the median is ``np.median``.
  Two conventions, one computation:

  - summary/compare JSON (default): a quantity that is not defined is ``None``: every statistic of
    no value, the spread (std, cv, se, rse) of one value, cv and rse when the mean is 0;
  - ping-pong (``missing=nan, one_value_spread=0.0, variance=True``, docs/pingpong.md): undefined is
    NaN, one value has variance, std and se 0, and the sample variance ``variance_s2`` is added.

  ``weights`` describes a frequency table (value, count) as if every value were repeated count
  times, without expanding it.
* ``median_ci(x)``: the distribution-free confidence interval of the median from order statistics
  (binomial(n, 1/2)); it exists only from 6 values at 95% (n = 5 covers at most 93.75%), so callers
  say "need >= 6 runs" instead of printing an interval the data cannot support.
* ``mean_ci(x)``: the Student-t interval of the mean.

The bulk versions of these statistics (DuckDB, one row per mpirun or group) are in
``mpitempo.analysis.summary``.
"""
from __future__ import annotations

import math

import numpy as np

STAT_KEYS = ("n", "min_s", "q1_s", "median_s", "mean_s", "q3_s", "max_s", "std_s", "cv", "se_s", "rse")


def median(x) -> float:
    """The median (mean of the two middle values for an even count); NaN for no value."""
    x = np.asarray(x, dtype=float)
    return float(np.median(x)) if x.size else float("nan")


def quantile(x, q):
    """Linear-interpolated quantile(s) (numpy's default, DuckDB ``quantile_cont``); NaN for no value."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return float("nan") if np.ndim(q) == 0 else [float("nan")] * len(q)
    r = np.quantile(x, q)
    return float(r) if np.ndim(q) == 0 else [float(v) for v in r]


def _weighted_order(v: np.ndarray, c: np.ndarray):
    """The k-th smallest (0-based) of the values repeated by their counts, and the quantiles."""
    order = np.argsort(v, kind="stable")
    v, c = v[order], c[order]
    cum = np.cumsum(c)
    n = int(cum[-1])

    def kth(k: int) -> float:
        return float(v[int(np.searchsorted(cum, k + 1))])

    def q(p: float) -> float:  # numpy's linear method on the expanded data
        h = p * (n - 1)
        lo = math.floor(h)
        a, b = kth(lo), kth(min(lo + 1, n - 1))
        return a + (h - lo) * (b - a)

    med = kth(n // 2) if n % 2 else (kth(n // 2 - 1) + kth(n // 2)) / 2
    return float(v[0]), q(0.25), med, q(0.75), float(v[-1])


def describe(x, *, weights=None, missing=None, one_value_spread: float | None = None,
             variance: bool = False) -> dict:
    """Descriptive statistics of ``x`` with the keys of STAT_KEYS (plus ``variance_s2`` before
    ``std_s`` when ``variance``). ``missing`` stands for undefined quantities (None in JSON, NaN
    for ping-pong); ``one_value_spread`` is the variance, std and se of a single value (None: undefined)."""
    x = np.asarray(x, dtype=float).ravel()
    if weights is None:
        n = int(x.size)
    else:
        w = np.asarray(weights, dtype=np.int64).ravel()
        if w.shape != x.shape:
            raise ValueError(f"weights: {w.size} counts for {x.size} values")
        x, w = x[w > 0], w[w > 0]
        n = int(w.sum())
    keys = STAT_KEYS[:7] + (("variance_s2",) if variance else ()) + STAT_KEYS[7:]
    if n == 0:
        return dict.fromkeys(keys, missing) | {"n": 0}
    if weights is None:
        q1, q3 = np.quantile(x, [0.25, 0.75])
        lo, q1, med, q3, hi = float(x.min()), float(q1), float(np.median(x)), float(q3), float(x.max())
        mean = float(np.mean(x))
        var = float(np.var(x, ddof=1)) if n > 1 else None
    else:
        lo, q1, med, q3, hi = _weighted_order(x, w)
        mean = float(np.sum(x * w) / n)
        var = float(np.sum(w * (x - mean) ** 2) / (n - 1)) if n > 1 else None
    if var is None and one_value_spread is not None:
        var = float(one_value_spread) ** 2
    std = math.sqrt(var) if var is not None else None
    se = std / math.sqrt(n) if std is not None else None
    d = {"n": n, "min_s": lo, "q1_s": q1, "median_s": med, "mean_s": mean, "q3_s": q3, "max_s": hi}
    if variance:
        d["variance_s2"] = var if var is not None else missing
    d.update({"std_s": std if std is not None else missing,
              "cv": std / mean if std is not None and mean else missing,
              "se_s": se if se is not None else missing,
              "rse": se / mean if se is not None and mean else missing})
    return d


def binom_half_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ binomial(n, 1/2), exactly (integer sums; no scipy import, so that `summary`
    starts fast)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)


def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    """1-based ranks (l, u) of the order statistics with P(x_(l) <= median <= x_(u)) >= level, the
    narrowest symmetric pair; None when even (1, n) does not reach the level. The coverage of
    (x_(l), x_(n-l+1)) is 1 - 2 P(B <= l - 1) with B ~ binomial(n, 1/2): the distribution-free
    interval obtained by inverting the sign test (e.g. Conover 1999, Practical Nonparametric Statistics)."""
    if n < 1:
        return None
    best = None
    for l in range(1, n // 2 + 1):
        cover = 1.0 - 2.0 * binom_half_cdf(l - 1, n)
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


# The looks of an adaptive campaign (analysis.adaptive, runner.adaptive): mpiruns are added until
# the interval of the median is narrow enough, each look's interval at a Bonferroni-corrected level.
ALPHA = 0.05
RUN_GROWTH = 1.5


def run_looks(first: int, cap: int) -> list[int]:
    """The numbers of mpiruns at which a campaign looks: first, then x RUN_GROWTH (at least +1), the cap last."""
    first = max(1, int(first))
    cap = max(first, int(cap))
    looks, n = [first], first
    while n < cap:
        n = min(cap, max(n + 1, math.ceil(n * RUN_GROWTH)))
        looks.append(n)
    return looks


def looks_level(k: int) -> float:
    """The level of each of k looks' intervals: 1 - ALPHA / k (Bonferroni)."""
    return 1.0 - ALPHA / max(1, k)


def median_ci(x, level: float = 0.95) -> dict:
    """{level, lo_s, hi_s, coverage, need_runs}: lo/hi None and need_runs set when n is too small."""
    x = np.sort(np.asarray(x, dtype=float))
    r = median_ci_ranks(x.size, level)
    if r is None:
        return {"level": level, "lo_s": None, "hi_s": None, "coverage": None, "need_runs": runs_needed(level)}
    l, u = r
    cover = 1.0 - 2.0 * binom_half_cdf(l - 1, x.size)
    return {"level": level, "lo_s": float(x[l - 1]), "hi_s": float(x[u - 1]), "coverage": float(cover),
            "need_runs": None}


def mean_ci(x, level: float = 0.95) -> tuple[float, float] | None:
    """Student-t confidence interval of the mean (None below 2 values)."""
    from scipy import stats as sps

    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return None
    m, se = float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(x.size))
    h = float(sps.t.ppf(0.5 + level / 2, x.size - 1)) * se
    return m - h, m + h
