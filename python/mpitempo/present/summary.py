"""The summary of campaign directories for people (a table in µs with notes) or scripts (JSON):
`mpitempo summary`, and the summary `mpitempo run` prints at the end."""
from __future__ import annotations

from mpitempo.errors import MtError
from mpitempo.io.sizes import format_size
from mpitempo.present.tables import console, print_json, table, us
from mpitempo.stats.outliers import Filter, outlier_line


def _ci_cell(r) -> str:
    ci = r.get("median_ci") or {}
    if ci.get("lo_s") is None:
        return f"need >= {ci.get('need_runs', 6)} runs"
    return f"{us(ci['lo_s'])} .. {us(ci['hi_s'])}"


def print_summary(root, as_json: bool = False, filt: Filter | None = None, per_run: bool = False,
                  roots=None) -> list[dict]:
    from mpitempo.analysis.summary import counts_from_per_run, group_table, per_run_table
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.analysis.summary import summary_rows
    from mpitempo.analysis.flags import flag_cell, flag_notes
    filt = filt or Filter()
    from pathlib import Path

    from mpitempo import kinds

    if Path(root).is_dir() and (Path(root) / "runs").is_dir() and not kinds.of_campaign(root).has_measurements:
        return _summary_without_measurements(Path(root), as_json)
    data = open_campaigns(roots or [root])
    pr = per_run_table(data.con, filt)
    counts = counts_from_per_run(pr, filt)
    if per_run:
        rows = pr
        for r in rows:
            r["filter"] = filt.settings()
    else:
        rows = summary_rows(data, filt, per_run=pr)
    if as_json:
        print_json(rows)
        return rows
    con = console()
    many = len(data.labels) > 1
    src = ", ".join(str(r) for r in data.roots) if many else str(data.root)
    lead = [("campaign", "left")] if many else []
    if per_run:
        t = table(f"mpitempo summary of {src}, per mpirun",
                  lead + [("config", "left"), ("op", "left"), ("msize", "right"), ("nprocs", "right"),
                          ("run", "right"), ("n", "right"), ("min [µs]", "right"), ("Q1 [µs]", "right"),
                          ("median [µs]", "right"), ("mean [µs]", "right"), ("Q3 [µs]", "right"),
                          ("max [µs]", "right"), ("std [µs]", "right"), ("CV", "right"), ("RSE", "right"),
                          ("outliers", "right")])
        for r in rows:
            pct = lambda v: f"{100 * v:.1f}%" if v is not None else "-"  # noqa: E731
            t.add_row(*([r["campaign"]] if many else []), r["config"], r["op"], format_size(r["msize"]) if r["msize"] else "-",
                      str(r["nprocs"]), str(r["run_index"]), str(r["n"]), us(r["min_s"]), us(r["q1_s"]),
                      us(r["median_s"]), us(r["mean_s"]), us(r["q3_s"]), us(r["max_s"]), us(r["std_s"]),
                      pct(r["cv"]), pct(r["rse"]), str(r["outliers"]))
        t.caption = f"after the {filt.describe()}; CV = std / mean, RSE = standard error / mean"
    else:
        t = table(f"mpitempo summary of {src}",
                  lead + [("config", "left"), ("op", "left"), ("msize", "right"), ("nprocs", "right"),
                          ("runs", "right"), ("median [µs]", "right"), ("95% CI [µs]", "right"),
                          ("mean [µs]", "right"), ("min [µs]", "right"), ("max [µs]", "right"), ("spread", "right"),
                          ("outliers", "right"), ("flags", "left")])
        for r in rows:
            spread = f"{r['spread_pct']:.1f}%" if r["spread_pct"] is not None else "-"
            t.add_row(*([r["campaign"]] if many else []), r["config"], r["op"], format_size(r["msize"]) if r["msize"] else "-",
                      str(r["nprocs"]), str(r["runs"]), us(r["median_s"]), _ci_cell(r), us(r["mean_s"]),
                      us(r["min_s"]), us(r["max_s"]), spread, str(r["outliers"]), flag_cell(r.get("flags")))
        t.caption = ("runs = mpiruns; median, CI (distribution-free, of the median), mean, min, max are taken "
                     f"over the per-run medians after the {filt.describe()}; spread = (max - min) / median; "
                     "flags: see the warnings below and docs/methods.md")
    t.caption_justify = "left"
    con.print(t)
    notes = [outlier_line(counts["outliers"], counts["measurements"],
                          *((counts["mild"], counts["severe"]) if filt.kind == "tukey" else ()))
             + f" ({filt.describe()})"]
    if not per_run:
        few = sorted({r["runs"] for r in rows if r["runs"] < 5})
        if few:
            notes.append(f"some groups have only {few[0]} run(s): need >= 5 mpiruns per configuration "
                         "for a comparison that can reach significance")
        empty = [r for r in rows if r["runs_without_valid"]]
        if empty:
            notes.append(f"{sum(r['runs_without_valid'] for r in empty)} run(s) have no valid measurement "
                         "in some group and are left out of it")
        notes += flag_notes(rows)
        bad = [r for r in rows if r["invalid"]]
        if bad:
            notes.append(f"{sum(r['invalid'] for r in bad)} invalid measurements were excluded")
    from mpitempo.analysis import factors
    for cfg, keys in factors.within_group_differences(factors.load(root)).items():
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        notes.append(f"warning: the runs of config '{cfg}' differ in {shown}; they are summarised together "
                     f"(see: mpitempo info --diff {root})")
    if data.failed:
        notes.append(f"{len(data.failed)} failed run(s) not included: " + ", ".join(f["run_id"] for f in data.failed))
    if data.incomplete:
        notes.append(f"{len(data.incomplete)} incomplete run(s) not included: " + ", ".join(data.incomplete))
    for n in notes:
        con.print(n if n.startswith("warning:") else f"note: {n}")
    return rows


def _summary_without_measurements(root, as_json: bool) -> list[dict]:
    """Campaigns whose kind has no measurement table (clocks): the kind's own summary."""
    from mpitempo.analysis.clocks import summarise
    from mpitempo.io.rundir import find_runs
    from mpitempo.kinds.clocks import load_rows

    complete, failed, incomplete = find_runs(root)
    if not complete:
        raise MtError(f"campaign '{root}' has no complete runs ({len(failed)} failed, {len(incomplete)} incomplete)")
    rows = summarise(load_rows(complete))
    if as_json:
        print_json(rows)
        return rows
    from mpitempo.present.clocks import clocks_table

    clocks_table(rows, f"mpitempo summary of {root}: clock sync, {len(complete)} mpirun(s)")
    if failed or incomplete:
        console().print(f"note: {len(failed)} failed and {len(incomplete)} incomplete run(s) not included")
    return rows


