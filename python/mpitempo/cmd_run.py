"""`mpitempo run`: a campaign of many mpiruns, from a TOML file and/or flags."""
from __future__ import annotations

import time
from pathlib import Path

import click

from .campaign import build_campaign, load_toml
from .errors import MtError
from .options import launcher_option, mpicc_option, np_option, timer_option
from .runner import execute


@click.command()
@click.argument("campaign_file", required=False, type=click.Path(dir_okay=False))
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Campaign directory to create (default: mpitempo-<name>-<date>-<time>).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None,
              help="Complete the missing or failed runs of an existing campaign directory.")
@click.option("--ops", default=None, metavar="LIST", help="Operations, e.g. allreduce,bcast (default allreduce).")
@click.option("--msizes", default=None, metavar="LIST", help="Message sizes in bytes: 8,64,1K or 8-1M.")
@click.option("--nrep", type=int, default=None, help="Measurements per experiment and mpirun (default 100).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before each experiment (default 10).")
@click.option("--inner", type=int, default=None, help="Calls per measurement of the loop scheme (default 10).")
@click.option("--scheme", default=None,
              help="barrier (MS1, default), loop (MS2), barrier_loop (MS3), window (MS4) or roundtime.")
@click.option("--sync", default=None, metavar="SPEC",
              help="Clock synchronisation, e.g. hca3 or h2:hca3/prop (docs/clocks.md); window and roundtime "
                   "default to hca3.")
@click.option("--time-slice", default=None, metavar="T", help="Round-Time: time per (op, msize), e.g. 1s (default).")
@click.option("--rt-slack", default=None, type=float, metavar="B",
              help="Round-Time: start = now + B x Bcast latency (default 2).")
@click.option("--window", default=None, metavar="T", help="Window scheme: window size (default: from a pilot).")
@click.option("--timestamps", is_flag=True, default=None,
              help="Keep per-rank start/end times on the global clock (timestamps.csv).")
@click.option("--cache", default=None, help="Cache policy: warm (default), cold or cycle.")
@click.option("--cache-size", default=None, metavar="SIZE",
              help="Cache size to defeat with cold/cycle (default: largest private cache in sysfs).")
@click.option("--delay", default=None, metavar="LIST",
              help="Per-rank busy-wait of the synthetic op 'delay', e.g. 20us or 10us,50us.")
@timer_option
@click.option("--mpiruns", type=int, default=None, help="Number of mpiruns per configuration (default 10).")
@np_option
@launcher_option
@mpicc_option
@click.option("--seed", type=int, default=None, help="Seed of the shuffles (default: random, recorded).")
@click.option("--datatype", default=None, help="byte (default), char, int, long, int64, float, double.")
@click.option("--redop", default=None, help="Reduction operator: sum (default), prod, max, min.")
@click.option("--root", type=int, default=None, help="Root rank of rooted collectives (default 0).")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Seconds before an mpirun is killed (600).")
@click.option("--name", default=None, help="Campaign name.")
@click.option("--sbatch", "use_sbatch", is_flag=True,
              help="Submit the whole campaign as one Slurm batch job (srun steps inside) and return.")
@click.option("--sbatch-args", default="", metavar="ARGS",
              help="Extra #SBATCH options for --sbatch, e.g. \"-t 2:00:00 -N 4\".")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option("--no-summary", is_flag=True, help="Do not print the summary at the end.")
def run(campaign_file, outdir, resume_dir, ops, msizes, nrep, warmup, inner, scheme, sync, time_slice, rt_slack, window,
        timestamps, cache, cache_size, delay, timer, mpiruns, np,
        launcher, mpicc, seed, datatype, redop, root, timeout_s, name, use_sbatch, sbatch_args, quiet, no_summary):
    """Run a campaign: MPIRUNS mpiruns x shuffled experiments (op x msize).

    CAMPAIGN_FILE is a TOML campaign (see examples/); flags override its values.
    Results go to OUTDIR/runs/<run-id>/{meta.json,measurements.csv}.
    """
    if resume_dir and outdir:
        raise MtError("give either -o/--outdir or --resume, not both")
    spec = None
    if resume_dir:
        spec_file = Path(resume_dir) / "campaign.toml"
        if not spec_file.exists():
            raise MtError(f"cannot resume '{resume_dir}': it has no campaign.toml (not a campaign directory)")
        if campaign_file:
            spec = load_toml(campaign_file)
        else:
            spec = load_toml(spec_file)
    elif campaign_file:
        spec = load_toml(campaign_file)
    overrides = dict(ops=ops, msizes=msizes, nrep=nrep, warmup=warmup, inner=inner, scheme=scheme, timer=timer,
                     mpiruns=mpiruns, np=np, launcher=launcher, mpicc=mpicc, seed=seed, datatype=datatype,
                     redop=redop, root=root, timeout_s=timeout_s, name=name, cache=cache, cache_size=cache_size,
                     delay=delay, sync=sync, time_slice=time_slice, rt_slack=rt_slack, window=window,
                     timestamps=timestamps)
    c = build_campaign(spec, overrides)
    if resume_dir:
        target = Path(resume_dir)
    else:
        target = Path(outdir) if outdir else Path(f"mpitempo-{c.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    if use_sbatch:
        if resume_dir:
            raise MtError("--sbatch starts a new campaign; to continue one in a job, submit its sbatch.sh again")
        import shlex

        from .build import ensure_build, list_registry
        from .campaign import check_against_registry
        from .slurm import submit
        for cfg in c.configs:  # check names now, not in the queue an hour later
            check_against_registry(c, list_registry(ensure_build(cfg.mpicc)), [cfg])
        job = submit(c, target, shlex.split(sbatch_args))
        click.echo(f"mpitempo: submitted campaign {target} as Slurm job {job}; "
                   f"when it is done: mpitempo summary {target}", err=True)
        return
    counts = execute(c, target, resume=bool(resume_dir), quiet=quiet)
    if not quiet:
        click.echo(f"mpitempo: {counts['ok']} runs completed, {counts['failed']} failed, "
                   f"{counts['skipped']} already complete; results in {target}", err=True)
    if not no_summary and counts["ok"] + counts["skipped"] > 0:
        from .cmd_summary import print_summary
        print_summary(target)
    if counts.get("interrupted"):
        raise MtError(f"interrupted; completed runs are kept in {target} (continue with: mpitempo run --resume {target})",
                      code=130)
    if counts.get("few_valid"):
        raise MtError(f"{counts['few_valid']} mpirun(s) had experiments with too few valid measurements "
                      f"(see runs/*/stderr.log and meta.json 'too_few_valid' in {target}); their data is kept",
                      code=3)
    if counts["failed"]:
        raise MtError(f"{counts['failed']} of {counts['total']} mpiruns failed (see runs/*/failed.json in {target}); "
                      f"completed runs are kept; rerun the missing ones with: mpitempo run --resume {target}")
