"""Clock-sync plot: sync duration vs max |offset| (Hunold and Carpen-Amarie 2018, Fig. 3)."""
from __future__ import annotations


def duration_vs_offset(rows: list[dict], path: str) -> None:
    """Sync duration vs max |offset|, one marker per mpirun, one panel per wait time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    waits = sorted({r["wait_s"] for r in rows})
    algs = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig, axes = plt.subplots(1, len(waits), figsize=(5 * len(waits), 4), squeeze=False, sharey=True)
    for ax, w in zip(axes[0], waits):
        for a in algs:
            pts = [(r["sync_duration_s"], r["max_abs_offset_s"] * 1e6) for r in rows
                   if r["algorithm"] == a and r["wait_s"] == w]
            ax.scatter([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], label=a, s=18)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sync duration [s]")
        ax.set_title(f"{w:g} s after sync")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("max |offset| to rank 0 [µs]")
    axes[0][-1].legend(fontsize=7)
    from mpitempo.present.plots import plain_text

    plain_text(fig)   # algorithm names from the runs' files: never mathtext, control characters escaped
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
