"""`mpitempo run`: a campaign of many mpiruns, from a TOML file and/or flags."""
from __future__ import annotations

import time
from pathlib import Path

import click

from mpitempo.io.campaign import build_campaign, load_toml
from mpitempo.errors import MtError
from mpitempo.options import (budget_options, launcher_option, mpicc_option, np_option, param_options, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)
from mpitempo.runner.execute import execute


@click.command(epilog="Examples:\n\n  mpitempo run --ops allreduce,bcast --msizes 8-4K --mpiruns 10 -o my-campaign\n\n  mpitempo run examples/demo.toml -o demo\n\n  mpitempo run --resume my-campaign")
@click.argument("campaign_file", required=False, type=click.Path(dir_okay=False))
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Campaign directory to create. [default: mpitempo-<name>-<date>-<time>]")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None,
              help="Complete the missing or failed runs of an existing campaign directory.")
@param_options("bench", exclude=("seed",), defaults={"precision": "1%, or off when --nrep is given",
                                                      "exp_time": "1s with the default precision"})
@click.option("--mpiruns", type=int, default=None,
              help="Number of mpiruns per configuration; with --max-mpiruns the first look. [default: 10]")
@click.option("--max-mpiruns", type=int, default=None, metavar="N",
              help="With a precision: add mpiruns (looks at x1.5) up to N while a row's 95% interval of the median "
                   "of the run medians is wider than --precision. [default: none added]")
@budget_options
@np_option
@launcher_option
@mpicc_option
@platform_option
@platform_oversubscribe_option
@platform_ppn_option
@click.option("--seed", type=int, default=None, help="Seed of the shuffles. [default: random, recorded]")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Seconds before an mpirun is killed (600).")
@click.option("--name", default=None, help="Campaign name.")
@click.option("--sbatch", "use_sbatch", is_flag=True,
              help="Submit the whole campaign as one Slurm batch job (srun steps inside) and return.")
@click.option("--sbatch-args", default="", metavar="ARGS",
              help="Extra #SBATCH options for --sbatch, e.g. \"-t 2:00:00 -N 4\".")
@click.option("--yes", "yes", is_flag=True,
              help="With --resume: run the mpicc, launcher, cflags and loader variables stored in the campaign "
                   "without asking (they are shown either way).")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option("--no-summary", is_flag=True, help="Do not print the summary at the end.")
def run(campaign_file, outdir, resume_dir, mpiruns, max_mpiruns, budget, estimate_only, np, launcher, mpicc, platform,
        platform_oversubscribe, platform_ppn, seed, timeout_s, name, use_sbatch, sbatch_args, yes, quiet, no_summary,
        **params):
    """Run a campaign: MPIRUNS mpiruns x shuffled experiments (op x msize).

    CAMPAIGN_FILE is a TOML campaign (see examples/); flags override its values.
    Results go to OUTDIR/runs/<run-id>/{meta.json,measurements.csv}. A campaign
    file with `kind = "clocks"` or `kind = "pingpong"` runs that kind instead.
    """
    if resume_dir and outdir:
        raise MtError("give either -o/--outdir or --resume, not both")
    budget_s = None
    if budget is not None:
        from mpitempo.runner.tuneplan import parse_budget
        budget_s = parse_budget(budget)
    if (budget_s is not None or estimate_only) and use_sbatch:
        raise MtError("--budget and --estimate calibrate on this machine: not with --sbatch (give the job a time "
                      "limit in --sbatch-args instead)")
    spec = None
    if sbatch_args and not use_sbatch:
        raise MtError("--sbatch-args goes with --sbatch: they are the #SBATCH options of the batch job it submits")
    if yes and not resume_dir:
        raise MtError("--yes goes with --resume: it consents to the commands stored in a campaign directory")
    if resume_dir:
        from mpitempo.runner.execute import check_resume_dir, read_campaign_toml

        check_resume_dir(Path(resume_dir))   # no links where the runner reads or writes
        if campaign_file:
            spec = load_toml(campaign_file)
        else:
            spec = read_campaign_toml(Path(resume_dir))
    elif campaign_file:
        spec = load_toml(campaign_file)
    overrides = dict(params, mpiruns=mpiruns, max_mpiruns=max_mpiruns, np=np, launcher=launcher, mpicc=mpicc, seed=seed,
                     timeout_s=timeout_s, name=name, platform=platform, platform_oversubscribe=platform_oversubscribe,
                     platform_ppn=platform_ppn)
    c = build_campaign(spec, overrides)
    t_start = time.monotonic()
    deadline = None
    if budget_s is not None or estimate_only:
        if c.kind == "trace":
            raise MtError("--budget and --estimate are not available for campaigns of kind 'trace'")
        from mpitempo.runner.estimate import budget_gate

        deadline, stop = budget_gate(c, budget, estimate_only, quiet, t_start=t_start,
                                     outdir=None if resume_dir else outdir)
        if stop:
            return
    if resume_dir:
        target = Path(resume_dir)
    else:
        target = Path(outdir) if outdir else Path(f"mpitempo-{c.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    if use_sbatch:
        if resume_dir:
            raise MtError("--sbatch starts a new campaign; to continue one in a job, submit its sbatch.sh again")
        from mpitempo.runner.execute import check_campaign
        from mpitempo.runner.preflight import split_args
        from mpitempo.runner.slurm import submit
        extra = split_args(sbatch_args, "--sbatch-args")
        check_campaign(c)  # check names now, not in the queue an hour later
        job = submit(c, target, extra)
        click.echo(f"mpitempo: submitted campaign {target} as Slurm job {job}; "
                   f"when it is done: mpitempo summary {target}", err=True)
        return
    flags = any(v not in (None, False) for v in overrides.values())
    given = (f"the campaign file '{campaign_file}'" + (" and the flags given" if flags else "") if campaign_file
             else "the flags given" if flags else "its own campaign.toml as this mpitempo reads it")
    from mpitempo.runner.dvfs import check_governor, fixed_governor
    from mpitempo.runner.perrank_size import size_note
    if c.governor:
        check_governor(c.governor)   # before anything is created
    note = size_note(c)
    if note and not quiet:
        click.echo(note, err=True)
    with fixed_governor(c.governor, target / "dvfs.json" if c.governor else None) as gov:
        if gov and not quiet:
            click.echo(f"mpitempo: cpufreq governor '{c.governor}' set on {gov['cpus']} CPUs for this campaign "
                       "(restored at the end; see dvfs.json)", err=True)
        typed = frozenset(k for k, v in (("mpicc", mpicc), ("launcher", launcher)) if v)
        counts = execute(c, target, resume=bool(resume_dir), quiet=quiet, given=given, yes=yes, typed=typed,
                         deadline=deadline)
    if not quiet:
        click.echo(f"mpitempo: {counts['ok']} runs completed, {counts['failed']} failed, "
                   f"{counts['skipped']} already complete; results in {target}", err=True)
    from mpitempo.runner.execute import budget_note
    budget_note(counts, target)
    if counts.get("adaptive_stop") and not quiet:
        click.echo(f"mpitempo: adaptive mpiruns stopped: {counts['adaptive_stop']} (see {target}/adaptive.json)",
                   err=True)
    if not no_summary and counts["ok"] + counts["skipped"] > 0:
        from mpitempo.present.summary import print_summary
        print_summary(target)
    if counts.get("interrupted"):
        by = f" by {counts['interrupted']}" if isinstance(counts["interrupted"], str) else ""
        raise MtError(f"interrupted{by}; completed runs are kept in {target} (continue with: mpitempo run --resume {target})",
                      code=130)
    if counts.get("few_valid"):
        raise MtError(f"{counts['few_valid']} mpirun(s) had experiments with too few valid measurements "
                      f"(see runs/*/stderr.log and meta.json 'too_few_valid' in {target}); their data is kept",
                      code=3)
    if counts.get("insane"):
        raise MtError(f"{counts['insane']} LogP mpirun(s) failed their sanity checks (meta.json 'sanity_problem' "
                      f"in {target}/runs); their data is kept", code=3)
    if counts["failed"]:
        raise MtError(f"{counts['failed']} of {counts['total']} mpiruns failed (see runs/*/failed.json in {target}); "
                      f"completed runs are kept; rerun the missing ones with: mpitempo run --resume {target}")
