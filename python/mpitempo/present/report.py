"""The static HTML report: one self-contained file (PNG plots embedded as data URIs)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from mpitempo import __version__
from mpitempo.analysis.summary import summary_rows
from mpitempo.analysis.comparison import compare, sample_arrays
from mpitempo.errors import MtError
from mpitempo.io.sizes import format_size
from mpitempo.stats.diagnostics import mpirun_factor
from mpitempo.analysis.filtering import filtered_view
from mpitempo.stats.outliers import Filter, outlier_line
from mpitempo.analysis.summary import counts_from_per_run, per_run_table
from mpitempo.analysis.flags import FLAG_SEVERITY, by_severity, flag_cell, flag_notes, sync_notes
from mpitempo.analysis.warmup import warmup_cell
from mpitempo.analysis.adaptive import stop_notes
from mpitempo.present.headlines import op_headlines
from mpitempo.present.html import esc, img as _img, table as _table
from mpitempo.io.paths import write_output
from mpitempo.present.definitions import summary_notes
from mpitempo.present.processing import report_section
from mpitempo.present.studies import timebins_section
from mpitempo.present.tables import us as fmt
from mpitempo.present.tree import report_section as tree_section

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1400px;color:#222;padding:0 1.5em}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0} th,td{border:1px solid #ddd;padding:3px 8px}
th{background:#f3f3f3} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.note{color:#555;font-size:.9em} .sig{color:#0a7d00;font-weight:bold} img{width:100%;height:auto;margin:.4em 0;display:block}
.headline{font-size:1.05em;margin:.3em 0} .scroll{overflow-x:auto}
.muted{color:#888} .warn{color:#a00;font-size:.9em} .flag{color:#a00;font-weight:bold} .flag-mixed{color:#a60}
"""


def _flag_html(flags) -> str:
    """The flags cell, most severe first: those that make a run wrong in bold red, those of mixed
    machine states or noise in amber (analysis.flags.FLAG_SEVERITY)."""
    fl = by_severity(flags)
    if not fl:
        return "-"
    return ",".join(f"<span class='{'flag' if FLAG_SEVERITY.get(f) == 'wrong' else 'flag-mixed'}' "
                    f"title='{esc(FLAG_SEVERITY.get(f, ''))}'>{esc(flag_cell([f]))}</span>" for f in fl)


def us(x) -> str:
    return fmt(x)


def factors_html(data) -> str:
    cols = ["campaign", "config", "nprocs", "library", "timer", "scheme", "compiler", "host", "governor",
            "cache_policy", "clock_sync"]
    res = data.con.execute("SELECT " + ", ".join(f"list(DISTINCT CAST({c} AS VARCHAR))" for c in cols)
                           + ", count(*), min(start_time), max(start_time) FROM runs").fetchone()
    rows = [[esc(c), esc(", ".join(sorted(v)) or "-")] for c, v in zip(cols, res[:len(cols)])]
    warm = sorted({str((m.get("scheme") or {}).get("warmup")) for m in data.metas.values()
                   if isinstance(m, dict) and isinstance(m.get("scheme"), dict) and "warmup" in m["scheme"]})
    if warm:
        rows.append(["warmup", esc(", ".join(warm))])
    rows.append(["mpiruns", str(res[len(cols)])])
    rows.append(["first / last start", esc(f"{res[len(cols) + 1]} / {res[len(cols) + 2]}")])
    return _table(["factor", "values"], rows, numeric_from=99)


def build_report(data, filt: Filter | None = None, title: str | None = None, seed: int = 1) -> str:
    filt = filt or Filter()
    per_run = per_run_table(data.con, filt)
    counts = counts_from_per_run(per_run, filt)
    rows = summary_rows(data, filt, per_run=per_run)
    if not rows:
        raise MtError("nothing to report: no measurements")
    from mpitempo.present import plots

    parts: list[str] = []
    src = ", ".join(str(r) for r in data.roots)
    parts.append(f"<h1>{esc(title or 'mpitempo report')}</h1>")
    parts.append(f"<p class='note'>{esc(src)} &middot; generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC "
                 f"by mpitempo {__version__} &middot; {esc(filt.describe())} &middot; "
                 f"{esc(outlier_line(counts['outliers'], counts['measurements']))}</p>")
    heads_at = len(parts)          # the headline goes first, above the factors
    parts.append("<h2>Factors</h2>" + factors_html(data))

    many = len(data.labels) > 1
    hs = (["campaign"] if many else []) + ["config", "op", "msize [B]", "nprocs", "runs", "warm-up", "median [µs]",
                                            "95% CI [µs]", "CI ±", "stop", "mean [µs]", "min [µs]", "max [µs]",
                                            "spread", "outliers", "flags"]
    trs = []
    for r in rows:
        ci = r["median_ci"] or {}
        cell = (f"{us(ci['lo_s'])} .. {us(ci['hi_s'])}" if ci.get("lo_s") is not None
                else f"<span class='muted'>need &ge; {ci.get('need_runs', 6)} runs</span>")
        trs.append(([esc(r["campaign"])] if many else []) + [
            esc(r["config"]), esc(r["op"]), esc(format_size(r["msize"]) if r["msize"] else 0), r["nprocs"], r["runs"],
            esc(warmup_cell(r.get("warmup"))), us(r["median_s"]), cell,
            "-" if r.get("ci_rel") is None else f"±{100 * r['ci_rel']:.2g}%", esc(r.get("stop") or "-"),
            us(r["mean_s"]), us(r["min_s"]), us(r["max_s"]),
            f"{r['spread_pct']:.1f}%" if r["spread_pct"] is not None else "-", r["outliers"],
            _flag_html(r.get("flags"))])
    parts.append("<h2>Summary</h2>" + _table(hs, trs, numeric_from=4 if many else 3)
                 + "<p class='note'>Statistics over the per-mpirun medians; CI: distribution-free 95% interval of "
                 "the median (order statistics); CI ±: its half-width relative to the median; stop: what stopped "
                 "the row (docs/methods.md, Adaptive repetitions).</p>"
                 + "".join(f"<p class='note'>{esc(n)}</p>" for n in stop_notes(rows))
                 + "".join(f"<p class='warn'>{esc(n)}</p>" for n in flag_notes(rows))
                 + "".join(f"<p class='note'>{esc(n)}</p>" for n in sync_notes(rows))
                 + "".join(f"<p class='note'>{esc(n)}</p>" for n in summary_notes(data, rows)))

    # comparison: configs within the data, or campaigns when several were given
    cmp = None
    nconf = len({r["config"] for r in rows})
    by = "config" if nconf >= 2 else ("campaign" if many else None)
    marks: dict[tuple, str] = {}
    if by:
        try:
            cmp = compare(data, by, filt=filt, allow_oversubscribed=True)   # shown, and flagged
        except MtError as e:
            parts.append(f"<h2>Comparison</h2><p class='note'>{esc(e)}</p>")
    if cmp:
        trs = []
        for r in cmp.rows:
            sig = r["significant"]
            delta = f"{r['delta_pct']:+.2f}%" if sig and r["delta_pct"] is not None else "~"
            p = "-" if r["p_value"] is None else f"{r['p_value']:.3g}"
            lo, hi = r["effect_ci_pct"]
            shift = "-" if r["effect_pct"] is None else (
                f"{r['effect_pct']:+.2f}%" + (f" [{lo:+.2f}, {hi:+.2f}]" if lo is not None else ""))
            trs.append([esc(r["b"]), esc(r["op"]), esc(format_size(r["msize"]) if r["msize"] else 0),
                        esc(r["nprocs"]), us(r["median_a_s"]), us(r["median_b_s"]),
                        f"<span class='{'sig' if sig else ''}'>{delta}</span>", esc(shift), f"{p} {r['stars']}",
                        f"{r['runs_a']} / {r['runs_b']}", esc(r["verdict"])])
            marks[(r["b"], r["op"], r["msize"])] = r["stars"] or "~"
        heads = op_headlines(cmp.rows)
        parts.append(f"<h2>Comparison by {esc(by)} (A = {esc(cmp.base)})</h2>"
                     + _table(["B", "op", "msize [B]", "nprocs", "median A [µs]", "median B [µs]", "delta",
                               "shift [95% CI]", "p", "runs A / B", "verdict"], trs, numeric_from=2)
                     + "<p class='note'>Wilcoxon rank-sum (Mann-Whitney U) on per-mpirun medians, two-sided; "
                       "* p &le; 0.05, ** &le; 0.01, *** &le; 0.001; ~ not significant; shift: Hodges-Lehmann "
                       "shift of the run medians (B - A, % of A) with its 95% CI.</p>"
                     + "".join(f"<p class='note'>[{i}] {esc(n)}</p>" for i, n in enumerate(cmp.notes, 1)))

    if cmp:
        parts.insert(heads_at, "<h2>Headline</h2>"
                     + "".join(f"<p class='headline'><b>{esc(op)}</b>: {esc(h)}</p>" for op, h in heads.items()))

    # runtime vs size and per-size strips per op
    arr = sample_arrays(data, filt)
    series_key = np.array([f"{c}" if not many else f"{k}/{c}" for k, c in zip(arr["campaign"], arr["config"])])
    parts.append("<h2>Runtime vs message size</h2>")
    by_op: dict[str, dict] = {}
    for r in rows:
        name = r["config"] if not many else f"{r['campaign']}/{r['config']}"
        s = by_op.setdefault(r["op"], {}).setdefault(name, {"msize": [], "median": [], "lo": [], "hi": []})
        ci = r["median_ci"] or {}
        rm = r["run_medians"] or {}
        lo = ci.get("lo_s") if ci.get("lo_s") is not None else rm.get("q1_s")
        hi = ci.get("hi_s") if ci.get("hi_s") is not None else rm.get("q3_s")
        if r["median_s"] is None:
            continue
        s["msize"].append(r["msize"])
        s["median"].append(r["median_s"])
        s["lo"].append(lo if lo is not None else r["median_s"])
        s["hi"].append(hi if hi is not None else r["median_s"])
    for op, series in by_op.items():
        parts.append(_img(plots.png(plots.runtime_vs_size(op, series)), f"runtime vs size, {op}"))
    parts += derived_sections(rows, many)
    parts.append("<h2>Per-mpirun medians per size</h2>")
    base = cmp.base if cmp else None
    for op in by_op:
        groups: dict[int, dict] = {}
        sel = (arr["op"] == op) & np.isfinite(arr["med"].astype(float))
        for m, k, v in zip(arr["msize"][sel], series_key[sel], arr["med"][sel]):
            groups.setdefault(int(m), {}).setdefault(k, []).append(float(v))
        mk = {}
        if cmp:
            for m in groups:
                stars = [f"{b}:{marks[(b, op, m)]}" for b in cmp.levels if (b, op, m) in marks]
                mk[m] = " ".join(stars) if len(cmp.levels) > 2 else (marks.get((stars[0].split(':')[0], op, m))
                                                                      if stars else "")
        parts.append(_img(plots.png(plots.strip_per_size(op, groups, mk)), f"per-size run medians {op}"))
    if base:
        parts.append(f"<p class='note'>Marks compare each configuration with {esc(base)}.</p>")

    # diagnostics for every (campaign, configuration) and op: smallest and largest size
    parts.append("<h2>Method diagnostics</h2>")
    fv = filtered_view(data.con, filt)
    first = rows[0]
    groups_seen = []
    for r in rows:
        if (r["campaign"], r["config"], r["op"]) not in groups_seen:
            groups_seen.append((r["campaign"], r["config"], r["op"]))
    for gi, (camp, cfg, op) in enumerate(groups_seen):
        sizes = sorted({r["msize"] for r in rows if (r["campaign"], r["config"], r["op"]) == (camp, cfg, op)})
        for m in ([sizes[0], sizes[-1]] if len(sizes) > 1 else sizes):
            parts.extend(_diagnostics(data, fv, camp, cfg, op, m, many, clt=(gi == 0), seed=seed))
    # reproducibility: per size, the campaigns' means of run medians (several campaigns) or the run medians
    sel = (arr["op"] == first["op"]) & (arr["config"] == first["config"]) & np.isfinite(arr["med"].astype(float))
    vals: dict[int, list] = {}
    if many:
        for m in np.unique(arr["msize"][sel]):
            per_c = [arr["med"][sel & (arr["msize"] == m) & (arr["campaign"] == c)].astype(float).mean()
                     for c in data.labels if (sel & (arr["msize"] == m) & (arr["campaign"] == c)).any()]
            vals[int(m)] = np.array(per_c)
        what = "mean of run medians per campaign, normalized by the smallest"
    else:
        sel &= arr["campaign"] == first["campaign"]
        for m in np.unique(arr["msize"][sel]):
            vals[int(m)] = arr["med"][sel & (arr["msize"] == m)].astype(float)
        what = "run medians normalized by the smallest (repeat the campaign and give all DIRs to see campaigns)"
    fig, maxdiff = plots.reproducibility(vals, f"{first['config']} {first['op']}: reproducibility, {what}")
    parts.append(_img(plots.png(fig), "reproducibility"))
    parts.append(_table(["msize [B]", "max relative difference"],
                        [[esc(format_size(m) if m else 0), "-" if d is None else f"{100 * d:.2f}%"]
                         for m, d in maxdiff.items()]))
    parts.append(timebins_section(data, filt))
    parts.append(report_section(data.roots, filt))
    parts += [tree_section(root) for root in data.roots]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='generator' content='mpitempo'>"
            f"<title>{esc(title or 'mpitempo report')}</title><style>{CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


def derived_sections(rows: list[dict], many: bool) -> list[str]:
    """Bandwidth vs size per bandwidth op and overlap vs size per overlap op (analysis.derived),
    only when the data has such ops."""
    from mpitempo.present import plots

    out: list[str] = []
    for key, title, fig, unit in (("bandwidth_MBps", "Bandwidth vs message size", plots.bandwidth_vs_size, "MB/s"),
                                  ("overlap_pct", "Overlap vs message size", plots.overlap_vs_size, "%")):
        by_op: dict[str, dict] = {}
        for r in rows:
            v = r.get(key) or {}
            if v.get("median") is None:
                continue
            name = r["config"] if not many else f"{r['campaign']}/{r['config']}"
            s = by_op.setdefault(r["op"], {}).setdefault(name, {"msize": [], "median": [], "lo": [], "hi": []})
            band_ci = key == "bandwidth_MBps" and v.get("lo") is not None
            s["msize"].append(r["msize"])
            s["median"].append(v["median"])
            s["lo"].append(v["lo"] if band_ci else v["min"])
            s["hi"].append(v["hi"] if band_ci else v["max"])
        if not by_op:
            continue
        out.append(f"<h2>{esc(title)}</h2>")
        if key == "bandwidth_MBps":
            out.append("<p class='note'>Per mpirun: bytes per call / the run's median time (MB/s = 1e6 B/s); "
                       "line: median over the runs; band: 95% CI of that median (min..max below 6 runs).</p>")
        else:
            out.append("<p class='note'>Per mpirun: max(0, 100 &times; (1 - (t_overall - t_compute) / t_pure)) "
                       "(OSU's definition); line: median over the runs; band: min..max. Rows flagged "
                       "compute-off (compute_miscalibrated) are not to be trusted.</p>")
        for op, series in by_op.items():
            out.append(_img(plots.png(fig(op, series)), f"{key.split('_')[0]} vs size, {op}"))
    return out


def _diagnostics(data, fv, camp, cfg, op, m, many: bool, clt: bool, seed: int) -> list[str]:
    """Histogram (clipped), CLT check (``clt``), mpirun as a factor with Kruskal-Wallis for one group."""
    from mpitempo.present import plots

    parts = []
    where = "campaign = ? AND config = ? AND op = ? AND msize = ?"
    args = [camp, cfg, op, m]
    label = (f"{camp}/" if many else "") + f"{cfg} {op} {format_size(m) if m else 0}"
    raw = data.con.execute(f"SELECT run_index, runtime_s FROM meas WHERE valid AND {where} "
                           "ORDER BY run_index", args).fetchnumpy()
    kept = data.con.execute(f"SELECT run_index, runtime_s FROM {fv} WHERE keep AND {where} ORDER BY run_index",
                            args).fetchnumpy()
    if raw["runtime_s"].size == 0:
        return parts
    r0 = raw["run_index"][0]
    parts.append(f"<h3>{esc(label)}</h3>")
    parts.append(_img(plots.png(plots.histogram_kde(raw["runtime_s"][raw["run_index"] == r0],
                                                    f"{label}, mpirun {r0}: sampling distribution of all valid "
                                                    "measurements (histogram + KDE)")), "histogram"))
    if clt and kept["runtime_s"].size >= 10:
        parts.append(_img(plots.png(plots.clt_check(kept["runtime_s"],
                                                    f"{label}: means of n resampled measurements (after the "
                                                    "filter); normal Q-Q plots below", seed=seed)), "CLT"))
    runs_ = np.unique(kept["run_index"])
    samples = [kept["runtime_s"][kept["run_index"] == i] for i in runs_]
    parts.append(_img(plots.png(plots.mpirun_means(samples, [str(i) for i in runs_], f"{label}: mpirun as a factor")),
                      "mpirun factor"))
    kw = mpirun_factor(samples)
    if kw["kruskal_p"] is not None:
        verdict = ("the mpirun is a factor here: compare distributions over many mpiruns, never one"
                   if kw["kruskal_p"] <= 0.05 else "no evidence that the mpirun matters for this group")
        parts.append(f"<p class='note'>Kruskal-Wallis across {len(samples)} mpiruns: H = {kw['kruskal_h']:.3g}, "
                     f"p = {kw['kruskal_p']:.3g}: {verdict}.</p>")
    return parts


def write_report(data, out: str | Path, filt: Filter | None = None, title: str | None = None) -> Path:
    out = Path(out)
    if out.exists() and out.is_dir():
        out = out / "report.html"
    doc = build_report(data, filt, title)

    return write_output(out, doc, "the report")
