"""Checks of the method itself (Hunold and Carpen-Amarie 2016, sections 4.1-4.2 and 5.3), as pure
functions.

* ``clt_means``: the distribution of sample means for several sample sizes, by resampling the
  measurements (Fig. 2): with enough measurements per mpirun the means are close to normal, which
  the Shapiro-Wilk p-value and a Q-Q plot show.
* ``mpirun_factor``: per-mpirun means with 95% t-intervals and a Kruskal-Wallis test across runs
  (Fig. 3): a small p-value says the mpirun is a factor, so one mpirun is never enough.
* ``normalized``: runtimes of repeated campaigns (or mpiruns) divided by their minimum, and the
  maximum relative difference (Fig. 12).
"""
from __future__ import annotations

import numpy as np
from scipy import stats as sps

from mpitempo.stats.describe import mean_ci


def clt_means(x, sizes=(10, 50, 100, 500), nboot: int = 1000, seed: int = 1) -> dict[int, dict]:
    """For each sample size n: nboot means of n measurements drawn with replacement from x,
    their skewness and the Shapiro-Wilk p-value (normality of the means)."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    out = {}
    for n in sizes:
        means = x[rng.integers(0, x.size, size=(nboot, n))].mean(axis=1)
        # constant means (all-zero runtimes: flagged zero_time) have no Shapiro-Wilk test: NaN, not a warning
        sw = sps.shapiro(means[:5000]).pvalue if means.size >= 3 and np.ptp(means) > 0 else float("nan")
        out[int(n)] = {"means": means, "skewness": float(sps.skew(means)), "shapiro_p": float(sw)}
    return out


def mpirun_factor(samples: list) -> dict:
    """samples: one array of measurements per mpirun. Returns per-run mean and CI, and the
    Kruskal-Wallis H statistic and p-value across runs (None with fewer than 2 runs)."""
    samples = [np.asarray(s, dtype=float) for s in samples if len(s)]
    means = [float(s.mean()) for s in samples]
    cis = [mean_ci(s) for s in samples]
    if len(samples) >= 2 and any(np.ptp(s) > 0 for s in samples):
        h, p = sps.kruskal(*samples)
        h, p = float(h), float(p)
    else:
        h = p = None
    return {"means": means, "cis": cis, "kruskal_h": h, "kruskal_p": p}


def normalized(values) -> tuple[np.ndarray, float | None]:
    """values / min(values) and the maximum relative difference max/min - 1."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0 or v.min() <= 0:
        return v, None
    return v / v.min(), float(v.max() / v.min() - 1.0)
