"""`mpitempo summary DIR`: per (config, op, msize, nprocs) the distribution of run medians."""
from __future__ import annotations

import click

from mpitempo.options import filter_options, json_option, make_filter
from mpitempo.present.summary import print_summary


@click.command()
@click.argument("campaign_dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@filter_options
@click.option("--per-run", is_flag=True, help="One row per mpirun: n, min, Q1, median, mean, Q3, max, std, CV, RSE.")
@json_option
def summary(campaign_dirs, filter_kind, tukey_k, cut_coef, per_run, as_json):
    """Summarise campaign directories (or one store made by `mpitempo ingest`): per (config, op,
    msize, nprocs) the number of runs and the median (with its 95% confidence interval), mean, min
    and max of the per-run medians (µs), after an outlier filter per mpirun.

    --json prints a list of objects with the keys campaign, config, op, msize, nprocs, runs,
    median_s, mean_s, min_s, max_s (seconds), spread_pct, measurements, invalid, outliers, filter,
    median_ci, run_medians, run_means, pooled (see docs/statistics.md).
    """
    print_summary(campaign_dirs[0], as_json, make_filter(filter_kind, tukey_k, cut_coef), per_run,
                  roots=list(campaign_dirs))
