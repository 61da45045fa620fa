"""Plots (matplotlib, Agg backend): each function takes arrays and returns a Figure."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats as sps  # noqa: E402

from mpitempo.io.sizes import format_size  # noqa: E402
from mpitempo.safe_text import safe_block  # noqa: E402
from mpitempo.stats.diagnostics import clt_means, mpirun_factor, normalized  # noqa: E402

US = 1e6


def plain_text(fig) -> None:
    """Show the texts of fig (titles, legends, labels: they hold configuration names and other
    strings from campaign files) as they are: never parsed as mathtext (a name holding '$\\x$' made
    rendering fail) and with control characters escaped (safe_text). Tick labels keep
    matplotlib's own formatting (10^k on log axes). Call it before tight_layout and saving."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()) for t in (tick.label1, tick.label2)}
    for t in fig.findobj(Text):
        if id(t) not in ticks:
            t.set_parse_math(False)
            t.set_text(safe_block(t.get_text()))
    # tick labels given as strings (names, hostnames: set_xticks(pos, names), boxplot labels) are made at
    # each draw by the axis' formatter (FixedFormatter, or a FuncFormatter over the labels), with mathtext
    # on: their output is escaped, each '$' too ('\\$' is a literal '$'). matplotlib's own numeric
    # formatters (10^k on log axes is mathtext) are left alone.
    def plain(text) -> str:
        return safe_block(str(text)).replace("$", "\\$")

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for major in (True, False):
                fmt = axis.get_major_formatter() if major else axis.get_minor_formatter()
                if getattr(fmt, "_mt_plain", False) or not isinstance(fmt, (FixedFormatter, FuncFormatter)):
                    continue
                if isinstance(fmt, FixedFormatter):
                    fmt.seq = [plain(x) for x in fmt.seq]
                    new = fmt
                else:
                    new = FuncFormatter(lambda x, pos=None, f=fmt: plain(f(x, pos)))
                new._mt_plain = True
                (axis.set_major_formatter if major else axis.set_minor_formatter)(new)


def png(fig) -> bytes:
    plain_text(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _log_y(ax) -> None:
    """A log y axis, unless nothing plotted is positive (all-zero runtimes, flagged zero_time): then linear,
    without matplotlib's warning on stderr."""
    ys = [np.asarray(c.get_offsets() if hasattr(c, "get_offsets") else c.get_ydata(), dtype=float)
          for c in (*ax.lines, *ax.collections) if hasattr(c, "get_offsets") or hasattr(c, "get_ydata")]
    vals = np.concatenate([y[:, 1] if y.ndim == 2 else y.ravel() for y in ys]) if ys else np.empty(0)
    if np.any(np.isfinite(vals) & (vals > 0)):
        ax.set_yscale("log")


def runtime_vs_size(op: str, series: dict[str, dict]) -> plt.Figure:
    """series: config -> {msize: [...], median: [...], lo: [...], hi: [...]} (seconds); lo/hi the
    range shown as a band (CI of the median, or Q1..Q3 of the run medians)."""
    fig, ax = plt.subplots(figsize=(10, 4))
    for name, s in series.items():
        x = np.asarray(s["msize"], dtype=float)
        x = np.where(x <= 0, 1, x)
        ax.plot(x, np.asarray(s["median"]) * US, marker="o", label=name)
        ax.fill_between(x, np.asarray(s["lo"]) * US, np.asarray(s["hi"]) * US, alpha=0.25)
    ax.set_xscale("log", base=2)
    _log_y(ax)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    sizes = sorted({int(m) if m > 0 else 1 for s in series.values() for m in s["msize"]})
    step = max(1, -(-len(sizes) // 10))        # at most 10 labels: never overlapping
    ax.xaxis.set_major_locator(FixedLocator(sizes[::step]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(int(round(v)))))
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(fmt)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    _thin_minor_labels(ax)
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel("runtime [µs]")
    ax.set_title(f"{op}: median of run medians (band: 95% CI, or Q1..Q3 below 6 runs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig


def _size_axis(ax, sizes) -> None:
    """Log2 message-size axis with at most 10 labels (never overlapping)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    sizes = sorted({int(m) if m > 0 else 1 for m in sizes})
    step = max(1, -(-len(sizes) // 10))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sizes[::step]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(int(round(v)))))
    ax.set_xlabel("message size [bytes]")


def _band_lines(series: dict[str, dict]):
    """One line per config over message size with its band (series: config -> {msize, median, lo, hi})."""
    fig, ax = plt.subplots(figsize=(10, 4))
    for name, s in series.items():
        x = np.asarray(s["msize"], dtype=float)
        x = np.where(x <= 0, 1, x)
        ax.plot(x, s["median"], marker="o", label=name)
        ax.fill_between(x, s["lo"], s["hi"], alpha=0.25)
    _size_axis(ax, [m for s in series.values() for m in s["msize"]])
    return fig, ax


def bandwidth_vs_size(op: str, series: dict[str, dict]) -> plt.Figure:
    """series: config -> {msize, median, lo, hi} in MB/s (median over runs of the per-run
    bandwidth, band: its 95% CI, or min..max below 6 runs). Log-log."""
    from matplotlib.ticker import FuncFormatter

    fig, ax = _band_lines(series)
    _log_y(ax)
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(fmt)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    _thin_minor_labels(ax)
    ax.set_ylabel("bandwidth [MB/s]")
    ax.set_title(f"{op}: bandwidth, median of the per-run values (band: 95% CI, or min..max below 6 runs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig


def overlap_vs_size(op: str, series: dict[str, dict]) -> plt.Figure:
    """series: config -> {msize, median, lo, hi} in % (OSU's overlap per run, median over runs;
    band: min..max over runs)."""
    fig, ax = _band_lines(series)
    ax.set_ylim(0, 100)
    ax.set_ylabel("overlap [%]")
    ax.set_title(f"{op}: overlap of communication and computation (median over runs, band: min..max)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig


def box_per_size(op: str, groups: dict[int, dict[str, np.ndarray]], marks: dict[int, str] | None = None) -> plt.Figure:
    """groups: msize -> config -> per-run medians (s); marks: msize -> stars of the comparison."""
    sizes = sorted(groups)
    configs = sorted({c for g in groups.values() for c in g})
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(3.0, 1.6 * len(sizes) * max(1, len(configs) / 2)), 3.6),
                             squeeze=False)
    for ax, m in zip(axes[0], sizes):
        data = [np.asarray(groups[m].get(c, []), dtype=float) * US for c in configs]
        ax.boxplot(data, showfliers=True)
        ax.set_xticks(range(1, len(configs) + 1), configs, rotation=30, fontsize=8)
        mark = (marks or {}).get(m)
        ax.set_title(f"{format_size(m) if m else 0}" + (f"  {mark}" if mark else ""), fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    axes[0][0].set_ylabel("run median [µs]")
    fig.suptitle(f"{op}: per-mpirun medians per size (stars: Wilcoxon rank-sum, '~' not significant)", fontsize=9)
    plain_text(fig)
    fig.tight_layout()
    return fig


def _thin_minor_labels(ax) -> None:
    """Log axes label minor ticks too; keep those labels only when the major ones are few, so that
    they never crowd (the figure is drawn first to know the ticks)."""
    lo, hi = ax.get_ylim()
    if hi / max(lo, 1e-12) > 30:
        ax.yaxis.set_minor_formatter(plt.NullFormatter())


def strip_per_size(op: str, groups: dict[int, dict[str, np.ndarray]], marks: dict[int, str] | None = None,
                   seed: int = 1) -> plt.Figure:
    """One shared axis: per message size, the per-mpirun medians of every configuration side by side
    (points, jittered) with their median as a bar; marks: msize -> stars of the comparison."""
    sizes = sorted(groups)
    configs = sorted({c for g in groups.values() for c in g})
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / max(1, len(configs))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, c in enumerate(configs):
        for i, m in enumerate(sizes):
            v = np.asarray(groups[m].get(c, []), dtype=float) * US
            if not v.size:
                continue
            x0 = i - 0.4 + width * (j + 0.5)
            ax.scatter(x0 + rng.uniform(-width / 4, width / 4, v.size), v, s=14, alpha=0.7,
                       color=colors[j % len(colors)], label=c if i == 0 else None, zorder=3)
            ax.hlines(np.median(v), x0 - width * 0.4, x0 + width * 0.4, color="black", lw=1.5, zorder=4)
    _log_y(ax)
    from matplotlib.ticker import FuncFormatter
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(fmt)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    _thin_minor_labels(ax)
    labels = [format_size(m) if m else "-" for m in sizes]
    if marks:
        labels = [f"{lab}\n{marks.get(m, '')}" for lab, m in zip(labels, sizes)]
    step = max(1, -(-len(sizes) // 16))
    ax.set_xticks(range(len(sizes))[::step], labels[::step], fontsize=8)
    ax.set_xlim(-0.6, len(sizes) - 0.4)
    ax.set_xlabel("message size [bytes]" + ("   (stars: Wilcoxon rank-sum vs the first configuration, "
                                             "'~' not significant)" if marks else ""))
    ax.set_ylabel("per-mpirun median [µs]")
    ax.set_title(f"{op}: per-mpirun medians per size (bar: their median)", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    plain_text(fig)
    fig.tight_layout()
    return fig


def histogram_kde(x, title: str, clip_pct: float = 99.0) -> plt.Figure:
    """Histogram + KDE of the measurements up to the clip_pct percentile; how many lie above it is
    said in the plot (they are counted, not hidden)."""
    x = np.asarray(x, dtype=float) * US
    cut = float(np.percentile(x, clip_pct)) if x.size else 0.0
    above = int((x > cut).sum())
    x = x[x <= cut] if above else x
    if above:
        title = f"{title}\n{above} of {x.size + above} values above the {clip_pct:g}th percentile " \
                f"({cut:.3g} µs) not drawn"
    fig, ax = plt.subplots(figsize=(10, 3.4))
    ax.hist(x, bins=min(80, max(10, x.size // 20)), density=True, alpha=0.5, color="tab:blue")
    if x.size > 2 and np.ptp(x) > 0:
        grid = np.linspace(x.min(), x.max(), 400)
        ax.plot(grid, sps.gaussian_kde(x)(grid), color="tab:red", label="KDE")
        ax.legend()
    ax.set_xlabel("runtime [µs]")
    ax.set_ylabel("density")
    ax.set_title(title, fontsize=9)
    return fig


def clt_check(x, title: str, sizes=(10, 50, 100, 500), seed: int = 1) -> plt.Figure:
    """Top: distribution of resampled means per sample size; bottom: normal Q-Q plots (Fig. 2)."""
    res = clt_means(x, sizes, seed=seed)
    fig, axes = plt.subplots(2, len(sizes), figsize=(2.6 * len(sizes), 5.0), squeeze=False)
    for i, n in enumerate(sizes):
        m = res[n]["means"] * US
        axes[0][i].hist(m, bins=40, color="tab:green", alpha=0.7)
        axes[0][i].set_title(f"n = {n}\nskew {res[n]['skewness']:.2f}, SW p {res[n]['shapiro_p']:.2g}", fontsize=8)
        axes[0][i].tick_params(labelsize=7)
        (osm, osr), (slope, icpt, _) = sps.probplot(m, dist="norm")
        axes[1][i].plot(osm, osr, ".", ms=2)
        axes[1][i].plot(osm, slope * osm + icpt, "r-", lw=1)
        axes[1][i].tick_params(labelsize=7)
    axes[0][0].set_ylabel("count of means")
    axes[1][0].set_ylabel("mean [µs] vs normal quantile")
    fig.suptitle(title, fontsize=9)
    plain_text(fig)
    fig.tight_layout()
    return fig


def mpirun_means(samples: list, labels: list[str], title: str) -> plt.Figure:
    """Per-mpirun means with 95% CIs and the Kruskal-Wallis test across runs (Fig. 3)."""
    r = mpirun_factor(samples)
    fig, ax = plt.subplots(figsize=(10, 3.4))
    means = np.asarray(r["means"]) * US
    lo = np.array([c[0] if c else m for c, m in zip(r["cis"], r["means"])]) * US
    hi = np.array([c[1] if c else m for c, m in zip(r["cis"], r["means"])]) * US
    xs = np.arange(len(means))
    ax.errorbar(xs, means, yerr=[means - lo, hi - means], fmt="o", capsize=3)
    ax.set_xticks(xs, labels, rotation=60, fontsize=7)
    ax.set_ylabel("mean runtime [µs]")
    kw = f"Kruskal-Wallis p = {r['kruskal_p']:.2g}" if r["kruskal_p"] is not None else "Kruskal-Wallis: n/a"
    ax.set_title(f"{title}\nper-mpirun mean, 95% CI; {kw}", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def reproducibility(values_by_size: dict[int, np.ndarray], title: str) -> tuple[plt.Figure, dict[int, float]]:
    """Normalized runtimes (t / min t) per size over repeated campaigns or mpiruns (Fig. 12)."""
    sizes = sorted(values_by_size)
    norm, maxdiff = [], {}
    for m in sizes:
        v, d = normalized(values_by_size[m])
        norm.append(v)
        maxdiff[m] = d
    fig, ax = plt.subplots(figsize=(10, 3.4))
    ax.boxplot(norm, showfliers=True)
    ax.set_xticks(range(1, len(sizes) + 1), [format_size(m) if m else "0" for m in sizes], fontsize=8)
    for i, m in enumerate(sizes, 1):
        if maxdiff[m] is not None:
            ax.annotate(f"{100 * maxdiff[m]:.1f}%", (i, 1.0), textcoords="offset points", xytext=(0, -12),
                        ha="center", fontsize=7)
    ax.set_xlabel("message size")
    ax.set_ylabel("normalized runtime")
    ax.set_title(title + "\n(label: max relative difference)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    return fig, maxdiff
