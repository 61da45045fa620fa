"""Plots of allreduce trees (Bongo, Anshus and Bjorndalen 2004): the timemap (Fig. 2), the
configuration-comparison timemap (Fig. 3a) and the serialization plot (Fig. 3b)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

US = 1e6


def _stage_names(ax, tm: dict, yd, yu, color) -> None:
    """Each stage's name (reduce@3, link 3>1, wait@1 ...) at the point where the stage ends: down
    stages to the left of their point, up stages to the right."""
    for names, xs, ys, ha, dx in ((tm.get("down_names") or [], tm["down_x_s"], yd, "right", -3),
                                  (tm.get("up_names") or [], tm["up_x_s"], yu, "left", 3)):
        for i, name in enumerate(names[:len(xs) - 1]):
            ax.annotate(name, (xs[i + 1] * US, ys[i + 1]), xytext=(dx, 0), textcoords="offset points",
                        fontsize=6, color=color, ha=ha, va="center")


def _curve(ax, tm: dict, color, label, scale_to: float | None = None, style="-", names: bool = False):
    """One path: down stages at x < 0, up stages at x > 0; y = stage index from the rank (0) to the
    root. scale_to: stretch y so that paths of unequal length share y0 and ymax (Fig. 3a).
    names: write each stage's name beside its point."""
    yd = np.arange(len(tm["down_x_s"]), dtype=float)
    yu = np.arange(len(tm["up_x_s"]), dtype=float)
    if scale_to:
        yd = yd / max(yd[-1], 1) * scale_to
        yu = yu / max(yu[-1], 1) * scale_to
    ax.plot(np.asarray(tm["down_x_s"]) * US, yd, style, color=color, marker=".", label=label)
    ax.plot(np.asarray(tm["up_x_s"]) * US, yu, style, color=color, marker=".")
    if names:
        _stage_names(ax, tm, yd, yu, color)


def timemap(timemaps: dict, groups: list[dict] | None, title: str) -> plt.Figure:
    """Every path's timemap, coloured by its group (the representative drawn bold)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    cmap = plt.get_cmap("tab10")
    color = {}
    reps = set()
    for gi, g in enumerate(groups or []):
        for r in g["ranks"]:
            color[r] = cmap(gi % 10)
        reps.add(g["representative_rank"])
    for r, tm in sorted(timemaps.items()):
        lw = 2.2 if r in reps else 0.8
        yd = np.arange(len(tm["down_x_s"]))
        yu = np.arange(len(tm["up_x_s"]))
        c = color.get(r, "grey")
        ax.plot(np.asarray(tm["down_x_s"]) * US, yd, color=c, lw=lw, marker=".", alpha=0.9)
        ax.plot(np.asarray(tm["up_x_s"]) * US, yu, color=c, lw=lw, marker=".", alpha=0.9)
        if r in reps:
            ax.annotate(f"rank {r}", (tm["up_x_s"][0] * US, yu[0]), xytext=(3, -8), textcoords="offset points",
                        fontsize=7, color=c)
            _stage_names(ax, tm, yd, yu, c)
    for gi, g in enumerate(groups or []):
        ax.plot([], [], color=cmap(gi % 10), label=f"group {gi + 1}: {len(g['ranks'])} paths, rep. rank "
                f"{g['representative_rank']}")
    ax.axvline(0, color="k", lw=0.6)
    ax.margins(x=0.18)    # room for the stage names at both ends
    ax.set_xlabel("mean time [µs]: reduce (down) at x < 0, broadcast (up) at x > 0")
    ax.set_ylabel("stage along the path (0 = the rank)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    if groups:
        ax.legend(fontsize=7)
    return fig


def comparison_timemap(a: dict, b: dict, a_label: str, b_label: str, title: str) -> plt.Figure:
    """One path in two configurations; y scaled so both share y0 and ymax (the paper's Fig. 3a)."""
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    ymax = float(max(len(a["down_x_s"]), len(b["down_x_s"]), 2) - 1)
    _curve(ax, a, "tab:blue", a_label, ymax, names=True)
    _curve(ax, b, "tab:red", b_label, ymax, style="--", names=True)
    ax.axvline(0, color="k", lw=0.6)
    ax.margins(x=0.18)    # room for the stage names at both ends
    ax.set_xlabel("mean time [µs]: reduce (down) at x < 0, broadcast (up) at x > 0")
    ax.set_ylabel("position on the path (scaled)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def serialization(series: dict[str, list[float]], title: str) -> plt.Figure:
    """Departure order (x) vs mean up latency + departure wait (y) at one tree node, one line per
    configuration (the paper's Fig. 3b): the intercept is the latency introduced, the slope the
    serialization (flatter is better)."""
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    for name, ys in series.items():
        ax.plot(range(len(ys)), np.asarray(ys) * US, marker="o", label=name)
    ax.set_xticks(range(max((len(v) for v in series.values()), default=1)))
    ax.set_xlabel("departure order (0 = first)")
    ax.set_ylabel("up latency + departure wait [µs]")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig
