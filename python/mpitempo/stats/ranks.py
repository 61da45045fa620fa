"""Rank statistics that `summary` needs, without importing scipy.stats (which costs about a second
of start-up): average ranks, Spearman's rho, and the Kruskal-Wallis test with its chi-square
p-value. Pure functions (numpy and math); tests/py/test_ranks.py checks them against scipy.

* Spearman's rho: Pearson's correlation of the average ranks (ties get the mean of their ranks).
* Kruskal-Wallis H (Kruskal and Wallis 1952): H = 12 / (N (N + 1)) sum R_i^2 / n_i - 3 (N + 1),
  divided by the tie correction 1 - sum(t^3 - t) / (N^3 - N); p = P(chi2(k - 1) >= H).
* chi2_sf(x, df) = Q(df / 2, x / 2), the regularised upper incomplete gamma function: its power
  series for x < a + 1, else its continued fraction (modified Lentz), both to double precision.
"""
from __future__ import annotations

import math

import numpy as np


def rankdata(x) -> np.ndarray:
    """Average ranks (1-based), ties get the mean of the ranks they span."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    ranks = np.empty(x.size, dtype=float)
    i = 0
    while i < x.size:
        j = i
        while j + 1 < x.size and xs[j + 1] == xs[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman_rho(x, y) -> float:
    """Spearman's rank correlation (nan when a side is constant)."""
    rx, ry = rankdata(x), rankdata(y)
    if rx.size < 2 or np.all(rx == rx[0]) or np.all(ry == ry[0]):
        return float("nan")
    rx -= rx.mean()
    ry -= ry.mean()
    return float(np.sum(rx * ry) / math.sqrt(np.sum(rx * rx) * np.sum(ry * ry)))


def _gamma_p_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    ap = a
    for _ in range(10000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a: float, x: float) -> float:
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x: float, df: float) -> float:
    """P(chi2(df) >= x)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if x <= 0:
        return 1.0
    a, h = df / 2.0, x / 2.0
    if h < a + 1.0:
        return max(0.0, 1.0 - _gamma_p_series(a, h))
    return min(1.0, _gamma_q_fraction(a, h))


def kruskal(*groups) -> tuple[float, float]:
    """(H, p) of the Kruskal-Wallis test over two or more groups (p = nan when every value ties)."""
    gs = [np.asarray(g, dtype=float) for g in groups]
    if len(gs) < 2 or any(g.size == 0 for g in gs):
        raise ValueError("kruskal needs at least two non-empty groups")
    allx = np.concatenate(gs)
    n = allx.size
    r = rankdata(allx)
    h, start = 0.0, 0
    for g in gs:
        h += r[start:start + g.size].sum() ** 2 / g.size
        start += g.size
    h = 12.0 / (n * (n + 1)) * h - 3.0 * (n + 1)
    _, counts = np.unique(allx, return_counts=True)
    corr = 1.0 - float(np.sum(counts ** 3 - counts)) / (n ** 3 - n)
    if corr <= 0:
        return float("nan"), float("nan")
    h /= corr
    return float(h), chi2_sf(h, len(gs) - 1)
