"""`mpitempo pingpong`: small-message latency after Luecke, Spanoyannis and Kraeva (2004).

A campaign of kind `pingpong` (kinds/pingpong.py) through the common runner:
the C core `mpitempo-pingpong` measures (timer study, npp, ntrial timings of
npp ping-pongs, optionally the loop-averaged method) into each run directory;
this command then analyses and presents: the Appendix C summary,
the full output, histograms, the rate curve, the npp sweep table and the
comparison with the loop-averaged method, or --json.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import click

from mpitempo.options import budget_options, FINITE
from mpitempo.errors import MtError
from mpitempo.options import (json_option, launcher_option, mpicc_option, np_option, param_options, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)
from mpitempo.present.tables import print_json

def validate_analysis(cut_coef: float, bins: int) -> None:
    if not (cut_coef > 1) or not math.isfinite(cut_coef):
        raise MtError(f"invalid --cut-coef {cut_coef:g}: must be > 1 (filtering keeps times <= cut_coef x median)")
    if bins < 1:
        raise MtError(f"invalid --bins {bins}: must be >= 1")


def present(a: dict, as_json: bool, full: bool, outdir: Path | None, run, verbose: bool = False) -> None:
    from mpitempo.analysis import pingpong as analysis
    from mpitempo.present import pingpong as report

    sizes = sorted({r["msize"] for r in a["results"]})
    sweeps = [analysis.sweep_table(a["results"], m) for m in sizes
              if len({r["npp"] for r in a["results"] if r["msize"] == m}) > 1]
    summary = report.summary_text(a, sweeps, verbose=verbose)
    if outdir is not None:
        from mpitempo.present.plots import pingpong as plots

        (outdir / "summary.txt").write_text(report.summary_text(a, sweeps, verbose=True))
        (outdir / "full.txt").write_text(report.full_text(a, sweeps))
        (outdir / "analysis.json").write_text(json.dumps(analysis.json_records(a, details=True), indent=1) + "\n")
        plots.write_all(a, outdir / "plots")
    if as_json:
        print_json(analysis.json_records(a, details=full))
    elif full:
        click.echo(report.full_text(a, sweeps), nl=False)
    else:
        click.echo(summary, nl=False)
        if outdir is not None:
            click.echo(f"\nfull output, raw timings, analysis.json and plots in {outdir}")


SIM_TIMER_READS = 4096      # the timer study's read pairs on a simulated platform (unless --timer-reads)


@click.command(epilog="Examples:\n\n  mpitempo pingpong --msizes 8,64 -o pp\n\n"
                      "  mpitempo pingpong --platform platforms/fattree256.xml --platform-ppn 1 -n 32 --pairs 0-1,0-31")
@np_option
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@param_options("pingpong", exclude=("loop",))
@click.option("--compare", is_flag=True, help="Also run the loop-averaged OSU/IMB-style ping-pong and compare.")
@click.option("--cut-coef", type=FINITE, default=2.0, show_default=True,
              help="Filtering keeps times <= cut_coef x median (must be > 1).")
@click.option("--bins", type=int, default=40, show_default=True, help="Histogram bins.")
@click.option("--mpiruns", type=int, default=1, show_default=True, help="Number of mpiruns.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the campaign directory here: runs/<id>/{meta.json,timings.csv} and per run summary.txt, "
                   "full.txt, analysis.json, plots/ (default: a temporary directory, removed afterwards).")
@click.option("--from", "from_dir", type=click.Path(exists=True), default=None,
              help="Analyse an existing campaign, run directory or JSON document instead of measuring.")
@click.option("--verbose", "-v", is_flag=True,
              help="Also print the statistics block of every message size (Appendix C of Luecke et al.); by "
                   "default the rate curve, one line per size, and the comparisons.")
@click.option("--full", is_flag=True, help="Print the full output (timer study, histograms, frequency tables).")
@click.option("--timeout", "timeout_s", type=FINITE, default=3600, show_default=True, help="Seconds per mpirun.")
@click.option("--pairs", "pairs", default=None, metavar="all|A-B,...",
              help="Many pairs: every rank pair of the job (all) or the listed ones, one pair per mpirun; prints "
                   "the latency matrix and writes its heat map (--plot). Excludes --source/--dest.")
@click.option("--plot", "plot_path", default=None, metavar="FILE.png", help="With --pairs: the heat map.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
@budget_options
def pingpong(np, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, compare, cut_coef, bins, mpiruns, outdir, from_dir, verbose, full, timeout_s, quiet,
             as_json, pairs, plot_path, budget, estimate_only, **params):
    """Small-message latency: timer resolution and overhead, ping-pong with
    hand-shake, npp from the timer resolution, full statistics (Luecke,
    Spanoyannis and Kraeva 2004).

    Times are one-way: ping-pong time / npp / 2, with the timer's minimum
    overhead subtracted. Prints the rate curve first (one line per message
    size and npp), the comparisons and the parameters; --verbose adds the
    statistics block of every size, --full the timer study and histograms
    too (-o DIR keeps the verbose summary in runs/*/summary.txt). --json prints per message size and npp: msize, npp,
    res_timing_s, min_ov_s, min_s, median_s, mean_s, max_s, variance_s2, std_s,
    cv, se_s, rse, rates (MB/s) and the same under "filtered" with "removed".
    With several mpiruns, every run is analysed in its own directory and the
    printed table gives the median over mpiruns of the run medians.
    """
    from mpitempo.analysis import pingpong as analysis
    from mpitempo.io import pingpong as data

    from mpitempo.io.platform import check_platform_flags

    check_platform_flags(platform, platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe)
    validate_analysis(cut_coef, bins)
    if (budget is not None or estimate_only) and (from_dir or pairs is not None or plot_path is not None):
        raise MtError("--budget and --estimate go with a new measurement: not with --from, --pairs or --plot")
    if from_dir:
        runs = _load_from(Path(from_dir))
        _present_runs(runs, cut_coef, bins, as_json, full, None, verbose)
        return
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.estimate import budget_gate
    from mpitempo.runner.execute import check_campaign, run_campaign

    if platform is not None and params.get("timer_reads") is None:
        # on a simulated platform every clock read costs exactly smpi/wtime (10 ns): the timer study finds
        # that with a few thousand reads, and 16M reads would cost minutes of host time
        params["timer_reads"] = SIM_TIMER_READS
    if pairs is not None or plot_path is not None:
        from mpitempo.present.pingpong_pairs import run_pairs

        if pairs is None:
            raise MtError("--plot needs --pairs")
        if params.get("source") is not None or params.get("dest") is not None:
            raise MtError("--pairs chooses the ranks: give either --pairs or --source/--dest")
        run_pairs(pairs, np or 2, params, launcher, mpicc, mpiruns, timeout_s, outdir, quiet, as_json, cut_coef,
                  plot_path, dict(platform=platform, platform_ppn=platform_ppn,
                                  platform_oversubscribe=platform_oversubscribe))
        return
    params = dict(params, loop=True if compare else None)
    c = build_campaign(None, dict(params, np=np or 2, mpiruns=mpiruns, launcher=launcher, mpicc=mpicc,
                                  platform=platform, platform_ppn=platform_ppn,
                                  platform_oversubscribe=platform_oversubscribe,
                                  timeout_s=timeout_s, name="pingpong"), kind="pingpong")
    deadline, stop = budget_gate(c, budget, estimate_only, quiet, check_campaign(c), outdir=outdir)
    if stop:
        return
    with run_campaign(c, outdir, quiet=quiet or as_json, deadline=deadline) as (out, complete):
        runs = [(d, data.load_dir(d)) for d in complete]
        _present_runs(runs, cut_coef, bins, as_json, full, out if outdir else None, verbose)


def _load_from(p: Path) -> list:
    """(directory or None, Run) of every run in a campaign, a run directory or a JSON document."""
    from mpitempo.io import pingpong as data
    from mpitempo.io.rundir import find_runs

    if p.is_dir() and (p / "runs").is_dir():
        complete, _, _ = find_runs(p)
        if not complete:
            raise MtError(f"'{p}' has no complete ping-pong runs")
        return [(d, data.load_dir(d, p)) for d in complete]
    return [(p if p.is_dir() else None, data.load(p))]


def _present_runs(runs: list, cut_coef: float, bins: int, as_json: bool, full: bool, outdir: Path | None,
                  verbose: bool = False) -> None:
    from mpitempo.analysis import pingpong as analysis

    analysed = [(d, run, analysis.analyse(run, cut_coef=cut_coef, bins=bins, details=full or outdir is not None))
                for d, run in runs]
    if len(analysed) == 1:
        d, run, a = analysed[0]
        present(a, as_json, full, d if outdir is not None else None, run, verbose)
        return
    for d, run, a in analysed:      # every run's own outputs in its directory, the table across runs here
        if outdir is not None:
            with contextlib.redirect_stdout(io.StringIO()):
                present(a, False, False, d, run)
    rows = across_runs([a for _, _, a in analysed])
    if as_json:
        print_json({"mpiruns": len(analysed), "across_runs": rows,
                    "runs": [analysis.json_records(a, details=full) for _, _, a in analysed]})
        return
    click.echo(f"one-way latency over {len(analysed)} mpiruns (median of the run medians, filtered by "
               f"{cut_coef:g} x median; per-run summaries in runs/*/summary.txt)")
    click.echo(f"{'bytes':>10} {'npp':>6} {'median [us]':>12} {'min run [us]':>13} {'max run [us]':>13} "
               f"{'spread %':>9}")
    for r in rows:
        click.echo(f"{r['msize']:>10} {r['npp']:>6} {r['median_s'] * 1e6:>12.4f} {r['min_s'] * 1e6:>13.4f} "
                   f"{r['max_s'] * 1e6:>13.4f} {r['spread_pct']:>9.1f}")


def across_runs(analyses: list[dict]) -> list[dict]:
    """Per (msize, npp of the first run): median, min and max over mpiruns of the filtered run medians."""
    import statistics

    groups: dict[int, list[float]] = {}
    npps: dict[int, int] = {}
    for a in analyses:
        for r in a["results"]:
            med = (r.get("filtered") or {}).get("median_s", r.get("median_s"))
            if med is not None and med == med:
                groups.setdefault(r["msize"], []).append(med)
                npps.setdefault(r["msize"], r["npp"])
    out = []
    for m in sorted(groups):
        v = groups[m]
        med = statistics.median(v)
        out.append({"msize": m, "npp": npps[m], "runs": len(v), "median_s": med, "min_s": min(v), "max_s": max(v),
                    "spread_pct": 100 * (max(v) - min(v)) / med if med else float("nan")})
    return out
