"""`mpitempo compare DIR [DIR] --by FACTOR`: Wilcoxon rank-sum on per-mpirun medians, benchstat style."""
from __future__ import annotations

import csv
import sys

import click

from mpitempo.options import FiniteFloatRange
from mpitempo.errors import MtError
from mpitempo.options import filter_options, json_option, make_filter
from mpitempo.present.tables import console, print_fitted, print_json, us, wrap_line
from mpitempo.io.sizes import format_size

# the choices of stats.compare.ALTERNATIVES, named here so that `compare --help` does not import
# numpy and scipy (tests/py/test_syscheck.py checks that the two agree)
ALTERNATIVES = ("two-sided", "less", "greater")

CSV_KEYS = ["factor", "a", "b", "op", "msize", "nprocs", "runs_a", "runs_b", "median_a_s", "median_b_s",
            "iqr_pct_a", "iqr_pct_b", "delta_pct", "u", "p_value", "p_holm", "stars", "significant", "alternative",
            "effect_s", "effect_ci_lo_s", "effect_ci_hi_s", "equivalent", "verdict", "bandwidth_a_MBps", "bandwidth_b_MBps",
            "bandwidth_change_pct"]


def _median_cell(med, disp) -> str:
    return us(med) + (f" ± {disp:.0f}%" if disp is not None else "")


def _delta_cell(r) -> str:
    if r["delta_pct"] is None or r["p_value"] is None:
        return "-"
    return f"{r['delta_pct']:+.2f}%" + ("" if r["significant"] else " n.s.")


def _effect_cell(r) -> str:
    lo, hi = (r.get("effect_ci_pct") or [None, None])[:2]
    if r.get("effect_pct") is None:
        return "-"
    ci = f" [{lo:+.2f}, {hi:+.2f}]" if lo is not None else " [need more runs]"
    return f"{r['effect_pct']:+.2f}%{ci}"


def _p_cell(r) -> str:
    p = r.get("p_holm", r["p_value"]) if "p_holm" in r else r["p_value"]
    if p is None:
        return "-"
    return f"p={p:.3f}" + (f" {r['stars']}" if r["stars"] else "")


def cells(r, multi: bool) -> list[str]:
    out = [r["b"]] if multi else []
    return out + [r["op"], format_size(r["msize"]) if r["msize"] else "0",
                  str(r["nprocs"]) if r["nprocs"] is not None else "*",
                  _median_cell(r["median_a_s"], r["iqr_pct_a"]), _median_cell(r["median_b_s"], r["iqr_pct_b"]),
                  _delta_cell(r), _effect_cell(r), _p_cell(r), f"{r['runs_a']} / {r['runs_b']}", r["verdict"]]


def headers(c: Comparison, multi: bool) -> list[str]:
    a = c.base
    b = "B" if multi else [v for v in c.levels if v != a][0]
    p = "p (Holm)" if c.rows and "p_holm" in c.rows[0] else "p"
    return (["B"] if multi else []) + ["op", "msize [B]", "nprocs", f"{a} median [µs]", f"{b} median [µs]",
                                       "delta", "shift [95% CI]", p, "runs A / B", "verdict"]


def caption(c: Comparison) -> str:
    alt = {"two-sided": "two-sided", "less": f"alternative: {c.base} is faster (less)",
           "greater": f"alternative: {c.base} is slower (greater)"}[c.alternative]
    return (f"--by {c.factor}, A = {c.base}; medians of the per-mpirun medians ± half the IQR across runs "
            f"(% of the median); delta = (B - A) / A, n.s. = not significant; shift = Hodges-Lehmann shift "
            f"of the run medians (B - A, % of A) with its 95% CI; Wilcoxon rank-sum "
            f"(Mann-Whitney U), {alt}; * p <= 0.05, ** <= 0.01, *** <= 0.001"
            + (f"; equivalence: two one-sided tests within ±{c.equivalence_pct:g}%" if c.equivalence_pct else ""))


def print_markdown(c: Comparison, multi: bool) -> None:
    hs = headers(c, multi)
    print("| " + " | ".join(hs) + " |")
    print("|" + "|".join("---" if i < (2 if multi else 1) else "---:" for i in range(len(hs))) + "|")
    for r in c.rows:
        print("| " + " | ".join(x.replace("|", "\\|") for x in cells(r, multi)) + " |")
    print()
    print(caption(c))
    for i, n in enumerate(c.notes, 1):
        print(f"\n[{i}] {n}")


def print_csv(c: Comparison) -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=CSV_KEYS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in c.rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_KEYS})


def parse_margin(text: str) -> float:
    """'1%' -> 0.01, '0.01' -> 0.01; a one-line error otherwise."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise MtError(f"--equivalence '{text}' is not a margin: give a percentage such as 1% or a fraction such "
                      "as 0.01") from None
    if not (0 < v < 1):
        raise MtError(f"--equivalence '{text}' must be between 0% and 100% (exclusive), e.g. 1%")
    return v


@click.command("compare", epilog="Examples:\n\n  mpitempo compare algos\n\n  mpitempo compare old-campaign new-campaign --alternative less\n\n  mpitempo compare a b c --by library --markdown\n\n  mpitempo compare algos --equivalence 1%")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR [DIR]")
@click.option("--by", "by", default=None, metavar="FACTOR",
              help="Factor whose levels are compared: config, campaign, library, timer, scheme, nprocs, compiler, "
                   "host, governor, cache_policy, clock_sync. [default: config with one DIR, campaign with two]")
@click.option("--alternative", type=click.Choice(ALTERNATIVES), default="two-sided", show_default=True,
              help="Alternative hypothesis about A relative to B: less = A is faster.")
@click.option("--base", default=None, metavar="LEVEL",
              help="Level used as A (default: the first; with two DIRs the first DIR). Every other level is B.")
@click.option("--holm", is_flag=True, help="Holm-adjust the p-values over all rows (family-wise error).")
@click.option("--alpha", type=FiniteFloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level for '~' and the notes.")
@click.option("--test", "test", type=click.Choice(["ranksum", "ttest"]), default="ranksum", show_default=True,
              help="ranksum: Wilcoxon rank-sum; ttest: Welch's t-test on the means of the per-run medians, "
                   "valid only when those are near normal (docs/statistics.md says when it is wrong).")
@click.option("--equivalence", "equivalence", default=None, metavar="PCT",
              help="Equivalence margin, e.g. 1% (or 0.01): two one-sided tests say whether A and B are "
                   "equivalent within ±PCT of A's median.")
@click.option("--allow-oversubscribed", is_flag=True,
              help="Compare oversubscribed runs too (refused by default: their times are correctness-only).")
@filter_options
@json_option
@click.option("--markdown", "as_markdown", is_flag=True, help="Print a Markdown table.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (times in seconds).")
def compare_cmd(dirs, by, alternative, base, holm, alpha, test, equivalence, allow_oversubscribed, filter_kind,
                tukey_k, cut_coef, as_json, as_markdown, as_csv):
    """Compare two levels of a factor (configurations, campaigns, MPI libraries, timers, ...) with
    the Wilcoxon rank-sum test on the per-mpirun medians, per (op, msize, nprocs).

    With one DIR the default factor is `config`; with two DIRs it is `campaign` (DIR 1 = A).
    A DIR may also be a store made by `mpitempo ingest`.

    Every row says the difference (n.s. when not significant), the Hodges-Lehmann shift of the run
    medians with its 95% CI, and a one-line verdict; with --equivalence 1% also whether the sides
    are equivalent within ±1% (two one-sided tests). Rows of flagged runs (shared CPU, outlier
    runs, multimodal, clock sync off) say so; oversubscribed runs are refused unless
    --allow-oversubscribed.

    Example: mpitempo compare camp/ --by config --equivalence 1%

    --json prints a list of objects with the keys factor, a, b, op, msize, nprocs, runs_a, runs_b,
    median_a_s, median_b_s, iqr_pct_a, iqr_pct_b, delta_pct, u, p_value, (p_holm), min_p, stars,
    significant, alternative, filter, effect_s, effect_ci_lo_s, effect_ci_hi_s, effect_pct,
    effect_ci_pct, equivalence_pct, p_equivalence, equivalent (null without --equivalence),
    flags_a, flags_b, flags, verdict; bandwidth ops (bytes_per_call > 0 in meta.json) also
    bandwidth_a_MBps, bandwidth_b_MBps, bandwidth_ci_a_MBps, bandwidth_ci_b_MBps,
    bandwidth_change_pct (derived from the per-run medians, not tested); notes go to stderr.
    """
    from mpitempo.analysis.comparison import Comparison, allowed_factors, compare
    from mpitempo.analysis.store import open_campaigns

    given = [f for f, on in (("--json", as_json), ("--markdown", as_markdown), ("--csv", as_csv)) if on]
    if len(given) > 1:
        raise MtError(f"{given[0]} and {given[1]} exclude each other: give at most one of --json, --markdown, --csv")
    if len(dirs) > 2:
        raise MtError(f"compare takes one or two campaign directories, got {len(dirs)}")
    if by is not None and by not in allowed_factors():
        raise MtError(f"unknown factor '{by}' for --by (allowed: {', '.join(allowed_factors())})")
    by = by or ("campaign" if len(dirs) == 2 else "config")
    margin = parse_margin(equivalence) if equivalence is not None else None
    data = open_campaigns(list(dirs))
    c = compare(data, by, alternative, base, holm, make_filter(filter_kind, tukey_k, cut_coef), alpha, test,
                equivalence=margin, allow_oversubscribed=allow_oversubscribed)
    c.equivalence_pct = 100 * margin if margin is not None else None
    if test == "ttest":
        c.notes.insert(0, "test: Welch's t-test on the means of the per-run medians instead of the rank-sum test "
                          "(the columns p and stars are the t-test's); it assumes near-normal means")
    multi = len(c.levels) > 2
    if as_json or as_csv:
        print_json(c.rows) if as_json else print_csv(c)
        for n in c.notes:
            print(f"mpitempo compare: note: {n}", file=sys.stderr)
        return
    if as_markdown:
        print_markdown(c, multi)
        return
    con = console()
    print_compare_table(c, multi, con)
    from mpitempo.present.derived import print_compare_bandwidth

    print_compare_bandwidth(c, con)
    for i, n in enumerate(c.notes, 1):
        con.print(wrap_line(f"[{i}] {n}", con.width, 4), markup=False)


def short_verdict(v: str) -> str:
    """The verdict for the terminal table: without the numbers that have their own columns (shift,
    CI, p); --json, --csv and --markdown keep the full sentence."""
    import re

    v = re.sub(r" \(CI [^)]*\)|, p=[0-9.e+-]+", "", v)
    v = re.sub(r"^B is ([0-9.]+%) (faster|slower)", r"B \1 \2", v)
    v = re.sub(r"^no significant difference \(n\.s\., shift [^)]*\)", "n.s.", v)
    v = re.sub(r"^significant \(p=[^)]*\) but the shift \S+ is ", "significant but ", v)
    v = re.sub(r"^equivalent within (\S+): shift \S+", r"equivalent within \1", v)
    return v


def print_compare_table(c, multi: bool, con) -> None:
    """The terminal table: fits the console (100 columns). The levels are called A and B in the
    headers (the line above says which is which; with more than two levels, one table per B);
    columns that never change are named above it; delta, runs and nprocs give way first; the
    verdict is short and wraps."""
    others = [v for v in c.levels if v != c.base]
    hs = headers(c, False)
    hs[3] = "A [µs]"
    hs[4] = "B [µs]"
    cols = [(h, "left" if i == 0 or h == "verdict" else "right") for i, h in enumerate(hs)]
    pi = hs.index("p (Holm)" if "p (Holm)" in hs else "p")
    for k, b in enumerate(others):
        rows = []
        for r in c.rows:
            if r["b"] != b:
                continue
            cl = cells(r, False)
            cl[-1] = short_verdict(cl[-1])
            cl[pi] = cl[pi].removeprefix("p=")
            rows.append(cl)
        if not rows:
            continue
        con.print(wrap_line(f"A = {c.base}, B = {b}; A and B [µs]: median of the per-mpirun medians ± half "
                            "their IQR", con.width, 4), markup=False)
        last = k == len(others) - 1
        print_fitted(f"mpitempo compare: {c.base} vs {b}", cols, rows,
                     keep=("op", "msize [B]", "verdict", "A [µs]", "B [µs]"),
                     drop_order=("delta", "runs A / B", "nprocs"), wrap=("verdict",),
                     caption=(caption(c) + "; the full verdict with CI and p is in --json, --csv and --markdown")
                     if last else None, con=con, more="--csv or --json")
        if not last:
            con.print("")
