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

from mpitempo.errors import MtError
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option


def _split(text: str) -> list[str]:
    items = [x.strip() for x in str(text).split(",")]
    if not items or any(not x for x in items):
        raise MtError(f"invalid list '{text}': expected comma-separated items")
    return items


def _procs(text: str | None, np: int) -> list[int]:
    if not text:
        return list(range(2, np + 1))
    out = []
    for item in _split(text):
        if not item.isdigit() or int(item) < 2:
            raise MtError(f"invalid --procs item '{item}': process counts must be integers >= 2")
        out.append(int(item))
    if max(out) > np:
        raise MtError(f"invalid --procs '{text}': {max(out)} is more than -n {np}")
    return sorted(set(out))


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


RESUME_ALONE = ("np", "procs", "algorithms", "mpiruns", "nrep", "time_slice", "logp_nrep", "logp_o_r_method",
                "logp_msizes", "launcher", "mpicc", "outdir", "timeout_s", "native")


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
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the study here (OUTDIR: barrier runs, OUTDIR/logp: LogP runs, barrier-study.json, "
                   "barrier.json, barrier.png, arity.png); default: a temporary directory, removed afterwards.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Continue an interrupted study in DIR (both campaigns, as it was started: give no other "
                   "option but --quiet and --json).")
@click.option("--timeout", "timeout_s", type=float, default=1800, show_default=True, help="Seconds per mpirun.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
@click.pass_context
def barrier(ctx, np, procs, algorithms, native, mpiruns, nrep, time_slice, logp_nrep, logp_o_r_method, logp_msizes,
            launcher, mpicc, outdir, resume_dir, timeout_s, quiet, as_json):
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

    if resume_dir:
        given = [n for n in RESUME_ALONE if ctx.get_parameter_source(n) is not ParameterSource.DEFAULT]
        if given:
            opt = "-o/--outdir" if given[0] == "outdir" else "--timeout" if given[0] == "timeout_s" else \
                "-n" if given[0] == "np" else "--" + given[0].replace("_", "-")
            raise MtError(f"--resume continues a study as it was started: give it without {opt} "
                          "(only --quiet and --json may go with it)")
        study = barrier_study.load(Path(resume_dir))
        _study(study, quiet, as_json, keep=True)
        return

    from mpitempo.build import ensure_build
    from mpitempo.io.campaign import build_campaign
    from mpitempo.kinds.barrier import DEFAULT_ALGORITHMS
    from mpitempo.runner.execute import check_campaign

    np = np or 2
    if np < 2:
        raise MtError(f"invalid -n {np}: LogP is measured between pairs of ranks and a barrier needs "
                      "2 or more processes (use -n >= 2)")
    plist = _procs(procs, np)
    if algorithms:
        algs = _split(algorithms)
        validate_algorithms(algs, plist)
    else:  # the default list without arities above the largest P
        algs = [a for a in DEFAULT_ALGORITHMS if not a[-1].isdigit() or int(a.rsplit(":", 1)[1]) <= max(plist)]
    common = dict(mpiruns=mpiruns, launcher=launcher, mpicc=mpicc, timeout_s=timeout_s)
    lc = build_campaign(None, dict(common, np=np, name="logp", nrep=str(logp_nrep), msizes=logp_msizes,
                                   o_r_method=logp_o_r_method), kind="logp")
    notes: list[str] = []
    configs = [{"name": "default"}]
    if native:
        natives, notes = barrier_study.native_configs(ensure_build(mpicc), plist)
        configs += natives
    # ops in the file part: a flag would win over the native configurations' ops = ["barrier"]
    bc = build_campaign({"ops": algs, "config": configs},
                        dict(common, np=plist, name="barrier", nrep=str(nrep), time_slice=time_slice), kind="barrier")
    check_campaign(lc)
    check_campaign(bc)
    tmp = None if outdir else tempfile.mkdtemp(prefix="mpitempo-barrier-")
    try:
        study = barrier_study.create(Path(outdir) if outdir else Path(tmp) / "study", bc, lc, notes)
        _study(study, quiet, as_json, keep=bool(outdir))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _study(study, quiet: bool, as_json: bool, keep: bool) -> None:
    from mpitempo.analysis import barrier as analysis
    from mpitempo.runner import barrier_study

    bruns, lruns = barrier_study.run(study, quiet=quiet or as_json, keep=keep)
    lp = analysis.logp_params(analysis.load_logp_rows(lruns))
    meds = analysis.run_medians(bruns)
    plist = list(study.barrier.np)
    pmax = max(plist)
    settings = barrier_study.settings(study.barrier)
    doc = {"logp": lp, "results": analysis.results(meds, lp, flags=analysis.study_flags(study.out)), "choice": analysis.choose(meds, pmax, settings=settings),
           "native": analysis.versus_native(meds, settings), "native_notes": study.notes,
           "arity": analysis.arity(meds, pmax, lp), "nprocs": plist, "mpiruns": study.barrier.mpiruns,
           "cores": os.cpu_count()}
    out = study.out if keep else None
    if out:
        import json

        from mpitempo.present.barrier import plot_arity, plot_runtime
        from mpitempo.present.tables import _default

        plot_runtime(doc, str(out / "barrier.png"))
        plot_arity(doc, str(out / "arity.png"))
        tmpf = out / ".barrier.json.tmp"
        tmpf.write_text(json.dumps(doc, indent=2, default=_default) + "\n")
        tmpf.replace(out / "barrier.json")
    if as_json:
        from mpitempo.present.tables import print_json

        print_json(doc)
        return
    from mpitempo.present.barrier import print_study
    from mpitempo.present.tables import console

    print_study(doc)
    if out:
        console().print(f"plots: {out / 'barrier.png'}, {out / 'arity.png'}; data: {out}")
