"""Report sections of the method studies (Hunold and Carpen-Amarie 2016, section 4): mean vs
median in bins over one long mpirun (Fig. 4)."""
from __future__ import annotations

import numpy as np

from mpitempo.io.sizes import format_size
from mpitempo.stats.timebins import bin_size_for, mean_median_gap, time_bins
from mpitempo.present.html import esc, img as _img, table as _table

MIN_MEASUREMENTS = 200     # a run shorter than this gives no useful bins


def timebins_figure(series: dict[str, dict], title: str):
    """series: name -> time_bins() output; mean dashed, median solid, per series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, b in series.items():
        line, = ax.plot(b["start"], b["median"] * 1e6, marker="o", ms=3, label=f"{name}: median")
        ax.plot(b["start"], b["mean"] * 1e6, ls="--", marker="x", ms=3, color=line.get_color(),
                label=f"{name}: mean")
    ax.set_xlabel("measurement index in the mpirun (start of the bin)")
    ax.set_ylabel("runtime [µs]")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    from mpitempo.present.plots import plain_text

    plain_text(fig)
    fig.tight_layout()
    return fig


def timebins_rows(data, bins: int = 20, tukey_k: float = 1.5):
    """(op, msize, {config: bins}) for the (op, msize) with the longest single mpirun, taking each
    configuration's longest run of it; None when no run has MIN_MEASUREMENTS valid measurements."""
    best = data.con.execute("""
        SELECT op, msize, count(*) AS n FROM meas WHERE valid GROUP BY op, msize, run_id
        ORDER BY n DESC, op, msize LIMIT 1""").fetchone()
    if not best or best[2] < MIN_MEASUREMENTS:
        return None
    op, msize, _ = best
    runs = data.con.execute("""
        SELECT campaign, config, run_id, count(*) AS n FROM meas WHERE valid AND op = ? AND msize = ?
        GROUP BY ALL ORDER BY campaign, config, n DESC, run_id""", [op, msize]).fetchall()
    chosen: dict[str, str] = {}
    many = len({r[0] for r in runs}) > 1
    for camp, cfg, run_id, n in runs:
        name = f"{camp}/{cfg}" if many else cfg
        if name not in chosen and n >= MIN_MEASUREMENTS:
            chosen[name] = (camp, run_id)
    series = {}
    for name, (camp, run_id) in chosen.items():
        x = data.con.execute("SELECT runtime_s FROM meas WHERE valid AND campaign = ? AND run_id = ? AND op = ? "
                             "AND msize = ? ORDER BY exp, rep", [camp, run_id, op, msize]).fetchnumpy()["runtime_s"]
        series[f"{name} ({run_id})"] = time_bins(np.asarray(x), bin_size_for(len(x), bins), tukey_k)
    return op, msize, series


def timebins_section(data, filt) -> str:
    from mpitempo.present.plots import png

    got = timebins_rows(data, tukey_k=filt.k if filt.kind == "tukey" else None)
    if not got:
        return ""
    op, msize, series = got
    label = f"{op} {format_size(msize) if msize else 0} B"
    rows = []
    for name, b in series.items():
        gap = mean_median_gap(b)
        drift = (100.0 * (b["median"][-1] - b["median"][0]) / b["median"][0]) if b["median"].size > 1 else None
        rows.append([esc(name), str(int(b["n"].sum())), str(b["start"].size),
                     "-" if gap is None else f"{gap:+.1f}%", "-" if drift is None else f"{drift:+.1f}%"])
    return ("<h2>Mean vs median over one mpirun</h2>"
            + _img(png(timebins_figure(series, f"{label}: mean and median per bin of consecutive measurements "
                                               f"({filt.describe()} per bin)")), "mean vs median in bins")
            + _table(["run", "measurements kept", "bins", "mean - median (median over bins)",
                      "last bin vs first (median)"], rows, numeric_from=1)
            + "<p class='note'>Hunold and Carpen-Amarie (2016), Fig. 4: even after outlier removal the mean "
              "lies above the median, and the level can move during a run. For the longest mpirun of each "
              "configuration; a long campaign is examples/mean-vs-median.toml.</p>")
