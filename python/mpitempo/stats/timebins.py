"""Mean and median of consecutive measurements in bins over one long mpirun (Hunold and
Carpen-Amarie 2016, Fig. 4): how far the mean and the median lie apart, and whether the level
drifts during the run. Pure functions."""
from __future__ import annotations

import numpy as np

from mpitempo.stats.outliers import tukey_keep


def bin_size_for(n: int, bins: int = 20, minimum: int = 10) -> int:
    """Measurements per bin so that n measurements give about `bins` bins of at least `minimum`."""
    return max(minimum, n // max(1, bins))


def time_bins(x, bin_size: int, tukey_k: float | None = 1.5) -> dict[str, np.ndarray]:
    """x in measurement order; consecutive bins of bin_size values (a shorter last bin is dropped
    when it has fewer than half). Per bin, after the Tukey filter (k = tukey_k, None: no filter):
    ``start`` (index of the first measurement), ``n`` (kept), ``mean``, ``median``."""
    x = np.asarray(x, dtype=float)
    if bin_size < 1:
        raise ValueError("bin_size must be >= 1")
    out = {"start": [], "n": [], "mean": [], "median": []}
    for s in range(0, x.size, bin_size):
        b = x[s:s + bin_size]
        if b.size < max(1, bin_size // 2):
            break
        kept = b[tukey_keep(b, tukey_k)] if tukey_k is not None and b.size >= 4 else b
        out["start"].append(s)
        out["n"].append(kept.size)
        out["mean"].append(float(np.mean(kept)))
        out["median"].append(float(np.median(kept)))
    return {k: np.asarray(v) for k, v in out.items()}


def mean_median_gap(bins: dict[str, np.ndarray]) -> float | None:
    """Median over bins of 100 x (mean - median) / median."""
    if bins["median"].size == 0:
        return None
    return float(np.median(100.0 * (bins["mean"] - bins["median"]) / bins["median"]))
