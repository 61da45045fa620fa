"""Figures: the distribution of ping-pong times of one set, the timer study,
and the rate curve over message sizes (matplotlib with the Agg backend)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mpitempo.present.plots import plain_text  # noqa: E402


def histogram_png(h: dict, path: Path, title: str, xlabel: str = "one-way time [µs]") -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    e = [x * 1e6 for x in h["edges"]]
    ax.bar(e[:-1], h["counts"], width=[e[i + 1] - e[i] for i in range(len(e) - 1)], align="edge",
           edgecolor="black", linewidth=0.3)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    if h["over"]:
        title += f"  ({h['over']} values >= {h['upper'] * 1e6:.3g} µs not shown)"
    ax.set_title(title, fontsize=9)
    plain_text(fig)   # the timer's name comes from the run's files
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rate_curve_png(a: dict, path: Path) -> Path:
    rows = [r for r in a["results"] if r["msize"] > 0]
    by_size: dict[int, dict] = {}
    for r in rows:  # one point per size: the set at the calculated npp, else the first
        if r["msize"] not in by_size or r["npp"] == r["npp_calculated"]:
            by_size[r["msize"]] = r
    xs = sorted(by_size)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in (("rate_min_mb_s", "from min"), ("rate_median_mb_s", "from median"),
                       ("rate_mean_mb_s", "from mean")):
        ax.plot(xs, [by_size[x][key] for x in xs], marker="o", ms=3, label=label)
    loops = [lp for lp in a["loop"] if lp["msize"] > 0]
    if loops:
        ax.plot([lp["msize"] for lp in loops], [lp["msize"] / lp["median_s"] / 1e6 for lp in loops], "k--",
                label="loop-averaged (OSU style)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel("rate [MB/s]")
    ax.set_title(f"ping-pong rate, ranks {a['source']} -> {a['dest']}" + _sim(a), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    plain_text(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sim(a: dict) -> str:
    return " [SIMULATED platform]" if a.get("simulated") else ""


def write_all(a: dict, outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    ts = a["timer_study"]
    if ts.get("histogram"):
        out.append(histogram_png(ts["histogram"], outdir / "hist_timer.png",
                                 f"timer {ts['timer']}: {ts['n']} back-to-back differences" + _sim(a),
                                 xlabel="difference [µs]"))
    for r in a["results"]:
        if r.get("histogram") and r["histogram"]["edges"]:
            out.append(histogram_png(r["histogram"], outdir / f"hist_{r['msize']}B_npp{r['npp']}.png",
                                     f"{r['msize']} B, npp {r['npp']}, {r['ntrial']} trials: median "
                                     f"{r['median_s'] * 1e6:.3f} µs" + _sim(a)))
    if any(r["msize"] > 0 for r in a["results"]):
        out.append(rate_curve_png(a, outdir / "rate_curve.png"))
    return out
