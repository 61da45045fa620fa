"""The gain of one configuration over another, with a confidence interval (pure functions).

gain % = 100 x (median A - median B) / median A, on the per-mpirun medians of A (e.g. the library's
default) and B (e.g. a forced algorithm): positive when B is faster. Its confidence interval is the
percentile bootstrap (Efron and Tibshirani 1993): the runs of A and of B are resampled independently
with replacement (mpiruns are the independent units, Hunold and Carpen-Amarie 2016), ``nboot`` times
with a fixed seed so that the interval is reproducible.
"""
from __future__ import annotations

import numpy as np


def gain_pct(a, b) -> float | None:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return None
    ma = float(np.median(a))
    if ma == 0:
        return None
    return 100.0 * (ma - float(np.median(b))) / ma


def gain_ci(a, b, level: float = 0.95, nboot: int = 2000, seed: int = 1) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of gain_pct(a, b); None with fewer than 3 runs on a side."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 3 or b.size < 3 or not 0 < level < 1:
        return None
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(nboot, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(nboot, b.size))], axis=1)
    ok = ma > 0
    if not ok.any():
        return None
    g = 100.0 * (ma[ok] - mb[ok]) / ma[ok]
    lo, hi = np.quantile(g, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)
