"""`mpitempo ingest DIR... --db FILE` and `mpitempo export DIR... --parquet OUT`."""
from __future__ import annotations

import click

from .options import json_option
from .output import console, print_json, table


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
    from .store import ingest as do_ingest

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


@click.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@click.option("--parquet", "out", required=True, type=click.Path(), metavar="OUTDIR",
              help="Directory to write measurements.parquet and runs.parquet into.")
@json_option
def export(dirs, out, as_json):
    """Export campaign directories (or a store) as Parquet: measurements.parquet (every raw
    measurement with campaign, run_id, config, run_index) and runs.parquet (factors per mpirun)."""
    from .store import export_parquet, open_campaigns

    res = export_parquet(open_campaigns(list(dirs)), out)
    if as_json:
        print_json({"out": str(out), **{k.replace(".parquet", "_rows"): v for k, v in res.items()}})
        return
    for name, n in res.items():
        console().print(f"{out}/{name}: {n:,} rows")
