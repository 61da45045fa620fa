"""The human side of `mpitempo tune`: the table of default vs chosen per size, and the report file."""
from __future__ import annotations

from mpitempo.io.sizes import format_size
from mpitempo.present.tables import console, print_fitted, us, wrap_line


def _alt(r) -> dict | None:
    """The best alternative of a row that keeps the default (analysis.tune: ``alternative``)."""
    a = r.get("alternative")
    return a if r.get("chosen") in (None, "default") and not r.get("verify") and isinstance(a, dict) else None


def _gain_text(g, lo, hi) -> str:
    if g is None:
        return "-"
    return f"{g:+.1f}%" + (f" [{lo:+.1f}, {hi:+.1f}]" if lo is not None and hi is not None else "")


def _gain(r) -> str:
    a = _alt(r)
    if a is not None:      # in parentheses: the alternative's, not a gain taken
        return "(" + _gain_text(a.get("gain_pct"), a.get("gain_ci_lo_pct"), a.get("gain_ci_hi_pct")) + ")"
    if r.get("chosen") in (None, "default") and not r.get("verify"):
        return "-"
    g = r.get("gain_pct")
    if g is None:
        return "-"
    ci = ""
    if r.get("gain_ci_lo_pct") is not None:
        ci = f" [{r['gain_ci_lo_pct']:+.1f}, {r['gain_ci_hi_pct']:+.1f}]"
    return f"{g:+.1f}%{ci}"


def _p(r) -> str:
    a = _alt(r)
    if a is not None:
        return "-" if a.get("p_holm") is None else f"({a['p_holm']:.3g})"
    p = r.get("p_value")
    return "-" if p is None else f"{p:.3g}"


def _chosen(r) -> str:
    a = _alt(r)
    return f"default (best other: {a['algorithm']})" if a is not None else r["chosen"]


def print_rows(rows: list[dict], title: str, verify: bool = False) -> None:
    cols = [("op", "left"), ("size [B]", "right"), ("np", "right"), ("default [µs]", "right"),
            ("chosen", "left"), ("chosen [µs]", "right"), ("gain (95% CI)", "right"), ("p", "right"),
            ("note", "left")]
    cells, notes = [], []
    for r in rows:
        note = r.get("why_default", "") if r["chosen"] == "default" else ""
        if r.get("chosen_per_size"):
            note = f"per size: {r['chosen_per_size']}"
        if r.get("oversubscribed"):
            note = ("OVERSUBSCRIBED: function only; " + note).rstrip("; ")
        if r.get("predicted"):
            note = "PREDICTED by the a+b*m models, not measured at this size"
        if verify:
            note = ("library default here (nothing to confirm)" if r["chosen"] == "default" else
                    "gain holds (p <= alpha)" if r.get("confirmed") else "not confirmed") + \
                   ("; OVERSUBSCRIBED" if r.get("oversubscribed") else "")
        if note and note not in notes:
            notes.append(note)
        cells.append([r["op"], format_size(r["msize"]) if r["msize"] else "0", str(r["nprocs"]),
                      us(r.get("median_default_s")), _chosen(r), us(r.get("median_chosen_s")),
                      _gain(dict(r, verify=verify)), _p(r), f"[{notes.index(note) + 1}]" if note else ""])
    con = console()
    con.print(wrap_line(title, con.width, 4), markup=False)
    # the notes are footnotes under the table, so that the table fits 100 columns
    print_fitted("", cols, cells, keep=("op", "size [B]", "chosen"), drop_order=("np", "chosen [µs]", "p"),
                 wrap=("chosen",), con=con)
    for i, n in enumerate(notes, 1):
        con.print(wrap_line(f"[{i}] {n}", con.width, 4), markup=False)
    if any(_alt(r) for r in rows):
        con.print(wrap_line("rows that keep the default: gain (95% CI) and Holm-adjusted p in parentheses are "
                            "those of the best other algorithm, named in 'chosen'", con.width, 4), markup=False)


def report_text(result: dict) -> str:
    """A plain-text report (tune-report.txt) of the whole result."""
    lines = [f"mpitempo tune: {result['library']}", ""]
    lines.append(f"algorithms from: {result['discovery']}; method: {result['method']}")
    lines.append(f"decision: the default unless an algorithm is faster with Holm-adjusted p <= {result['alpha']:g} "
                 f"(two-sided Mann-Whitney U on per-mpirun medians) and by more than {result['min_gain_pct']:g}%")
    lines.append("")
    hdr = f"{'op':<15}{'size [B]':>10}{'np':>4}{'default [µs]':>14}  {'chosen':<28}{'chosen [µs]':>12}  " \
          f"{'gain % (95% CI)':<24}{'p':>8}"
    lines.append(hdr)
    for r in result["rows"]:
        def f(x):
            return "-" if x is None else f"{x * 1e6:.3f}"
        g = "-" if r["chosen"] == "default" or r.get("gain_pct") is None else (
            f"{r['gain_pct']:+.1f} [{r['gain_ci_lo_pct']:+.1f}, {r['gain_ci_hi_pct']:+.1f}]"
            if r.get("gain_ci_lo_pct") is not None else f"{r['gain_pct']:+.1f}")
        p = "-" if r.get("p_value") is None else f"{r['p_value']:.3g}"
        a = _alt(r)
        alt = "" if a is None else (f"  best other: {a['algorithm']} {_gain_text(a.get('gain_pct'), a.get('gain_ci_lo_pct'), a.get('gain_ci_hi_pct'))}"
                                    + ("" if a.get("p_holm") is None else f" (Holm p={a['p_holm']:.3g})"))
        lines.append(f"{r['op']:<15}{r['msize']:>10}{r['nprocs']:>4}{f(r.get('median_default_s')):>14}  "
                     f"{r['chosen']:<28}{f(r.get('median_chosen_s')):>12}  {g:<24}{p:>8}"
                     + ("  OVERSUBSCRIBED (function only)" if r.get("oversubscribed") else "")
                     + ("  PREDICTED (not measured)" if r.get("predicted") else "") + alt)
    lines.append("")
    if not any(r["chosen"] != "default" for r in result["rows"]):
        lines.append("No algorithm is significantly faster than the library's default at any measured size: "
                     "the default is kept everywhere.")
    lines.append(f"configuration: {result.get('config_file') or '(none: default kept)'}")
    lines.append(f"settings ({result['settings_file']}):")
    lines += [f"  {k}={v}" for k, v in result["settings"].items()] or ["  (none)"]
    if result.get("left_out"):
        lines.append("left out to fit the budget: " + "; ".join(result["left_out"]))
    for n in result.get("notes", []):
        lines.append(f"note: {n}")
    from mpitempo.analysis.cliffs import describe
    lines.append("")
    lines.append("cliffs (a jump beyond the a+b*x model of a series, see docs/tune.md):")
    lines += [f"  {describe(c)}" for c in result.get("cliffs", [])] or ["  none"]
    pred = result.get("prediction") or {}
    if pred:
        lines.append(f"prediction: {pred['method']}")
        for g in pred.get("leave_one_out", []):
            if g.get("points"):
                lines.append(f"  {g['op']} np={g['nprocs']}: {g['points']} held-out sizes, best algorithm right at "
                             f"{100 * g['hit_rate']:.0f}%, regret median {g['regret_median_pct']:.1f}% max "
                             f"{g['regret_max_pct']:.1f}%, |time error| median {g['abs_time_err_median_pct']:.1f}% "
                             f"max {g['abs_time_err_max_pct']:.1f}%"
                             + (" OVERSUBSCRIBED (function only)" if g.get("oversubscribed") else ""))
    lines.append("")
    lines.append("every algorithm vs the default (gain %, Holm-adjusted p):")
    for c in result.get("candidates", []):
        g = "-" if c["gain_pct"] is None else f"{c['gain_pct']:+.1f}"
        p = "-" if c["p_holm"] is None else f"{c['p_holm']:.3g}"
        med = "-" if c["median_s"] is None else f"{c['median_s'] * 1e6:.3f}"
        lines.append(f"  {c['op']} {c['msize']} B np={c['nprocs']} {c['algorithm']}: median "
                     f"{med} µs, gain {g}%, p {p}"
                     + (" (chosen)" if c.get("chosen") else ""))
    return "\n".join(lines) + "\n"
