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


def __getattr__(name: str):
    # Transitional: cmd_imbalance.py still calls ``imb.load_exits`` through this module. Remove once
    # it imports mpitempo.analysis.imbalance (tests/py/test_stats_layers.py fails as a reminder).
    if name == "load_exits":
        from mpitempo.analysis.imbalance import load_exits
        return load_exits
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def boxplot(names: list[str], skews: list[np.ndarray], title: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * len(names) + 1), 3.8))
    # log scale: the bulk is sub-microsecond, preemption outliers reach milliseconds
    data = [np.maximum(s * 1e6, 1e-3) if s.size else np.array([np.nan]) for s in skews]
    ax.boxplot(data, showfliers=True, flierprops={"markersize": 2, "alpha": 0.4})
    ax.set_yscale("log")
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
    ax.set_ylabel("exit skew [µs] (last exit - first exit)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
