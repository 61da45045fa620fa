"""Regime changes inside one run: change points of the level of a time series of measurements
(in the order they were taken). Pure functions.

``change_points(x)``: binary segmentation of log(x) (winsorised at its 1st and 99th percentiles, so
single OS-noise spikes do not make segments) under a piecewise-constant mean. A split is kept when
the two sides differ by at least MIN_REL_SHIFT (relative level) and by Z_MIN standard errors, and
each side has at least max(MIN_SEG, 2% of the series). ``segments(x)`` returns the levels
(median of each segment) with their start, end and share of the series: e.g. 1.3 µs for the first
35% of a long run, then 0.46 µs (the machine changed state).
"""
from __future__ import annotations

import numpy as np

MIN_REL_SHIFT = 0.10    # levels closer than 10% are one level
Z_MIN = 16.0            # the shift in standard errors of the difference of the two means (docs/methods.md, "Flag rates")
MIN_SEG = 50            # measurements per segment
MAX_SEGMENTS = 6


def _best_split(c1: np.ndarray, c2: np.ndarray, lo: int, hi: int, minseg: int):
    """Index k (lo + minseg <= k <= hi - minseg) maximising the between-segment sum of squares."""
    n = hi - lo
    k = np.arange(lo + minseg, hi - minseg + 1)
    if k.size == 0:
        return None
    s_left = c1[k] - c1[lo]
    s_all = c1[hi] - c1[lo]
    nl = (k - lo).astype(float)
    nr = n - nl
    gain = (s_left ** 2) / nl + ((s_all - s_left) ** 2) / nr - s_all ** 2 / n
    j = int(np.argmax(gain))
    return int(k[j])


def change_points(x) -> list[int]:
    """Sorted indices where a new level starts (empty when the series has one level)."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x) & (x > 0)
    x = x[ok]
    n = x.size
    minseg = max(MIN_SEG, int(0.02 * n))
    if n < 2 * minseg:
        return []
    y = np.log(x)
    lo_q, hi_q = np.quantile(y, [0.01, 0.99])
    y = np.clip(y, lo_q, hi_q)
    c1 = np.concatenate([[0.0], np.cumsum(y)])
    c2 = np.concatenate([[0.0], np.cumsum(y * y)])
    cps: list[int] = []
    todo = [(0, n)]
    while todo and len(cps) < MAX_SEGMENTS - 1:
        lo, hi = todo.pop()
        if hi - lo < 2 * minseg:
            continue
        k = _best_split(c1, c2, lo, hi, minseg)
        if k is None:
            continue
        a, b = y[lo:k], y[k:hi]
        shift = abs(np.median(b) - np.median(a))
        se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size) if a.size > 1 and b.size > 1 else 0.0
        if shift < np.log1p(MIN_REL_SHIFT) or (se > 0 and (abs(b.mean() - a.mean()) / se) < Z_MIN):
            continue
        cps.append(k)
        todo += [(lo, k), (k, hi)]
    return sorted(cps)


def segments(x) -> list[dict]:
    """[{start, end, share, center_s}] of the levels (one entry when none changed)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size == 0:
        return []
    bounds = [0] + change_points(x) + [x.size]
    return [{"start": a, "end": b, "share": (b - a) / x.size, "center_s": float(np.median(x[a:b]))}
            for a, b in zip(bounds[:-1], bounds[1:])]
