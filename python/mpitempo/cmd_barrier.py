"""`mpitempo barrier`: barrier algorithms against the LogP model (Hoefler et al. 2005).

Two campaigns of the common pipeline: kind `logp` (mpitempo-logp: L, o_s, o_r,
g, G between rank 0 and the other ranks, in OUTDIR/logp) and kind `barrier`
(mpitempo-bench with the barrier ops and Round-Time, one job per process count,
in OUTDIR; with the native algorithms of the library that implement ours as
configurations "native-<name>"), both in one study directory that
`--resume` continues (runner/barrier_study.py). This command prints measured medians over mpiruns with their CI
against the LogP predictions, the optimal combining-tree arity and the choice
of the fastest algorithm, and plots runtime vs P.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

from mpitempo.options import FINITE, budget_options
from mpitempo.errors import MtError
from mpitempo.options import (json_option, launcher_option, mpicc_option, np_option, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)


def _split(text: str, label: str) -> list[str]:
    """The items of a comma-separated option; an empty value or item is refused as the kinds refuse
    it (an empty --procs was taken as "not given": the default 2..N was measured)."""
    items = [x.strip() for x in str(text).split(",")]
    if not items or any(not x for x in items):
        why = ("an empty item (two commas in a row, or a comma at an end)" if any(items) else
               "give one or more comma-separated items")
        raise MtError(f"invalid {label} '{text}': {why}")
    return items


def _procs(text: str | None, np: int) -> list[int]:
    if text is None:
        return list(range(2, np + 1))
    out = []
    for item in _split(text, "--procs"):
        if not item.isdigit() or int(item) < 2:
            raise MtError(f"invalid --procs item '{item}': process counts must be integers >= 2")
        if int(item) in out:   # one job per count and mpirun: a count twice was measured twice
            raise MtError(f"invalid --procs '{text}': {int(item)} is listed twice (each process count once; "
                          "more mpiruns with --mpiruns)")
        out.append(int(item))
    if max(out) > np:
        raise MtError(f"invalid --procs '{text}': {max(out)} is more than -n {np}")
    return sorted(out)


def validate_algorithms(algorithms: list[str], procs: list[int]) -> None:
    """One-line errors: unknown names, arity < 2, an arity above the largest P (the tree would be a
    central counter), duplicates."""
    from mpitempo.stats import logp as model

    seen = set()
    for a in algorithms:
        try:
            alg, n = model.split(a)
        except ValueError as e:
            raise MtError(str(e)) from None
        if n is not None and n > max(procs):
            raise MtError(f"algorithm '{a}' on at most {max(procs)} processes: an arity above P makes the tree a "
                          f"central counter (use N <= {max(procs)} or more processes)")
        if a in seen:
            raise MtError(f"algorithm '{a}' is listed twice in --algorithms")
        seen.add(a)


RESUME_ALONE = ("budget", "estimate_only", "np", "procs", "algorithms", "mpiruns", "nrep", "time_slice", "logp_nrep", "logp_o_r_method",
                "logp_msizes", "launcher", "mpicc", "outdir", "timeout_s", "native", "platform", "platform_ppn",
                "platform_oversubscribe")


@click.command()
@np_option
@click.option("--procs", default=None, metavar="LIST",
              help="Process counts to measure, e.g. 2,4,8 (default: 2..N). One job per count and mpirun.")
@click.option("--algorithms", default=None, metavar="LIST",
              help="Barrier ops: barrier (MPI_Barrier), barrier:central, barrier:combining:N, barrier:fway:N, "
                   "barrier:mcs, barrier:tournament, barrier:bst, barrier:butterfly, barrier:pairwise, "
                   "barrier:dissemination (default: all, with combining:2,4 and fway:4).")
@click.option("--native/--no-native", default=True, show_default=True,
              help="Also measure the library's own implementations of our algorithms (MPICH: k_dissemination, "
                   "recexch; Open MPI: linear, recursive_doubling, bruck, tree), forced by their setting, as rows "
                   "native:<name> compared with ours.")
@click.option("--mpiruns", type=click.IntRange(min=1), default=6, show_default=True,
              help="mpiruns of each campaign (the CI and the comparison test are over mpiruns; a 95% CI of the "
                   "median needs >= 6).")
@click.option("--nrep", type=click.IntRange(min=1), default=200, show_default=True,
              help="Round-Time: valid measurements per algorithm and mpirun (at most).")
@click.option("--time-slice", default="0.5s", show_default=True, metavar="DURATION",
              help="Round-Time: time per algorithm and mpirun.")
@click.option("--logp-nrep", type=click.IntRange(min=1), default=200, show_default=True,
              help="timings per LogP quantity and rank pair.")
@click.option("--logp-o-r-method", type=click.Choice(["probe", "wait"]), default="probe", show_default=True,
              help="LogP o_r: probe (MPI_Recv of a message MPI_Iprobe has seen: the progress pass that finds it "
                   "counts in L) or wait (MPI_Recv of an arrived message, as Netgauge times it: the pass counts in "
                   "o_r). o_s + L + o_r is the same; f_r = max(o_r, g) of P > 2 differs (docs/barrier.md).")
@click.option("--logp-msizes", default="1K,4K,16K", show_default=True, metavar="LIST",
              help="message sizes of the RTT sweep for LogGP's G (bytes).")
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the study here (OUTDIR: barrier runs, OUTDIR/logp: LogP runs, barrier-study.json, "
                   "barrier.json, barrier.png, arity.png); default: a temporary directory, removed afterwards.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Continue an interrupted study in DIR (both campaigns, as it was started: give no other "
                   "option but --yes, --quiet and --json).")
@click.option("--yes", "yes", is_flag=True,
              help="With --resume: run the mpicc, launcher, cflags and loader variables stored in the study "
                   "without asking (they are shown either way).")
@click.option("--timeout", "timeout_s", type=FINITE, default=1800, show_default=True, help="Seconds per mpirun.")
@click.option("--model-start-cost", "start_cost_us", type=FINITE, default=0.0, show_default=True, metavar="US",
              help="Extended model: µs added to every message sent before its sender received anything in the "
                   "call (the cost of a synchronised start on real ranks, measured by bench/barrier_gap.py; 0 on "
                   "a simulator). Only the analysis: also with --resume, to re-predict a finished study.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@budget_options
@json_option
@click.pass_context
def barrier(ctx, np, procs, algorithms, native, mpiruns, nrep, time_slice, logp_nrep, logp_o_r_method, logp_msizes,
            launcher, mpicc, platform, platform_ppn, platform_oversubscribe, outdir, resume_dir, yes, timeout_s,
            start_cost_us, quiet, budget, estimate_only,
            as_json):
    """Barrier algorithms against the LogP model (Hoefler et al. 2005): LogP
    parameters measured on N ranks, every algorithm measured with Round-Time on
    2..N ranks (and the library's own implementations of the same algorithms),
    measured median (95% CI over mpiruns) vs predicted runtime, the optimal
    combining-tree arity, and the fastest algorithm with the closest native
    MPICH / Open MPI algorithm and its setting.

    Example: mpitempo barrier -n 2 -o bar --json

    Example: mpitempo barrier -n 8 --procs 2,4,8 --algorithms barrier,barrier:dissemination,barrier:combining:4

    Example: mpitempo barrier --resume bar
    """
    from click.core import ParameterSource

    from mpitempo.runner import barrier_study

    if not 0.0 <= start_cost_us <= 1e6:
        raise MtError(f"invalid --model-start-cost {start_cost_us}: expected microseconds >= 0")
    start_cost = start_cost_us * 1e-6
    if resume_dir:
        given = [n for n in RESUME_ALONE if ctx.get_parameter_source(n) is not ParameterSource.DEFAULT]
        if given:
            opt = "-o/--outdir" if given[0] == "outdir" else "--timeout" if given[0] == "timeout_s" else \
                "-n" if given[0] == "np" else "--estimate" if given[0] == "estimate_only" else \
                "--" + given[0].replace("_", "-")
            raise MtError(f"--resume continues a study as it was started: give it without {opt} "
                          "(only --yes, --quiet and --json may go with it)")
        study = barrier_study.load(Path(resume_dir))
        study.yes = yes
        _study(study, quiet, as_json, keep=True, start_cost=start_cost)
        return
    if yes:
        raise MtError("--yes goes with --resume: it consents to the commands stored in a study directory")

    from mpitempo.build import ensure_build
    from mpitempo.io.campaign import build_campaign
    from mpitempo.kinds.barrier import DEFAULT_ALGORITHMS
    from mpitempo.runner.execute import check_campaign

    np = np or 2
    if np < 2:
        raise MtError(f"invalid -n {np}: LogP is measured between pairs of ranks and a barrier needs "
                      "2 or more processes (use -n >= 2)")
    plist = _procs(procs, np)
    from mpitempo.io.sizes import parse_sizes

    parse_sizes(logp_msizes, "--logp-msizes", "--logp-nrep")   # a size twice was measured twice (the kind names it --msizes)
    if algorithms is not None:   # an empty value is refused, not the default
        algs = _split(algorithms, "--algorithms")
        validate_algorithms(algs, plist)
    else:  # the default list without arities above the largest P
        algs = [a for a in DEFAULT_ALGORITHMS if not a[-1].isdigit() or int(a.rsplit(":", 1)[1]) <= max(plist)]
    common = dict(mpiruns=mpiruns, launcher=launcher, mpicc=mpicc, timeout_s=timeout_s, platform=platform,
                  platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe)
    lc = build_campaign(None, dict(common, np=np, name="logp", nrep=str(logp_nrep), msizes=logp_msizes,
                                   o_r_method=logp_o_r_method), kind="logp")
    notes: list[str] = []
    configs = [{"name": "default"}]
    if native:
        natives, notes = barrier_study.native_configs(ensure_build(mpicc or ("smpicc" if platform else None)), plist)
        configs += natives
    # ops in the file part: a flag would win over the native configurations' ops = ["barrier"]
    # on a simulated platform every rank reads the one simulated clock (barrier injects no offsets), so
    # Round-Time's global clock is ClockPropSync (one broadcast, checked against the tolerance) instead of
    # HCA3, whose (P - 1) x 4200 simulated ping-pongs find offset 0 and cost host minutes at 1024 ranks;
    # and 2 warm-up calls instead of 10: the simulation has no caches or lazy connections to warm, and
    # every call costs host time
    extra = {"sync": "prop", "warmup": "2"} if platform else {}
    bc = build_campaign({"ops": algs, "config": configs},
                        dict(common, np=plist, name="barrier", nrep=str(nrep), time_slice=time_slice, **extra),
                        kind="barrier")
    lb = check_campaign(lc)
    bb = check_campaign(bc)
    from mpitempo.runner.estimate import study_budget_gate

    deadline, stop = study_budget_gate([bc, lc], [bb, lb], budget, estimate_only, quiet, outdir=outdir)
    if stop:
        return
    tmp = None if outdir else tempfile.mkdtemp(prefix="mpitempo-barrier-")
    try:
        study = barrier_study.create(Path(outdir) if outdir else Path(tmp) / "study", bc, lc, notes)
        study.deadline = deadline
        _study(study, quiet, as_json, keep=bool(outdir), start_cost=start_cost)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _study(study, quiet: bool, as_json: bool, keep: bool, start_cost: float = 0.0) -> None:
    from mpitempo.analysis import barrier as analysis
    from mpitempo.runner import barrier_study

    bruns, lruns = barrier_study.run(study, quiet=quiet or as_json, keep=keep)
    lp = analysis.logp_params(analysis.load_logp_rows(lruns))
    meds = analysis.run_medians(bruns)
    plist = list(study.barrier.np)
    pmax = max(plist)
    settings = barrier_study.settings(study.barrier)
    bcfg = study.barrier.configs[0]
    ext = analysis.extended_model(lp, bcfg.platform, bcfg.platform_ppn, start_cost)
    rows = analysis.results(meds, lp, flags=analysis.study_flags(study.out), ext=ext)
    doc = {"logp": lp, "results": rows, "choice": analysis.choose(meds, pmax, settings=settings),
           "model_ext": {k: v for k, v in ext.items() if k != "latency"},
           "choice_by_p": analysis.choice_by_p(meds, rows),
           "native": analysis.versus_native(meds, settings), "native_notes": study.notes,
           "arity": analysis.arity(meds, pmax, lp), "nprocs": plist, "mpiruns": study.barrier.mpiruns,
           "cores": os.cpu_count()}
    out = study.out if keep else None
    if out:
        import json

        from mpitempo.present.barrier import plot_arity, plot_runtime
        from mpitempo.present.tables import _default

        import io

        from mpitempo.io.safefs import safe_write_text

        for name, plot in (("barrier.png", plot_runtime), ("arity.png", plot_arity)):
            buf = io.BytesIO()   # rendered here, written without following a link
            plot(doc, buf)
            safe_write_text(out / name, buf.getvalue(), out, binary=True)
        safe_write_text(out / "barrier.json", json.dumps(doc, indent=2, default=_default) + "\n", out)
    if as_json:
        from mpitempo.present.tables import print_json

        print_json(doc)
        return
    from mpitempo.present.barrier import print_study
    from mpitempo.present.tables import console

    print_study(doc)
    if out:
        console().print(f"plots: {out / 'barrier.png'}, {out / 'arity.png'}; data: {out}")
