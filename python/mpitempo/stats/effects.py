"""Effect sizes and equivalence for two samples of per-mpirun medians: pure functions.

* ``hodges_lehmann(a, b, level)``: the Hodges-Lehmann estimate of the shift B - A (the median of
  all m x n differences b_j - a_i) with its distribution-free confidence interval, the order
  statistics of those differences at the critical values of the Mann-Whitney U distribution
  (Hollander, Wolfe and Chicken 2014, section 4.3). The U distribution is exact (counted) while
  m x n <= EXACT_MAX_CELLS, else the normal approximation.
* ``tost(a, b, margin_rel, alpha)``: equivalence within +-margin (relative to A's median) by two
  one-sided Mann-Whitney tests (Schuirmann 1987, with rank tests): H0 "shift <= -d" and H0
  "shift >= +d", d = margin_rel x median(A); p = the larger of the two; equivalent when p <= alpha.
* ``verdict(...)``: the one-line answer per (op, size) of `mpitempo compare`.
* ``runs_needed(medians, rel)``: how many mpiruns put the 95% CI of the centre within +-rel of it.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from mpitempo.stats.compare import mann_whitney
from mpitempo.stats.describe import runs_needed as ci_min_runs

EXACT_MAX_CELLS = 2500      # m x n up to which the U distribution is counted exactly
NOISE_PCT = 1.0             # without --equivalence: a significant shift smaller than this is not a finding


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple:
    """Number of arrangements of m A's and n B's with U = 0..m*n (the coefficients of the
    Gaussian binomial coefficient), by the recurrence f(m, n) = q^n f(m-1, n) + f(m, n-1)."""
    prev = [np.ones(1, dtype=object) for _ in range(n + 1)]   # m = 0: one arrangement, U = 0
    for i in range(1, m + 1):
        cur = [np.ones(1, dtype=object)]                        # n = 0
        for j in range(1, n + 1):
            f = np.zeros(i * j + 1, dtype=object)
            a = prev[j]                                         # f(i-1, j), shifted by j
            f[j:j + a.size] += a
            b = cur[j - 1]                                      # f(i, j-1)
            f[:b.size] += b
            cur.append(f)
        prev = cur
    return tuple(prev[n])


def u_crit(m: int, n: int, alpha_one_side: float) -> int:
    """The largest k with P(U <= k - 1) <= alpha_one_side under H0 (0 when none): the CI of the
    shift is (D_(k), D_(mn - k + 1)) of the sorted differences D (1-based)."""
    if m * n <= EXACT_MAX_CELLS:
        c = np.array(_u_counts(m, n), dtype=float)
        cdf = np.cumsum(c) / c.sum()
        # P(U <= k - 1) = cdf[k - 1]
        k = 0
        while k < m * n and cdf[k] <= alpha_one_side + 1e-12:
            k += 1
        return k
    from scipy import stats as sps

    z = sps.norm.ppf(1 - alpha_one_side)
    k = int(math.floor(m * n / 2.0 - z * math.sqrt(m * n * (m + n + 1) / 12.0)))
    return max(k, 0)


def hodges_lehmann(a, b, level: float = 0.95) -> dict:
    """{shift_s, ci_lo_s, ci_hi_s, level}: the shift B - A and its CI (None where it cannot be given:
    an empty side, or too few runs for the level)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    out = {"shift_s": None, "ci_lo_s": None, "ci_hi_s": None, "level": level}
    if a.size == 0 or b.size == 0:
        return out
    d = np.sort((b[None, :] - a[:, None]).ravel())
    out["shift_s"] = float(np.median(d))
    k = u_crit(a.size, b.size, (1 - level) / 2)
    if k >= 1:
        out["ci_lo_s"] = float(d[k - 1])
        out["ci_hi_s"] = float(d[d.size - k])
    return out


def tost(a, b, margin_rel: float, alpha: float = 0.05) -> dict:
    """{p_value, equivalent, margin_s}: two one-sided Mann-Whitney tests of |shift| < margin_rel x median(A)."""

    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0 or margin_rel is None:
        return {"p_value": None, "equivalent": None, "margin_s": None}
    d = margin_rel * float(np.median(a))
    # H0: shift <= -d  vs  H1: shift > -d  <=>  b + d stochastically greater than a
    _, p1 = mann_whitney(b + d, a, "greater")
    # H0: shift >= +d  vs  H1: shift < +d  <=>  b - d stochastically smaller than a
    _, p2 = mann_whitney(b - d, a, "less")
    p = max(p1, p2)
    return {"p_value": p, "equivalent": bool(p <= alpha), "margin_s": d}


def verdict(delta_pct: float | None, effect_pct: float | None, ci_pct: tuple | None, significant: bool,
            p_value: float | None, equivalent: bool | None, margin_pct: float | None,
            min_p: float | None = None, alpha: float = 0.05) -> str:
    """One line: what a user may conclude from one comparison."""
    if p_value is None or effect_pct is None:
        return "not compared (a side has no runs)"
    ci = f" (CI {ci_pct[0]:+.2f}% .. {ci_pct[1]:+.2f}%)" if ci_pct and ci_pct[0] is not None else ""
    faster = "faster" if effect_pct < 0 else "slower"
    if equivalent:
        return f"equivalent within ±{margin_pct:g}%: shift {effect_pct:+.2f}%{ci}"
    threshold = margin_pct if margin_pct is not None else NOISE_PCT
    if significant:
        if abs(effect_pct) < threshold:
            what = f"inside the ±{margin_pct:g}% margin" if margin_pct is not None else \
                f"below {NOISE_PCT:g}% (not a finding; --equivalence tests it)"
            return f"significant (p={p_value:.3g}) but the shift {effect_pct:+.2f}%{ci} is {what}"
        return f"B is {abs(effect_pct):.2f}% {faster}{ci}, p={p_value:.3g}"
    if min_p is not None and min_p > alpha:
        return f"inconclusive: too few runs to reach p <= {alpha:g}"
    extra = "; not shown equivalent either" if margin_pct is not None else ""
    return f"no significant difference (n.s., shift {effect_pct:+.2f}%{ci}){extra}"


def runs_needed(medians, rel: float = 0.05, level: float = 0.95) -> int | None:
    """mpiruns for a CI of the centre (median of run medians) within +-rel of it: from the spread
    of the run medians, with the asymptotic standard error of a median, sqrt(pi/2) x sd / sqrt(n)
    (normal data), and at least the runs the distribution-free CI needs. None with < 3 runs."""
    from statistics import NormalDist      # not scipy.stats: `summary` would import it for this one quantile

    x = np.asarray(medians, dtype=float)
    if x.size < 3:
        return None
    centre = float(np.median(x))
    if centre <= 0:
        return None
    sd = float(np.std(x, ddof=1))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    n = math.ceil((z * math.sqrt(math.pi / 2) * sd / (rel * centre)) ** 2)
    return max(n, ci_min_runs(level))
