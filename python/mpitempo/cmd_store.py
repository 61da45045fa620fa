"""`mpitempo ingest DIR... --db FILE` and `mpitempo export DIR... --parquet OUT`."""
from __future__ import annotations

import click

from mpitempo.options import json_option
from mpitempo.present.tables import console, print_json, table


@click.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False), metavar="DIR...")
@click.option("--db", "db", default="results.duckdb", show_default=True, type=click.Path(dir_okay=False),
              help="DuckDB store that accumulates campaigns (created when missing).")
@json_option
def ingest(dirs, db, as_json):
    """Add campaign directories to a persistent DuckDB store, for history and regression tracking.
    Ingesting a campaign again replaces its rows (never duplicates). summary, compare and report
    accept the store in place of a DIR.

    --json prints a list of objects: campaign, path, name, ingested_at, runs, failed, incomplete,
    measurements, replaced.
    """
    from mpitempo.analysis.store import ingest as do_ingest

    recs = do_ingest(db, dirs)
    if as_json:
        print_json(recs)
        return
    t = table(f"mpitempo ingest into {db}", [("campaign", "left"), ("runs", "right"), ("measurements", "right"),
                                             ("failed", "right"), ("incomplete", "right"), ("", "left")])
    for r in recs:
        t.add_row(r["campaign"], str(r["runs"]), f"{r['measurements']:,}", str(r["failed"]), str(r["incomplete"]),
                  "replaced" if r["replaced"] else "new")
    console().print(t)


def osu_text(rows: list[dict], title: str) -> str:
    """The summary in the layout of the OSU Micro-Benchmarks: '#' comment lines, size in bytes
    first, latencies in µs; one block per (campaign, config, op, nprocs)."""
    from mpitempo import __version__

    blocks: dict[tuple, list[dict]] = {}
    for r in rows:
        blocks.setdefault((r.get("campaign", ""), r["config"], r["op"], r["nprocs"]), []).append(r)
    out = [f"# mpitempo {__version__}: OSU-style export of {title}",
           "# Avg/Min/Max Latency = median/min/max over the mpiruns of the per-run median (valid measurements)"]
    for (camp, cfg, op, nprocs), rs in blocks.items():
        out += ["#", f"# {op}  config: {cfg}" + (f"  campaign: {camp}" if camp else "") + f"  ranks: {nprocs}",
                f"# {'Size':<10}{'Avg Latency(us)':>18}{'Min Latency(us)':>18}{'Max Latency(us)':>18}{'Runs':>8}"]
        for r in sorted(rs, key=lambda x: x["msize"]):
            if r["median_s"] is None:
                continue
            out.append(f"{r['msize']:<12}{r['median_s'] * 1e6:>18.2f}{r['min_s'] * 1e6:>18.2f}"
                       f"{r['max_s'] * 1e6:>18.2f}{r['runs']:>8}")
    return "\n".join(out) + "\n"


@click.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@click.option("--parquet", "out", default=None, type=click.Path(), metavar="OUTDIR",
              help="Directory to write measurements.parquet and runs.parquet into.")
@click.option("--osu", "osu", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the summary as OSU Micro-Benchmarks-style text ('-' for stdout).")
@json_option
def export(dirs, out, osu, as_json):
    """Export campaign directories (or a store) as Parquet: measurements.parquet (every raw
    measurement with campaign, run_id, config, run_index) and runs.parquet (factors per mpirun);
    or (--osu) the summary in the text layout OSU Micro-Benchmarks users already read and plot."""
    from mpitempo.errors import MtError
    from mpitempo.analysis.store import export_parquet, open_campaigns, summarize

    if not out and not osu:
        raise MtError("give --parquet OUTDIR and/or --osu FILE")
    from mpitempo.io.paths import check_output_dir, check_output_file

    if osu and osu != "-":
        check_output_file(osu, "--osu")
    if out:
        check_output_dir(out, "--parquet")
    data = open_campaigns(list(dirs))
    if osu:
        text = osu_text(summarize(data), ", ".join(dirs))
        if osu == "-":
            click.echo(text, nl=False)
        else:
            with open(osu, "w") as f:
                f.write(text)
        if not out:
            return
    res = export_parquet(data, out)
    if as_json:
        print_json({"out": str(out), **{k.replace(".parquet", "_rows"): v for k, v in res.items()}})
        return
    for name, n in res.items():
        console().print(f"{out}/{name}: {n:,} rows")
