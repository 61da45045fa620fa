"""The latency matrix of `pingpong --pairs` as a heat map."""
from __future__ import annotations

import numpy as np

from mpitempo.present.plots import plain_text, plt


def heatmap(mat, title: str, hosts: list[str] | None = None):
    n = len(mat)
    a = np.array([[np.nan if v is None else v * 1e6 for v in row] for row in mat], dtype=float)
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * n + 1.5, 1.0 + 0.55 * n))
    im = ax.imshow(np.ma.masked_invalid(a), cmap="viridis", origin="upper")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("one-way latency [µs]")
    labels = [f"{i}" + (f"\n{hosts[i]}" if hosts else "") for i in range(n)]
    ax.set_xticks(range(n), labels, fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.set_xlabel("rank")
    ax.set_ylabel("rank")
    if n <= 16:
        for i in range(n):
            for j in range(n):
                if not np.isnan(a[i, j]):
                    ax.text(j, i, f"{a[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if a[i, j] < np.nanmean(a) else "black")
    ax.set_title(title, fontsize=9)
    plain_text(fig)   # hostnames (tick labels) from the runs' files: text, never mathtext
    fig.tight_layout()
    return fig
