"""`mpitempo report DIR [DIR...] [-o OUT]`: a self-contained static HTML report with plots."""
from __future__ import annotations

from pathlib import Path

import click

from mpitempo.options import filter_options, json_option, make_filter
from mpitempo.present.tables import print_json


@click.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@click.option("-o", "--output", "out", default=None, type=click.Path(),
              help="HTML file to write (default: report.html in the first DIR).")
@click.option("--title", default=None, help="Title of the report.")
@filter_options
@json_option
def report(dirs, out, title, filter_kind, tukey_k, cut_coef, as_json):
    """Write a static HTML report (one file, plots embedded): factors, summary table, comparison
    table (>= 2 configurations, or several DIRs = repeated campaigns), runtime vs size with
    dispersion, per-size box plots with significance marks, histograms with KDE, the CLT check,
    mpirun as a factor (Kruskal-Wallis) and the reproducibility of repeated campaigns.

    --json prints {"report": PATH, "bytes": N}.
    """
    from mpitempo.present.report import write_report
    from mpitempo.analysis.store import open_campaigns

    data = open_campaigns(list(dirs))
    if out is None:
        first = Path(dirs[0])
        out = (first if first.is_dir() else first.parent) / "report.html"
    path = write_report(data, out, make_filter(filter_kind, tukey_k, cut_coef), title)
    if as_json:
        print_json({"report": str(path), "bytes": path.stat().st_size})
    else:
        click.echo(f"mpitempo: wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
