"""Comparison of two samples of per-mpirun medians (Hunold and Carpen-Amarie 2016, section 5.2).

The Wilcoxon rank-sum / Mann-Whitney U test (scipy.stats.mannwhitneyu): the exact distribution of
U when a side has <= 8 runs (conservative with ties), otherwise scipy's choice (exact without ties
for small samples, else the normal approximation with tie and continuity correction). ``alternative``
is about A relative to B: ``less`` tests "A is faster than B" (A's runtimes stochastically smaller).
"""
from __future__ import annotations

import math

import numpy as np

from mpitempo.stats.describe import describe

ALTERNATIVES = ("two-sided", "less", "greater")
ALPHA = 0.05


def stars(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    if p <= 0.001:
        return "***"
    if p <= 0.01:
        return "**"
    if p <= 0.05:
        return "*"
    return ""


def min_p(n1: int, n2: int, alternative: str = "two-sided") -> float:
    """The smallest p-value the exact rank-sum test can give with n1 vs n2 values (no ties):
    one arrangement of C(n1+n2, n1), doubled for two-sided (3 vs 3: 0.1)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    p = 1.0 / math.comb(n1 + n2, n1)
    return min(1.0, 2 * p) if alternative == "two-sided" else p


def min_runs_for(alpha: float = ALPHA, alternative: str = "two-sided") -> int:
    """Smallest n such that n vs n runs can reach p <= alpha."""
    n = 1
    while min_p(n, n, alternative) > alpha:
        n += 1
    return n


def mann_whitney(a, b, alternative: str = "two-sided") -> tuple[float | None, float | None]:
    """(U of a, p-value); (None, None) when a side is empty."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return None, None
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        return float(a.size * b.size / 2), 1.0   # all values equal: no evidence either way
    # scipy's default switches to the normal approximation as soon as there are ties, which is
    # anti-conservative for a handful of runs (3 vs 3 tied: p = 0.047 although no arrangement can
    # give less than 0.1); the exact distribution is used whenever a side has <= 8 runs.
    from scipy import stats as sps

    method = "exact" if min(a.size, b.size) <= 8 else "auto"
    res = sps.mannwhitneyu(a, b, alternative=alternative, method=method)
    return float(res.statistic), float(res.pvalue)


def holm(pvals) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (None stays None)."""
    idx = [i for i, p in enumerate(pvals) if p is not None]
    m = len(idx)
    order = sorted(idx, key=lambda i: pvals[i])
    adj: list[float | None] = [None] * len(pvals)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvals[i]))
        adj[i] = running
    return adj


def delta_pct(med_a: float | None, med_b: float | None) -> float | None:
    """100 x (B - A) / A: negative when B is faster."""
    if med_a is None or med_b is None or med_a == 0:
        return None
    return 100.0 * (med_b - med_a) / med_a


TESTS = ("ranksum", "ttest")


def welch_t(a, b, alternative: str = "two-sided") -> tuple[float | None, float | None]:
    """(t, p) of Welch's two-sample t-test on the means; (None, None) with fewer than 2 values a
    side or no variance at all. Valid only when both sample means are near normal (docs/statistics.md)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return None, None
    from scipy import stats as sps

    res = sps.ttest_ind(a, b, equal_var=False, alternative=alternative)
    return float(res.statistic), float(res.pvalue)


def compare_samples(a, b, alternative: str = "two-sided", alpha: float = ALPHA, test: str = "ranksum") -> dict:
    """The comparison of one group: medians of both sides (of the run medians), their dispersion
    (relative half-range of the middle 50%, as benchstat's ±), delta %, U (or t), p and stars.
    test: "ranksum" (Wilcoxon rank-sum / Mann-Whitney U, the default) or "ttest" (Welch)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if test not in TESTS:
        raise ValueError(f"unknown test '{test}' (allowed: {', '.join(TESTS)})")
    u, p = mann_whitney(a, b, alternative) if test == "ranksum" else welch_t(a, b, alternative)
    da, db = describe(a), describe(b)
    med_a, med_b = da["median_s"], db["median_s"]

    def disp(d):
        if d["n"] < 2 or not d["median_s"]:
            return None
        return 100.0 * (d["q3_s"] - d["q1_s"]) / 2 / d["median_s"]

    return {"runs_a": int(a.size), "runs_b": int(b.size), "median_a_s": med_a, "median_b_s": med_b,
            "iqr_pct_a": disp(da), "iqr_pct_b": disp(db),
            "delta_pct": delta_pct(med_a, med_b), "u": u if test == "ranksum" else None, "p_value": p,
            "min_p": min_p(int(a.size), int(b.size), alternative) if test == "ranksum" else None,
            **({"t": u, "test": "ttest"} if test == "ttest" else {}),
            "significant": p is not None and p <= alpha, "stars": stars(p)}
