"""Per op: the median over mpiruns of every algorithm against the message size, the default in black and
the chosen algorithm of each size marked."""
from __future__ import annotations

from mpitempo.present.plots import plain_text


def algorithm_plot(op: str, nprocs: int, candidates: list[dict], rows: list[dict], title: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import math

    def ok(v):
        return v is not None and math.isfinite(v) and v > 0

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    mine = [c for c in candidates if c["op"] == op and c["nprocs"] == nprocs and ok(c["median_s"])]
    rws = sorted((r for r in rows if r["op"] == op and r["nprocs"] == nprocs and ok(r.get("median_default_s"))),
                 key=lambda r: r["msize"])
    if not rws and not mine:
        ax.text(0.5, 0.5, "no valid measurements", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        _plain(fig)
        return fig
    xs = [max(r["msize"], 1) for r in rws]
    ax.plot(xs, [r["median_default_s"] * 1e6 for r in rws], "k-o", lw=2, label="default", zorder=3)
    for alg in sorted({c["algorithm"] for c in mine}):
        pts = sorted(((max(c["msize"], 1), c["median_s"] * 1e6) for c in mine if c["algorithm"] == alg))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", marker=".", alpha=0.7, label=alg)
    for r, x in zip(rws, xs):
        if r["chosen"] != "default" and ok(r.get("median_chosen_s")):
            ax.plot([x], [r["median_chosen_s"] * 1e6], "r*", ms=14, zorder=4)
    if len({max(c["msize"], 1) for c in mine} | set(xs)) > 1:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size [B]")
    ax.set_ylabel("median of mpirun medians [µs]")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _plain(fig)
    fig.tight_layout()
    return fig


def _plain(fig) -> None:
    """Algorithm and op names (from the campaign's files) shown as text: never mathtext."""

    plain_text(fig)
