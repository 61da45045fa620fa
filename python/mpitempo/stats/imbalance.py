"""Exit imbalance of an operation started simultaneously (paper 000, section V-B, Fig. 8).

From per-rank timestamps on the global clock (timestamps.csv of the Round-Time
scheme): for every valid measurement the exit skew = last exit - first exit, and
each rank's exit offset = its exit - the first exit. Pure functions on arrays.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np


def load_exits(run_dirs: list[Path]) -> dict[str, np.ndarray]:
    """rank exit times per measurement: {'skew_s': [m], 'offsets_s': [m, p], 'nprocs': p}"""
    files = [str(d / "timestamps.csv") for d in run_dirs if (d / "timestamps.csv").exists()]
    if not files:
        return {"skew_s": np.empty(0), "offsets_s": np.empty((0, 0)), "nprocs": 0}
    con = duckdb.connect()
    lst = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    rows = con.execute(f"""
        SELECT filename, exp, rep, rank, end_s FROM read_csv({lst}, header=true, filename=true,
               columns={{'op': 'VARCHAR', 'msize': 'BIGINT', 'exp': 'INTEGER', 'rep': 'INTEGER',
                         'rank': 'INTEGER', 'start_s': 'DOUBLE', 'end_s': 'DOUBLE', 'valid': 'INTEGER'}})
        WHERE valid = 1 ORDER BY filename, exp, rep, rank""").fetchnumpy()
    p = int(rows["rank"].max()) + 1 if len(rows["rank"]) else 0
    if p == 0:
        return {"skew_s": np.empty(0), "offsets_s": np.empty((0, 0)), "nprocs": 0}
    ends = rows["end_s"].reshape(-1, p)
    return exit_stats(ends)


def exit_stats(ends: np.ndarray) -> dict[str, np.ndarray]:
    """ends: [measurements, ranks] exit times on the global clock."""
    first = ends.min(axis=1, keepdims=True)
    offsets = ends - first
    return {"skew_s": offsets.max(axis=1), "offsets_s": offsets, "nprocs": ends.shape[1]}


def summarize(skew: np.ndarray, offsets: np.ndarray) -> dict:
    if skew.size == 0:
        return {"n": 0}
    return {
        "n": int(skew.size),
        "median_skew_s": float(np.median(skew)),
        "mean_skew_s": float(np.mean(skew)),
        "p95_skew_s": float(np.quantile(skew, 0.95)),
        "max_skew_s": float(np.max(skew)),
        "per_rank": [{"rank": r, "median_exit_offset_s": float(np.median(offsets[:, r])),
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
