"""What `mpitempo history` prints (table, CSV) and writes (--html: one self-contained page, inline SVG)."""
from __future__ import annotations

import csv
import html as _html
import io
import json
import math
from pathlib import Path

from mpitempo.present.safe_text import safe

CSV_COLUMNS = ("machine", "config", "op", "msize", "nprocs", "last_before", "first_after", "last_before_campaign",
               "first_after_campaign", "size_pct", "ci_lo_pct", "ci_hi_pct", "p_value", "direction", "regression",
               "factors_changed")


def _size(n) -> str:
    from mpitempo.io.sizes import format_size

    try:
        return format_size(int(n))
    except Exception:   # noqa: BLE001 - a label only
        return str(n)


def _date(iso: str | None) -> str:
    return (iso or "?")[:16].replace("T", " ")


def _day(iso: str | None) -> str:
    return (iso or "?")[:10]


def _factors_text(fc: dict) -> str:
    return "; ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, (a, b) in fc.items()) or "none recorded"


def _short(v) -> str:
    s = "-" if v is None else str(v).splitlines()[0] if str(v).strip() else "-"
    return s if len(s) <= 40 else s[:37] + "..."


def change_line(c: dict) -> str:
    lo, hi = c["ci_pct"]
    return (f"{c['size_pct']:+.1f}% [{lo:+.1f}, {hi:+.1f}] p={c['p_value']:.3f} between {_date(c['last_before'])} "
            f"and {_date(c['first_after'])}")


def print_table(res: dict, settings: dict) -> None:
    from mpitempo.present.tables import console

    con = console()
    nser = len(res["series"])
    nent = len({e["digest"] for s in res["series"] for e in s["entries"]})
    if not res["changes"]:
        con.print(f"mpitempo history: no change point in {nser} series over {nent} entries "
                  f"(alpha {settings['alpha']}, {settings['permutations']} permutations).")
        return
    from mpitempo.present.tables import print_fitted

    rows = []
    for c in res["changes"]:
        lo, hi = c["ci_pct"]
        rows.append([c["machine"], c["config"], c["op"], _size(c["msize"]), str(c["nprocs"]),
                     f"{_day(c['last_before'])}..{_day(c['first_after'])}", f"{c['size_pct']:+.1f}%",
                     f"[{lo:+.1f}, {hi:+.1f}]", f"{c['p_value']:.3f}",
                     "REGRESSION" if c["regression"] else c["direction"], _factors_text(c["factors_changed"])])
    print_fitted(f"mpitempo history: {len(res['changes'])} change point(s) in {nser} series over {nent} entries",
                 [("machine", "left"), ("config", "left"), ("op", "left"), ("size", "right"), ("np", "right"),
                  ("between", "left"), ("change", "right"), ("95% CI", "right"), ("p", "right"), ("verdict", "left"),
                  ("factors changed", "left")], rows, keep=("op", "size", "change"),
                 drop_order=("p", "95% CI"), wrap=("factors changed",), con=con)
    nreg = len(res["regressions"])
    con.print(f"{nreg} regression(s) of >= {settings['threshold_pct']:g}% starting in the latest "
              f"{settings['latest']} entries of their series" + (" (exit status 1)." if nreg else "."))
    con.print("Size: ratio of the medians of the per-mpirun medians after and before the change, minus 1 "
              "(> 0: slower); CI: bootstrap over entries. Flagged runs are left out of the detection.")


def csv_text(changes: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in changes:
        w.writerow([c["machine"], c["config"], c["op"], c["msize"], c["nprocs"], c["last_before"], c["first_after"],
                    c["last_before_campaign"], c["first_after_campaign"], f"{c['size_pct']:.4f}",
                    f"{c['ci_pct'][0]:.4f}", f"{c['ci_pct'][1]:.4f}", f"{c['p_value']:.4f}", c["direction"],
                    int(c["regression"]), json.dumps(c["factors_changed"], sort_keys=True)])
    return buf.getvalue()


# -- the dashboard ---------------------------------------------------------------------------------------

def _e(s) -> str:
    return _html.escape(safe(str(s)), quote=True)


def _fmt_time(s: float) -> str:
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s:.3g} s"


def svg_series(s: dict, width: int = 760, height: int = 260) -> str:
    """One series as an SVG: run medians (dots; flagged ones hollow red), per-entry median with its 95% CI
    (bar), change points (dashed line with the size)."""
    ents = s["entries"]
    ys = [m for e in ents for m in e["medians"] if m > 0] + \
         [v for e in ents for v in (e["lo_s"], e["hi_s"]) if v]
    if not ys:
        return "<p>no positive run medians</p>"
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.08 or hi * 0.05 or 1e-9
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 70, 15, 15, 45
    w, h = width - left - right, height - top - bottom
    n = len(ents)
    X = (lambda i: left + (w * (i + 0.5) / n))
    Y = (lambda v: top + h * (1 - (v - lo) / (hi - lo)))
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='100%' role='img' "
           f"aria-label='trend of {_e(s['op'])} {_e(_size(s['msize']))}'>",
           f"<rect x='{left}' y='{top}' width='{w}' height='{h}' fill='#fafafa' stroke='#ccc'/>"]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f"<line x1='{left}' x2='{left + w}' y1='{Y(v):.1f}' y2='{Y(v):.1f}' stroke='#eee'/>"
                   f"<text x='{left - 4}' y='{Y(v) + 4:.1f}' font-size='10' text-anchor='end'>{_e(_fmt_time(v))}</text>")
    step = max(1, math.ceil(n / 8))
    for i, e in enumerate(ents):
        x = X(i)
        if i % step == 0:
            out.append(f"<text x='{x:.1f}' y='{top + h + 14}' font-size='10' text-anchor='middle'>"
                       f"{_e((e['started_at'] or '')[:10])}</text>")
        for m, f in zip(e["medians"], e["flags"]):
            if m <= 0:
                continue
            if f:
                out.append(f"<circle cx='{x:.1f}' cy='{Y(m):.1f}' r='3' fill='none' stroke='#c00'>"
                           f"<title>{_e(e['name'])}: {_e(_fmt_time(m))} flagged: {_e(f)}</title></circle>")
            else:
                out.append(f"<circle cx='{x:.1f}' cy='{Y(m):.1f}' r='2' fill='#9ab'/>")
        if e["lo_s"] and e["hi_s"]:
            out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{Y(e['lo_s']):.1f}' y2='{Y(e['hi_s']):.1f}' "
                       "stroke='#246' stroke-width='2'/>")
        if e["used"]:
            out.append(f"<rect x='{x - 3:.1f}' y='{Y(e['median_s']) - 1.5:.1f}' width='6' height='3' fill='#024'>"
                       f"<title>{_e(e['name'])} {_e(e['started_at'])}: median {_e(_fmt_time(e['median_s']))}</title></rect>")
    for c in s.get("changes", []):
        x = (X(c["entry_index"] - 1) + X(c["entry_index"])) / 2 if c["entry_index"] > 0 else X(0)
        col = "#c00" if c["direction"] == "slower" else "#080"
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{top + h}' stroke='{col}' stroke-dasharray='5,3'/>"
                   f"<text x='{x + 3:.1f}' y='{top + 12}' font-size='11' fill='{col}'>{c['size_pct']:+.1f}%</text>")
    out.append(f"<text x='{left + w / 2}' y='{height - 6}' font-size='11' text-anchor='middle'>entry (campaign start, UTC)"
               "</text></svg>")
    return "".join(out)


CSS = """body{font-family:sans-serif;max-width:960px;margin:1em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
td.num{text-align:right}.reg{color:#c00;font-weight:bold}.series{margin:1.5em 0;border-top:1px solid #999}
p.note{font-size:13px;color:#444}"""


def _series_id(i: int) -> str:
    return f"s{i}"


def _change_row(c: dict, anchor: str, size_class: str) -> str:
    """A table row of one change point, linking to its series' plot."""
    lo, hi = c["ci_pct"]
    return (f"<tr><td><a href='#{anchor}'>{_e(c['machine'])} {_e(c['config'])} {_e(c['op'])} "
            f"{_e(_size(c['msize']))} np={_e(c['nprocs'])}</a></td><td>{_e(_date(c['last_before']))} .. "
            f"{_e(_date(c['first_after']))}</td><td class='{size_class}'>{c['size_pct']:+.1f}%</td>"
            f"<td class='num'>[{lo:+.1f}, {hi:+.1f}]</td><td class='num'>{c['p_value']:.3f}</td>"
            f"<td>{_e(_factors_text(c['factors_changed']))}</td></tr>")


def render_html(res: dict, settings: dict) -> str:
    sid = {id(s): _series_id(i) for i, s in enumerate(res["series"])}
    owner = {id(c): s for s in res["series"] for c in s.get("changes", [])}
    rows = [_change_row(c, sid[id(owner[id(c)])], "num reg") for c in res["regressions"]]
    head = ("<tr><th>series</th><th>between</th><th>change</th><th>95% CI</th><th>p</th>"
            "<th>factors changed</th></tr>")
    nent = len({e["digest"] for s in res["series"] for e in s["entries"]})
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mpitempo history</title><style>{CSS}</style>"
             "</head><body>",
             f"<h1>mpitempo history</h1><p class='note'>{len(res['series'])} series, {nent} entries, store "
             f"{_e(settings['db'])}. Change points: E-divisive means (Matteson and James 2014) on the log of the "
             f"per-mpirun medians, whole entries permuted ({settings['permutations']} permutations, alpha "
             f"{settings['alpha']}); flagged runs (hollow red) are left out of the detection. Size: ratio of the "
             "medians of the run medians after and before, minus 1 (&gt; 0: slower); CI: bootstrap over entries. "
             "Bars: CI of each entry's median from the order statistics of its unflagged run medians: 95% with 6 runs "
             "or more, else their range (coverage 1 - 2<sup>1-n</sup>: 94% for 5 runs).</p>",
             f"<h2>Regressions</h2><p class='note'>slower by at least {settings['threshold_pct']:g}%, starting in "
             f"the latest {settings['latest']} entries of their series</p>"]
    parts.append(f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No regression.</p>")
    allrows = [_change_row(c, sid[id(owner[id(c)])], "num") for c in res["changes"]]
    parts.append("<h2>All change points</h2>" + (f"<table>{head}{''.join(allrows)}</table>" if allrows
                                                  else "<p>No change point.</p>"))
    parts.append("<h2>Series</h2>")
    for s in res["series"]:
        title = f"{s['machine']} {s['config']} {s['op']} {_size(s['msize'])} np={s['nprocs']}"
        parts.append(f"<div class='series' id='{sid[id(s)]}'><h3>{_e(title)}</h3>{svg_series(s)}")
        nflag = sum(1 for e in s["entries"] for f in e["flags"] if f)
        parts.append(f"<p class='note'>{len(s['entries'])} entries, {nflag} flagged run(s).</p>")
        if s.get("changes"):
            parts.append("<ul>" + "".join(f"<li>{_e(change_line(c))}; factors changed: "
                                          f"{_e(_factors_text(c['factors_changed']))}</li>" for c in s["changes"])
                         + "</ul>")
        parts.append("</div>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_html(outdir, res: dict, settings: dict) -> Path:
    from mpitempo.io.paths import write_output

    d = Path(outdir)
    d.mkdir(parents=True, exist_ok=True)
    return write_output(d / "index.html", render_html(res, settings), "--html")
