"""Exit imbalance of an operation started simultaneously (Hunold and Carpen-Amarie 2018,
hierarchical clock synchronization in MPI, section V-B, Fig. 8).

From per-rank timestamps on the global clock (timestamps.csv of the Round-Time
scheme): for every valid measurement the exit skew = last exit - first exit, and
each rank's exit offset = its exit - the first exit. Pure functions on arrays; reading the
files is ``mpitempo.analysis.imbalance.load_exits``.
"""
from __future__ import annotations

import numpy as np

from mpitempo.stats.describe import describe, median, quantile


def exit_stats(ends: np.ndarray) -> dict[str, np.ndarray]:
    """ends: [measurements, ranks] exit times on the global clock."""
    first = ends.min(axis=1, keepdims=True)
    offsets = ends - first
    return {"skew_s": offsets.max(axis=1), "offsets_s": offsets, "nprocs": ends.shape[1]}


def summarize(skew: np.ndarray, offsets: np.ndarray) -> dict:
    """Median, mean, 95th percentile and maximum of the exit skew, and per rank the median exit
    offset and the share of measurements in which the rank exits last."""
    if skew.size == 0:
        return {"n": 0}
    d = describe(skew)
    return {
        "n": d["n"],
        "median_skew_s": d["median_s"],
        "mean_skew_s": d["mean_s"],
        "p95_skew_s": quantile(skew, 0.95),
        "max_skew_s": d["max_s"],
        "per_rank": [{"rank": r, "median_exit_offset_s": median(offsets[:, r]),
                      "last_to_exit_fraction": float(np.mean(offsets[:, r] == skew))}
                     for r in range(offsets.shape[1])],
    }
