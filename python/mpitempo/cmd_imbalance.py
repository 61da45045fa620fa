"""`mpitempo imbalance`: exit skew of an operation under a global clock, per algorithm variant."""
from __future__ import annotations

import json
import time
from pathlib import Path

import click

from mpitempo import mpilib
from mpitempo.build import ensure_build
from mpitempo.io.campaign import build_campaign
from mpitempo.errors import MtError
from mpitempo.safe_text import safe
from mpitempo.options import (budget_options, json_option, launcher_option, mpicc_option, np_option, platform_option,
                              platform_oversubscribe_option, smpi_selector_option, platform_ppn_option)
from mpitempo.present.imbalance import print_table
from mpitempo.present.tables import console, print_json
from mpitempo.runner.execute import execute
from mpitempo.mpilib.variants import discover, parse_variants


@click.command(epilog="Examples:\n\n  mpitempo imbalance -n 2\n\n  mpitempo imbalance --op allreduce --msizes 8,1K -n 2")
@click.option("--op", default="barrier", show_default=True, help="Operation whose exit imbalance is measured.")
@click.option("--msize", default="8", show_default=True, help="Message size (ignored by barrier).")
@np_option
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@smpi_selector_option
@click.option("--variants", default="auto", show_default=True, metavar="SPEC",
              help="'auto': the library's own algorithms of --op (MPICH CVARs, Open MPI coll_tuned; with "
                   "--platform SMPI's, forced by smpirun --cfg=smpi/<op>:<name>); "
                   "'none': only the default; or NAME:VAR=VAL[,VAR=VAL][;NAME2:...].")
@click.option("--nrep", type=click.IntRange(min=1), default=500, show_default=True,
              help="Valid measurements per mpirun and variant.")
@click.option("--mpiruns", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--sync", default=None, metavar="SPEC",
              help="Clock synchronisation. [default: hca3; with --platform prop: every simulated rank reads the "
                   "one simulated clock, which one broadcast copies exactly]")
@click.option("--time-slice", default="5s", show_default=True, metavar="T", help="Round-Time slice per mpirun.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Campaign directory. [default: mpitempo-imbalance-<op>-<date>]")
@click.option("--seed", type=int, default=None, help="Seed of the shuffles. [default: random, recorded]")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
@budget_options
def imbalance(op, msize, np, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, smpi_selector,
              variants, nrep, mpiruns, sync, time_slice, outdir, seed, quiet,
              as_json, budget, estimate_only):
    """Exit imbalance of an operation started simultaneously by Round-Time.

    Every measurement starts at a common time on the global clock; the exit
    skew is last exit - first exit, and each rank's exit offset is its exit -
    the first exit (Hunold and Carpen-Amarie 2018, Fig. 8). Runs one configuration per algorithm
    variant, --mpiruns times each, interleaved; prints a table and writes a
    box plot per variant to OUTDIR/imbalance.png.
    """
    from mpitempo.analysis.imbalance import load_exits
    from mpitempo.stats import imbalance as imb
    np = np or 2
    from mpitempo.io.platform import check_platform_flags

    check_platform_flags(platform, platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe,
                         smpi_selector=smpi_selector)
    if platform:
        from mpitempo.io.platform import check_np, read_platform

        check_np(read_platform(platform), np, bool(platform_oversubscribe), platform_ppn)
    if sync is None:   # '' is checked by the campaign as every value is ("expected a non-empty string")
        sync = "prop" if platform else "hca3"
    b = ensure_build(mpicc or ("smpicc" if platform else None))
    from mpitempo.build import list_registry
    from mpitempo.kinds.bench import resolve_op

    resolve_op({o["name"]: o for o in list_registry(b)["ops"]}, op)   # an unknown op before any discovery
    if variants == "auto":
        vs = discover(b, op, np, smpi_selector or "mpich")
    elif variants == "none":
        vs = parse_variants("default")
    else:
        vs = parse_variants(variants)
    from mpitempo.mpilib.variants import selection_env_note
    env_note = selection_env_note(b.flavour) if any(v.name == "default" for v in vs) else None
    if env_note and not quiet:
        click.echo(f"mpitempo imbalance: note: {env_note}", err=True)
    if mpilib.of(b).simulated:     # the selector holds under every variant (a variant's own settings win)
        mpilib.of(b).with_selector(vs, smpi_selector or "mpich")
    spec = {"name": f"imbalance-{op}", "np": np, "mpiruns": mpiruns, "ops": [op], "msizes": msize, "nrep": nrep,
            "sync": sync, "time_slice": time_slice,
            "config": [{"name": v.name, "env": v.env, "mpicc": mpicc, "launcher": launcher} for v in vs]}
    if platform:
        spec.update(platform=platform, platform_ppn=platform_ppn, platform_oversubscribe=bool(platform_oversubscribe))
    if seed is not None:
        spec["seed"] = seed
    c = build_campaign(spec, kind="imbalance")
    target = Path(outdir) if outdir else Path(f"mpitempo-imbalance-{op}-{time.strftime('%Y%m%d-%H%M%S')}")
    from mpitempo.runner.estimate import budget_gate
    deadline, stop = budget_gate(c, budget, estimate_only, quiet, outdir=target)
    if stop:
        return
    counts = execute(c, target, quiet=quiet, deadline=deadline)
    from mpitempo.runner.execute import budget_note
    budget_note(counts, None)
    from mpitempo.analysis.simulated import of_dirs
    from mpitempo.present.simulated import line

    sim = of_dirs(sorted((target / "runs").glob("*")))
    results = []
    skews = []
    unusable = 0   # mpiruns of discovered variants the library cannot run here (every mpirun of them failed)
    for v in vs:
        dirs = [d for d in sorted((target / "runs").glob(f"{v.name}-*")) if (d / "meta.json").exists()]
        failed = sorted((target / "runs").glob(f"{v.name}-*/failed.json"))
        if variants == "auto" and failed and not dirs:   # e.g. MPICH's smp barrier on one node: said, not an error
            try:
                why = safe(str(json.loads(failed[0].read_text()).get("reason", "")))
            except (OSError, ValueError, AttributeError):
                why = f"see {failed[0]}"
            unusable += len(failed)
            if not quiet:
                click.echo(f"mpitempo imbalance: note: variant {v.name} is not usable by the library here: {why}",
                           err=True)
        ex = load_exits(dirs)
        s = imb.summarize(ex["skew_s"], ex["offsets_s"])
        s.update({"variant": v.name, "env": v.env, "op": op, "nprocs": np, "runs": len(dirs)})
        if sim:
            s["simulated"] = sim
        if env_note and v.name == "default":
            s["note"] = env_note
        results.append(s)
        skews.append(ex["skew_s"])
    from mpitempo.present.plots.imbalance import boxplot

    fig = boxplot([v.name for v in vs], skews, f"{op}: exit imbalance, {np} ranks, Round-Time start"
                  + (" [SIMULATED platform]" if sim else ""))
    plot = target / "imbalance.png"
    fig.savefig(plot, dpi=100)
    if as_json:
        print_json(results)
    else:
        con = console()
        if sim:
            click.echo(line(sim))
        print_table(results, op, np, sync, con)
        con.print(f"box plot: {plot}; data: {target}")
    if counts["failed"] > unusable:
        raise MtError(f"{counts['failed'] - unusable} mpirun(s) failed (see {target}/runs/*/failed.json)")
