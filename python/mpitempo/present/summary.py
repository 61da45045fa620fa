"""The summary of campaign directories for people (a table in µs with notes) or scripts (JSON):
`mpitempo summary`, and the summary `mpitempo run` prints at the end."""
from __future__ import annotations

from mpitempo.errors import MtError
from mpitempo.io.sizes import size_cell

from mpitempo.safe_text import safe
from mpitempo.present.tables import compact, console, fit, left_out_line, plain_table, print_json, print_table, us
from mpitempo.stats.outliers import Filter, outlier_line
from mpitempo.analysis.warmup import warmup_cell
from mpitempo.analysis.adaptive import stop_notes
from mpitempo import kinds
from mpitempo.analysis import factors
from mpitempo.analysis.clocks import summarise
from mpitempo.analysis.flags import campaign_metas, flag_cell, flag_notes, simulation_of, sync_notes
from mpitempo.analysis.summary import counts_from_per_run, group_table, per_run_table, summary_rows
from mpitempo.io.rundir import find_runs
from mpitempo.kinds.clocks import load_rows
from mpitempo.present.clocks import clocks_table


def _ci_cell(r) -> str:
    ci = r.get("median_ci") or {}
    if ci.get("lo_s") is None:
        return f"need >= {ci.get('need_runs', 6)} runs"
    return f"{us(ci['lo_s'])}-{us(ci['hi_s'])}"


def _num(x, scale: float = 1e6) -> str:
    return "" if x is None else f"{x * scale:.6g}"


def _pct(v) -> str:
    return f"{100 * v:.1f}%" if v is not None else "-"


def _summary_columns(many: bool) -> list[tuple]:
    """(header, justify, people cell, csv cell) of the summary table."""
    c = [("config", "left", lambda r: r["config"], lambda r: r["config"]),
         ("op", "left", lambda r: r["op"], lambda r: r["op"]),
         ("msize", "right", lambda r: size_cell(r["op"], r["msize"]), lambda r: str(r["msize"])),
         ("nprocs", "right", lambda r: str(r["nprocs"]), lambda r: str(r["nprocs"])),
         ("runs", "right", lambda r: str(r["runs"]), lambda r: str(r["runs"])),
         ("warm-up", "right", lambda r: warmup_cell(r.get("warmup")), lambda r: warmup_cell(r.get("warmup"))),
         ("median [µs]", "right", lambda r: us(r["median_s"]), lambda r: _num(r["median_s"])),
         ("95% CI [µs]", "right", _ci_cell,
          lambda r: "" if (r.get("median_ci") or {}).get("lo_s") is None
          else f"{_num(r['median_ci']['lo_s'])}..{_num(r['median_ci']['hi_s'])}"),
         ("CI ±", "right", lambda r: "-" if r.get("ci_rel") is None else f"±{100 * r['ci_rel']:.2g}%",
          lambda r: "" if r.get("ci_rel") is None else f"{100 * r['ci_rel']:.6g}"),
         ("stop", "left", lambda r: r.get("stop") or "-", lambda r: r.get("stop") or ""),
         ("mean [µs]", "right", lambda r: us(r["mean_s"]), lambda r: _num(r["mean_s"])),
         ("min [µs]", "right", lambda r: us(r["min_s"]), lambda r: _num(r["min_s"])),
         ("max [µs]", "right", lambda r: us(r["max_s"]), lambda r: _num(r["max_s"])),
         ("spread", "right", lambda r: f"{r['spread_pct']:.1f}%" if r["spread_pct"] is not None else "-",
          lambda r: "" if r["spread_pct"] is None else f"{r['spread_pct']:.4g}%"),
         ("outliers", "right", lambda r: str(r["outliers"]), lambda r: str(r["outliers"])),
         ("flags", "left", _flags, _flags)]
    return ([("campaign", "left", lambda r: r["campaign"], lambda r: r["campaign"])] if many else []) + c


def _flags(r) -> str:
    return flag_cell(r.get("flags"))


def _per_run_columns(many: bool) -> list[tuple]:
    c = [("config", "left", lambda r: r["config"], lambda r: r["config"]),
         ("op", "left", lambda r: r["op"], lambda r: r["op"]),
         ("msize", "right", lambda r: size_cell(r["op"], r["msize"]), lambda r: str(r["msize"])),
         ("nprocs", "right", lambda r: str(r["nprocs"]), lambda r: str(r["nprocs"])),
         ("run", "right", lambda r: str(r["run_index"]), lambda r: str(r["run_index"])),
         ("n", "right", lambda r: str(r["n"]), lambda r: str(r["n"]))]
    for h, k in (("min", "min_s"), ("Q1", "q1_s"), ("median", "median_s"), ("mean", "mean_s"), ("Q3", "q3_s"),
                 ("max", "max_s"), ("std", "std_s")):
        c.append((f"{h} [µs]", "right", (lambda k: lambda r: us(r[k]))(k), (lambda k: lambda r: _num(r[k]))(k)))
    c += [("CV", "right", lambda r: _pct(r["cv"]), lambda r: _num(r["cv"], 1)),
          ("RSE", "right", lambda r: _pct(r["rse"]), lambda r: _num(r["rse"], 1)),
          ("outliers", "right", lambda r: str(r["outliers"]), lambda r: str(r["outliers"]))]
    return ([("campaign", "left", lambda r: r["campaign"], lambda r: r["campaign"])] if many else []) + c


def _any_simulated(data) -> bool:
    """Did any run of the opened campaigns run on a simulated platform (analysis.flags.simulation_of)?"""

    return any(simulation_of(m) for runs in campaign_metas(data).values() for m in runs.values())


def print_summary(root, as_json: bool = False, filt: Filter | None = None, per_run: bool = False,
                  roots=None, fmt: str = "table") -> list[dict]:
    from mpitempo.analysis.store import open_campaigns
    filt = filt or Filter()
    from pathlib import Path

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
    con = console(fit=True)
    many = len(data.labels) > 1
    src = ", ".join(str(r) for r in data.roots) if many else str(data.root)
    cols = _per_run_columns(many) if per_run else _summary_columns(many)
    heads = [(h, j) for h, j, *_ in cols]
    if fmt == "csv":       # every column, numbers in µs at full precision
        print(plain_table(heads, [[c[3](r) for c in cols] for r in rows], "csv"), end="")
        return rows
    # units before the path: a long path wraps the title at the table's width, and the units stay on line one
    simulated = any("simulated" in (r.get("flags") or []) for r in rows) or (per_run and _any_simulated(data))
    title = ("mpitempo summary" + (" per mpirun" if per_run else "") + (" — SIMULATED platform" if simulated else "")
             + f" (times in µs) of {src}")
    header, cells, const = compact([(h.replace(" [µs]", ""), j) for h, j in heads],
                                   [[c[2](r) for c in cols] for r in rows], keep=("op", "msize", "median"))
    left_out: list[str] = []
    if fmt != "markdown":
        header, cells, left_out = fit(header, cells, ("mean", "outliers", "Q1", "Q3", "std", "spread", "RSE", "min",
                                                      "max", "warm-up", "CI ±"), width=con.width)
    if fmt == "markdown":
        print(f"**{title}**\n" + (f"\nsame in every row: {', '.join(const)}\n" if const else "") + "\n"
              + plain_table(header, cells, "markdown"))
        return rows
    if const:
        con.print("same in every row: " + ", ".join(const))
    if per_run:
        caption = f"after the {filt.describe()}; CV = std / mean, RSE = standard error / mean"
    else:
        caption = ("runs = mpiruns; median, CI (distribution-free, of the median), mean, min, max are taken "
                   f"over the per-run medians after the {filt.describe()}; spread = (max - min) / median; "
                   "flags: see the warnings below and docs/methods.md")
    # names are not shortened: the numbers give way first (left out, named under the table)
    print_table(con, title, header, [[safe(v) for v in row] for row in cells], caption=caption)
    if left_out:
        con.print(left_out_line(left_out, con.width, "--csv or --json"), markup=False)
    if not per_run:
        from mpitempo.present.derived import print_derived

        print_derived(rows, con, many)
        from mpitempo.present.definitions import summary_notes   # where a number differs from OSU's / IMB's
        for n in summary_notes(data, rows):
            con.print(safe(n))
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
        notes += sync_notes(rows)
        notes += stop_notes(rows)
        bad = [r for r in rows if r["invalid"]]
        if bad:
            notes.append(f"{sum(r['invalid'] for r in bad)} invalid measurements were excluded")
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
    """Campaigns whose kind has no measurement table (clocks, trace): the kind's own summary."""

    if kinds.of_campaign(root).name == "trace":   # each run and the wait states over the mpiruns
        from mpitempo.present.trace import show_campaign

        show_campaign(root, None, None, as_json)
        return []

    complete, failed, incomplete = find_runs(root)
    if not complete:
        raise MtError(f"campaign '{root}' has no complete runs ({len(failed)} failed, {len(incomplete)} incomplete)")
    rows = summarise(load_rows(complete))
    if as_json:
        print_json(rows)
        return rows

    clocks_table(rows, f"mpitempo summary of {root}: clock sync, {len(complete)} mpirun(s)")
    if failed or incomplete:
        console().print(f"note: {len(failed)} failed and {len(incomplete)} incomplete run(s) not included")
    return rows


