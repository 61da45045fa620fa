"""`summary --process`: the processing schemes' numbers as a table, JSON, a plot and a report section."""
from __future__ import annotations

from pathlib import Path

from mpitempo.io.sizes import format_size, size_cell
from mpitempo.present.tables import console, print_fitted, print_json, us
from mpitempo.errors import MtError
from mpitempo.io.paths import write_output
from mpitempo.present.html import esc, img as _img, table as _table

# the numbers a scheme prints besides value_s, in table order
_EXTRA = (("mean_s", "mean"), ("median_s", "median"), ("t_avg_s", "t_avg"), ("std_s", "std"), ("min_s", "min"),
          ("max_s", "max"), ("ci_lo_s", "CI lo"), ("ci_hi_s", "CI hi"), ("threshold_s", "threshold"))


def _others(r: dict) -> str:
    parts = [f"{lab} {us(r[k])}" for k, lab in _EXTRA if r.get(k) is not None and not
             (k == "mean_s" and r.get("value_s") == r.get(k))]
    if r.get("removed"):
        parts.append(f"{r['removed']} removed")
    return ", ".join(parts)


def _key(r: dict) -> tuple:
    return (r.get("campaign"), r["config"], r["op"], r["msize"], r["nprocs"])


def delta_vs_reprompi(rows: list[dict]) -> dict[int, float | None]:
    """index in rows -> 100 x (value - reprompi value) / reprompi value of its group."""
    base = {_key(r): r["value_s"] for r in rows if r["process"] == "reprompi"}
    out = {}
    for i, r in enumerate(rows):
        b = base.get(_key(r))
        out[i] = None if not b or r["process"] == "reprompi" else 100.0 * (r["value_s"] - b) / b
    return out


def print_processing(roots, names: list[str], filt, as_json: bool = False, plot: str | None = None) -> list[dict]:
    from mpitempo.analysis.processing import process_campaigns

    rows, notes = process_campaigns(roots, names, filt)
    if plot:
        write_plot(rows, plot)
    if as_json:
        print_json(rows)
        return rows
    many = any("campaign" in r for r in rows)
    deltas = delta_vs_reprompi(rows)
    src = ", ".join(str(r) for r in roots)
    cols = (([("campaign", "left")] if many else [])
            + [("config", "left"), ("op", "left"), ("msize", "right"), ("nprocs", "right"),
               ("process", "left"), ("benchmark", "left"), ("runs", "right"), ("value [µs]", "right"),
               ("vs reprompi", "right"), ("also reported [µs]", "left")])
    cells = []
    for i, r in enumerate(rows):
        d = deltas[i]
        cells.append(([r["campaign"]] if many else []) + [
            r["config"], r["op"], size_cell(r["op"], r["msize"]), str(r["nprocs"]), r["process"],
            r["benchmark"], str(r["runs"]), us(r["value_s"]), "-" if d is None else f"{d:+.1f}%", _others(r)])
    con = console()
    # fits 100 columns: columns that never change are named above; benchmark and the other
    # numbers wrap inside their columns; names and numbers are never shortened
    print_fitted(f"mpitempo summary of {src}: processing schemes", cols, cells,
                 keep=("process", "value [µs]"), wrap=("benchmark", "also reported [µs]"), con=con,
                 caption=("each scheme applied to every mpirun's raw data as that benchmark would print it; every "
                          "number is the median over the mpiruns (docs/processing.md); vs reprompi = difference "
                          "to mpitempo's median of per-run medians"))
    over = _oversubscribed(roots)
    if over:
        notes.append(f"warning: {over} run(s) were oversubscribed (more ranks than CPUs): correctness only, "
                     "the numbers are not timings of the MPI library")
    if plot:
        notes.append(f"plot written to {plot}")
    for n in notes:
        con.print(n if n.startswith("warning:") else f"note: {n}")
    return rows


def _oversubscribed(roots) -> int:

    n = 0
    for root in roots:
        for m in Path(root).glob("runs/*/meta.json"):
            from mpitempo.errors import MtError
            from mpitempo.io.rundir import load_meta

            try:
                n += bool((load_meta(m).get("scheme") or {}).get("oversubscribed"))
            except MtError:
                pass
    return n


def figure(rows: list[dict]):
    """One panel per (config, op, nprocs): each scheme's value vs message size (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    panels: dict[tuple, dict[str, list]] = {}
    for r in rows:
        p = panels.setdefault((r.get("campaign"), r["config"], r["op"], r["nprocs"]), {})
        p.setdefault(r["process"], []).append((r["msize"], r["value_s"], r["run_values_s"]))
    n = max(1, len(panels))
    ncol = min(3, n)
    nrow = (n + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.8 * nrow), squeeze=False, sharey=True)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    for ax, (key, series) in zip(axes.ravel(), panels.items()):
        camp, cfg, op, nprocs = key
        for name, pts in series.items():
            pts.sort()
            x = np.array([max(1, m) for m, _, _ in pts], dtype=float)
            y = np.array([v for _, v, _ in pts]) * 1e6
            lo = np.array([min(rv) for _, _, rv in pts]) * 1e6
            hi = np.array([max(rv) for _, _, rv in pts]) * 1e6
            style = dict(lw=2.5, color="black") if name == "reprompi" else dict(lw=1.2)
            line, = ax.plot(x, y, marker="o", ms=3, label=name, **style)
            if len(pts[0][2]) > 1:
                ax.fill_between(x, lo, hi, alpha=0.12, color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size [B]")
        ax.set_ylabel("reported runtime [µs]")
        ax.set_title(f"{camp + '/' if camp else ''}{cfg}: {op}, {nprocs} ranks", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("the same raw data, processed as each benchmark does (median over mpiruns; band: range over "
                 "mpiruns)", fontsize=9)
    from mpitempo.present.plots import plain_text

    plain_text(fig)
    fig.tight_layout()
    return fig


def write_plot(rows: list[dict], out: str) -> None:
    if not rows:
        raise MtError("nothing to plot: no rows")
    from mpitempo.present.plots import png

    write_output(out, png(figure(rows)), "--plot")


def report_section(roots, filt) -> str:
    """The report's section on processing schemes (empty when no run has per-rank data)."""
    from mpitempo.analysis.processing import process_campaigns
    from mpitempo.io.perrank import FILE_NAME
    from mpitempo.present.plots import png

    if not any(any(Path(r).glob(f"runs/*/{FILE_NAME}")) for r in roots):
        return ""
    from mpitempo.stats.processing import PROCESS_NAMES

    try:
        rows, notes = process_campaigns(roots, list(PROCESS_NAMES), filt)
    except MtError as e:
        return f"<h2>Processing schemes</h2><p class='note'>{esc(e)}</p>"
    deltas = delta_vs_reprompi(rows)
    trs = [[esc(r["config"]), esc(r["op"]), esc(format_size(r["msize"]) if r["msize"] else 0), r["nprocs"],
            esc(r["process"]), esc(r["benchmark"]), r["runs"], us(r["value_s"]),
            "-" if deltas[i] is None else f"{deltas[i]:+.1f}%", esc(_others(r))] for i, r in enumerate(rows)]
    return ("<h2>Processing schemes (what other benchmarks would report)</h2>"
            + _img(png(figure(rows)), "processing schemes")
            + _table(["config", "op", "msize [B]", "nprocs", "process", "benchmark", "runs", "value [µs]",
                      "vs reprompi", "also reported [µs]"], trs, numeric_from=2)
            + "<p class='note'>PS1-PS8 of Hunold and Carpen-Amarie (2016, Table 4) applied to every mpirun's "
              "per-rank raw times; each number is the median over the mpiruns.</p>"
            + "".join(f"<p class='note'>{esc(n)}</p>" for n in notes))
