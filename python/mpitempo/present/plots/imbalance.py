"""Exit imbalance per algorithm variant: a box plot of exit skews on a log axis."""
from __future__ import annotations

import numpy as np

from mpitempo.present.plots import plain_text


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

    plain_text(fig)   # variant names (tick labels) and the title: text, never mathtext
    fig.tight_layout()
    return fig
