"""The Gantt chart of a trace (Hunold and Carpen-Amarie 2018, Fig. 10): the chosen instances of
one MPI call, one bar per rank per call, on the raw local timestamps (left) and on the global
clock (right). On the global clock the wait state of each rank (mpitempo.stats.waitstates: the
time until the last rank, or the root, arrived) is hatched."""
from __future__ import annotations

import numpy as np

from mpitempo.stats.trace import CLOCKS
from mpitempo.stats.waitstates import collective_waits


def _unit(span_s: float) -> tuple[float, str]:
    if span_s < 5e-3:
        return 1e6, "µs"
    if span_s < 5.0:
        return 1e3, "ms"
    return 1.0, "s"


def gantt(ev: dict, instances: list[list[int]], call: str, title: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = sorted({int(ev["rank"][i]) for rows in instances for i in rows})
    extra = 0.7 if ev.get("site_label") is not None else 0.0   # room for the call sites in the legend
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.2 + extra + 0.35 * max(len(ranks), 2)), sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (clock, label) in zip(axes, (("raw", "raw local timestamps"), ("global", "global clock"))):
        a, b = CLOCKS[clock]
        t0 = np.asarray(ev[a], dtype=float)
        t1 = np.asarray(ev[b], dtype=float)
        rows_all = [i for rows in instances for i in rows]
        if not rows_all:
            ax.set_title(f"{label}: no instance")
            continue
        origin = t0[rows_all].min()
        scale, unit = _unit(t1[rows_all].max() - origin)
        hatched = False
        site_wait: dict[str, float] = {}   # the waits drawn, per call site (legend)
        labels = ev.get("site_label")
        for k, rows in enumerate(instances):
            c = colors[k % len(colors)]
            for i in rows:
                y = int(ev["rank"][i])
                x0, w = (t0[i] - origin) * scale, max((t1[i] - t0[i]) * scale, 0.0)
                ax.broken_barh([(x0, w)], (y - 0.35, 0.7), facecolors=c, edgecolors="black", linewidth=0.4)
                ax.plot([x0], [y], marker="|", color="black", markersize=8)   # the start, visible at any zoom
            if clock == "global":
                for i, _p, wt in collective_waits(ev, rows, t0, t1):
                    ax.broken_barh([((t0[i] - origin) * scale, wt * scale)], (int(ev["rank"][i]) - 0.35, 0.7),
                                   facecolors="none", edgecolors="black", hatch="////", linewidth=0)
                    hatched = True
                    site = (labels[i] if labels is not None else "") or "unknown site"
                    site_wait[site] = site_wait.get(site, 0.0) + wt
        if hatched:
            from matplotlib.patches import Patch

            from mpitempo.safe_text import safe

            handles = [Patch(facecolor="white", edgecolor="black", hatch="////", label="wait state")]
            for site, wt in sorted(site_wait.items(), key=lambda kv: -kv[1])[:4]:
                handles.append(Patch(facecolor="none", edgecolor="none",
                                     label=f"{safe(site)[:60]}: {wt * scale:.3g} {unit}"))
            ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False,
                      title="waits at call site" if len(handles) > 1 else None, title_fontsize=7)
        ax.set_xlabel(f"time [{unit}] since the earliest start on this clock")
        ax.set_title(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ranks, [f"rank {r}" for r in ranks])
    axes[0].invert_yaxis()
    fig.suptitle(title)
    from mpitempo.present.plots import plain_text

    plain_text(fig)   # call names and call sites from the trace: text, never mathtext
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
