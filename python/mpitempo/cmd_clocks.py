"""`mpitempo clocks`: evaluate clock-synchronisation algorithms (Hunold and Carpen-Amarie 2018, Fig. 3).

A campaign of kind `clocks` (kinds/clocks.py) through the common runner: every
mpirun runs `mpitempo-clocks`, which synchronises with each spec in turn and
measures every rank's offset to rank 0 right after sync and after each wait
time. This command summarises over mpiruns and plots.
"""
from __future__ import annotations


import click

from mpitempo.options import budget_options, FINITE
from mpitempo.errors import MtError
from mpitempo.analysis.clocks import summarise
from mpitempo.kinds.clocks import load_rows, parse_waits  # noqa: F401 (parse_waits: tests)
from mpitempo.options import (json_option, launcher_option, mpicc_option, np_option, param_options, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)
from mpitempo.present.clocks import clocks_table
from mpitempo.present.tables import console, print_json

@click.command(epilog="Examples:\n\n  mpitempo clocks -n 2 --algorithms hca3,jk --mpiruns 5 -o clk")
@np_option
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@param_options("clocks", exclude=("seed",))
@click.option("--sim", "sim", default=None, metavar="SEED[:MAXOFF_S[:MAXDRIFT_PPM]]",
              help="SIMULATED clocks: a random offset and drift per rank (validation only; same as --sim-random).")
@click.option("--mpiruns", type=int, default=1, show_default=True, help="Number of mpiruns.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the campaign directory here (runs/<id>/{meta.json,clocks.json}, clocks.png); "
                   "default: a temporary directory, removed afterwards.")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="Where to write the duration-vs-offset plot. [default: OUTDIR/clocks.png with -o, else none]")
@click.option("--timeout", "timeout_s", type=FINITE, default=3600, show_default=True, help="Seconds per mpirun.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
@budget_options
def clocks(np, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, sim, mpiruns, outdir, plot_path, timeout_s, quiet, as_json,
           budget, estimate_only, **params):
    """Evaluate clock-synchronisation algorithms: sync duration, and max and median
    |offset| of every rank's global clock to rank 0 right after sync and after
    each wait time, over several mpiruns (Hunold and Carpen-Amarie 2018, Fig. 3)."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.estimate import budget_gate
    from mpitempo.runner.execute import check_campaign, run_campaign

    if sim:
        params["sim_random"] = sim
    c = build_campaign(None, dict(params, np=np or 2, mpiruns=mpiruns, launcher=launcher, mpicc=mpicc, platform=platform,
                                        platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe,
                                  timeout_s=timeout_s, name="clocks"), kind="clocks")
    deadline, stop = budget_gate(c, budget, estimate_only, quiet, check_campaign(c), outdir=outdir)
    if stop:
        return
    if plot_path:
        from mpitempo.io.paths import PLOT_FORMATS, check_output_file

        check_output_file(plot_path, "the plot", PLOT_FORMATS)
    with run_campaign(c, outdir, quiet=quiet or as_json, deadline=deadline) as (out, complete):
        rows = load_rows(complete)
        if plot_path or outdir:
            from mpitempo.present.plots.clocks import duration_vs_offset

            plot_path = plot_path or str(out / "clocks.png")
            duration_vs_offset(rows, plot_path)
        if as_json:
            print_json(rows)
            return
        print_table(rows, c.np[0], mpiruns)
        if plot_path:
            console().print(f"plot: {plot_path}")
        if outdir:
            console().print(f"data: {out}")


def print_table(rows: list[dict], np: int, mpiruns: int) -> None:
    clocks_table(summarise(rows), f"clock sync on {np} ranks, {mpiruns} mpirun(s), medians over mpiruns")
