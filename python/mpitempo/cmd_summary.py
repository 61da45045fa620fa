"""`mpitempo summary DIR`: per (config, op, msize, nprocs) the distribution of run medians."""
from __future__ import annotations

import click

from mpitempo.options import filter_options, json_option, make_filter


@click.command(epilog="Examples:\n\n  mpitempo summary my-campaign\n\n  mpitempo summary my-campaign --per-run\n\n"
                       "  mpitempo summary my-campaign --csv > summary.csv\n\n  mpitempo summary old new --markdown")
@click.argument("campaign_dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@filter_options
@click.option("--per-run", is_flag=True, help="One row per mpirun: n, min, Q1, median, mean, Q3, max, std, CV, RSE.")
@click.option("--process", "process", default=None, metavar="NAME|all",
              help="Process the raw data as another benchmark does (PS1-PS8 of Hunold and Carpen-Amarie 2016): "
                   "reprompi, ps1_skampi, ps2_mpiblib, ps3_osu, ps4_mpiblib_global, ps5_mpibench, ps6_nbcbench, "
                   "ps7_imb, ps8_mpptest, or all side by side. PS1-PS8 need runs recorded with --per-rank.")
@click.option("--plot", "plot", default=None, metavar="FILE.png",
              help="With --process: also write a plot of each scheme's value vs message size.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the table as CSV (every column, µs).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the table as GitHub Markdown.")
@json_option
def summary(campaign_dirs, filter_kind, tukey_k, cut_coef, per_run, process, plot, as_csv, as_markdown, as_json):
    """Summarise campaign directories (or one store made by `mpitempo ingest`): per (config, op,
    msize, nprocs) the number of runs and the median (with its 95% confidence interval), mean, min
    and max of the per-run medians (µs), after an outlier filter per mpirun.

    Columns that never change are named above the table instead of shown (the table fits 100
    columns); --csv keeps every column. --json prints a list of objects with the keys campaign,
    config, op, msize, nprocs, runs, median_s, mean_s, min_s, max_s (seconds), spread_pct,
    measurements, invalid, outliers, filter, median_ci, run_medians, run_means, pooled (see docs/statistics.md).

    --process NAME|all: one row per (config, op, msize, nprocs) and processing scheme, with process,
    value_s and the scheme's own numbers (docs/processing.md). Example:

        mpitempo run --per-rank --sync hca3 -o ar && mpitempo summary ar --process all --plot ps.png
    """
    from mpitempo.errors import MtError

    given = [f for f, on in (("--json", as_json), ("--csv", as_csv), ("--markdown", as_markdown)) if on]
    if len(given) > 1:
        raise MtError(f"{given[0]} and {given[1]} exclude each other: give at most one of --json, --csv, --markdown")
    fmt = "csv" if as_csv else "markdown" if as_markdown else None
    if process is not None or plot is not None:
        from mpitempo.stats.processing import check_process

        if process is None:
            raise MtError("--plot needs --process NAME|all")
        if per_run:
            raise MtError("--per-run and --process cannot be combined")
        names = check_process(process)
        if plot:
            from mpitempo.io.paths import PLOT_FORMATS, check_not_input, check_output_file

            from mpitempo.io.paths import check_not_in_data_dir, check_replaceable, looks_like_plot

            # a campaign's data first (the refusal that protects it), then matplotlib's formats: before anything
            # is read
            check_not_input(plot, campaign_dirs, "--plot")
            check_not_in_data_dir(plot, "--plot", top_ok=True)   # no campaign's data, not only those read
            check_output_file(plot, "--plot", PLOT_FORMATS)
            check_replaceable(plot, "--plot", looks_like_plot)
        from mpitempo.present.processing import print_processing

        print_processing(list(campaign_dirs), names, make_filter(filter_kind, tukey_k, cut_coef), as_json, plot)
        return
    from mpitempo.present.summary import print_summary   # numpy and DuckDB only when it runs

    print_summary(campaign_dirs[0], as_json, make_filter(filter_kind, tukey_k, cut_coef), per_run,
                  roots=list(campaign_dirs), fmt=fmt or "table")
