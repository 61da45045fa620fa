"""Offsets of each rank to rank 0 over time with the whole-duration linear fits (Hunold and
Carpen-Amarie 2018, Fig. 2)."""
from __future__ import annotations

import numpy as np

from mpitempo.present.plots import plt


def drift_figure(t, offsets: dict, res: dict):
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    for q, y in offsets.items():
        line, = ax.plot(t, np.asarray(y) * 1e6, ".", ms=3, label=f"rank {q}")
        f = res["whole"][q] if q in res["whole"] else res["whole"][str(q)]
        r2 = "-" if f["r2"] is None else f"{f['r2']:.3f}"
        ax.plot(t, (f["slope"] * np.asarray(t) + f["intercept_s"]) * 1e6, "-", lw=1, color=line.get_color(),
                label=f"fit: {f['drift_ppm']:+.3f} ppm, R² {r2}")
    ax.set_xlabel("time since start [s]")
    ax.set_ylabel("offset to rank 0 [µs]")
    held = res.get("linear_holds_s")
    ax.set_title(f"clock offsets without sync, {res.get('nprocs')} ranks"
                 + ("" if held is None else f"; linear model (median R² >= 0.9) holds over {held:g} s windows")
                 + (" [SIMULATED drift]" if res.get("simulated") else ""), fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
