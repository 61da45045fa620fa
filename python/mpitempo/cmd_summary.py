"""`mpitempo summary DIR`: per (config, op, msize, nprocs) the distribution of run medians."""
from __future__ import annotations

import click

from .options import json_option
from .output import console, print_json, table, us
from .sizes import format_size
from .store import open_campaign, summarize


def print_summary(root, as_json: bool = False) -> list[dict]:
    data = open_campaign(root)
    rows = summarize(data)
    if as_json:
        print_json(rows)
        return rows
    con = console()
    t = table(f"mpitempo summary of {root}",
              [("config", "left"), ("op", "left"), ("msize", "right"), ("nprocs", "right"), ("runs", "right"),
               ("median [µs]", "right"), ("mean [µs]", "right"), ("min [µs]", "right"), ("max [µs]", "right"),
               ("spread", "right")])
    for r in rows:
        spread = f"{r['spread_pct']:.1f}%" if r["spread_pct"] is not None else "-"
        t.add_row(r["config"], r["op"], format_size(r["msize"]) if r["msize"] else "-", str(r["nprocs"]),
                  str(r["runs"]), us(r["median_s"]), us(r["mean_s"]), us(r["min_s"]), us(r["max_s"]), spread)
    t.caption = ("runs = mpiruns; median, mean, min, max are taken over the per-run medians of valid "
                 "measurements; spread = (max - min) / median")
    t.caption_justify = "left"
    con.print(t)
    notes = []
    few = sorted({r["runs"] for r in rows if r["runs"] < 5})
    if few:
        notes.append(f"some groups have only {few[0]} run(s): need >= 5 mpiruns per configuration "
                     "for a comparison that can reach significance")
    bad = [r for r in rows if r["invalid"]]
    if bad:
        notes.append(f"{sum(r['invalid'] for r in bad)} invalid measurements were excluded")
    from . import factors
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


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@json_option
def summary(campaign_dir, as_json):
    """Summarise a campaign directory: per (config, op, msize, nprocs) the
    number of runs and the median, mean, min and max of the per-run medians (µs).

    --json prints a list of objects with the keys config, op, msize, nprocs,
    runs, median_s, mean_s, min_s, max_s (seconds), spread_pct, measurements, invalid.
    """
    print_summary(campaign_dir, as_json)
