"""`mpitempo report DIR [DIR...] [-o OUT]`: a self-contained static HTML report with plots."""
from __future__ import annotations

from pathlib import Path

import click

from mpitempo.options import filter_options, json_option, make_filter
from mpitempo.present.tables import print_json


@click.command(epilog="Examples:\n\n  mpitempo report my-campaign -o report.html\n\n  mpitempo report run1 run2 run3 --title 'allreduce, 3 campaigns'")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@click.option("-o", "--output", "out", default=None, type=click.Path(),
              help="HTML file to write. [default: report.html in the first DIR]")
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
    from mpitempo import kinds
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.present.report import write_report

    first = Path(dirs[0])
    if out is None:
        out = (first if first.is_dir() else first.parent) / "report.html"
    from mpitempo.io.paths import check_not_input, check_output_file

    check_not_input(out, dirs, "the report")
    from mpitempo.io.paths import check_not_in_data_dir, check_replaceable, looks_like_report

    check_not_in_data_dir(out, "the report", top_ok=True)   # no campaign's data, not only those read
    check_replaceable(out, "the report", looks_like_report)
    check_output_file(out, "the report")
    from mpitempo.errors import MtError

    if first.is_dir() and (first / "runs").is_dir() and kinds.of_campaign(first).name == "trace":
        raise MtError(f"'{first}' is a trace campaign: it has no HTML report; see mpitempo trace {first} "
                      "(each run and the wait states over the mpiruns)")
    if first.is_dir() and (first / "runs").is_dir() and not kinds.of_campaign(first).has_measurements:
        path = _clocks_report(first, Path(out), title)
    else:
        data = open_campaigns(list(dirs))
        path = write_report(data, out, make_filter(filter_kind, tukey_k, cut_coef), title)
    if as_json:
        print_json({"report": str(path), "bytes": path.stat().st_size})
    else:
        click.echo(f"mpitempo: wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


def _clocks_report(root: Path, out: Path, title: str | None) -> Path:
    import tempfile

    from mpitempo.analysis.clocks import summarise
    from mpitempo.errors import MtError
    from mpitempo.io.rundir import find_runs
    from mpitempo.kinds.clocks import load_rows
    from mpitempo.present.clocks import clocks_html
    from mpitempo.present.plots.clocks import duration_vs_offset

    complete, _, _ = find_runs(root)
    if not complete:
        raise MtError(f"campaign '{root}' has no complete runs")
    rows = load_rows(complete)
    with tempfile.TemporaryDirectory() as d:
        png = Path(d) / "clocks.png"
        duration_vs_offset(rows, str(png))
        html = clocks_html(summarise(rows), png.read_bytes(), title or f"mpitempo clock sync: {root.name}")
    from mpitempo.io.paths import write_output

    return write_output(out, html, "the report")
