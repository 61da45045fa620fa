"""`mpitempo barrier`: barrier algorithms against the LogP model (Hoefler et al. 2005).

Two campaigns of the common pipeline: kind `logp` (mpitempo-logp: L, o_s, o_r,
g, G between rank 0 and the other ranks, in OUTDIR/logp) and kind `barrier`
(mpitempo-bench with the barrier ops and Round-Time, one job per process count,
in OUTDIR). This command prints measured medians over mpiruns with their CI
against the LogP predictions, the optimal combining-tree arity and the choice
of the fastest algorithm, and plots runtime vs P.
"""
from __future__ import annotations

import os
from contextlib import ExitStack
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


@click.command()
@np_option
@click.option("--procs", default=None, metavar="LIST",
              help="Process counts to measure, e.g. 2,4,8 (default: 2..N). One job per count and mpirun.")
@click.option("--algorithms", default=None, metavar="LIST",
              help="Barrier ops: barrier (MPI_Barrier), barrier:central, barrier:combining:N, barrier:fway:N, "
                   "barrier:mcs, barrier:tournament, barrier:bst, barrier:butterfly, barrier:pairwise, "
                   "barrier:dissemination (default: all, with combining:2,4 and fway:4).")
@click.option("--mpiruns", type=click.IntRange(min=1), default=6, show_default=True,
              help="mpiruns of each campaign (the CI and the comparison test are over mpiruns; a 95% CI of the "
                   "median needs >= 6).")
@click.option("--nrep", type=click.IntRange(min=1), default=200, show_default=True,
              help="Round-Time: valid measurements per algorithm and mpirun (at most).")
@click.option("--time-slice", default="0.5s", show_default=True, metavar="DURATION",
              help="Round-Time: time per algorithm and mpirun.")
@click.option("--logp-nrep", type=click.IntRange(min=1), default=200, show_default=True,
              help="timings per LogP quantity and rank pair.")
@click.option("--logp-msizes", default="1K,4K,16K", show_default=True, metavar="LIST",
              help="message sizes of the RTT sweep for LogGP's G (bytes).")
@launcher_option
@mpicc_option
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the campaigns here (OUTDIR: barrier runs, OUTDIR/logp: LogP runs, barrier.json, "
                   "barrier.png, arity.png); default: a temporary directory, removed afterwards.")
@click.option("--timeout", "timeout_s", type=float, default=1800, show_default=True, help="Seconds per mpirun.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
def barrier(np, procs, algorithms, mpiruns, nrep, time_slice, logp_nrep, logp_msizes, launcher, mpicc, outdir,
            timeout_s, quiet, as_json):
    """Barrier algorithms against the LogP model (Hoefler et al. 2005): LogP
    parameters measured on N ranks, every algorithm measured with Round-Time on
    2..N ranks, measured median (95% CI over mpiruns) vs predicted runtime, the
    optimal combining-tree arity, and the fastest algorithm with the closest
    native MPICH / Open MPI algorithm and its setting.

    Example: mpitempo barrier -n 2 -o bar --json

    Example: mpitempo barrier -n 8 --procs 2,4,8 --algorithms barrier,barrier:dissemination,barrier:combining:4
    """
    from mpitempo.analysis import barrier as study
    from mpitempo.io.campaign import build_campaign
    from mpitempo.kinds.barrier import DEFAULT_ALGORITHMS
    from mpitempo.runner.execute import check_campaign, run_campaign

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
    lc = build_campaign(None, dict(common, np=np, name="logp", nrep=str(logp_nrep), msizes=logp_msizes),
                        kind="logp")
    bc = build_campaign(None, dict(common, np=plist, name="barrier", ops=algs, nrep=str(nrep),
                                   time_slice=time_slice), kind="barrier")
    check_campaign(lc)
    check_campaign(bc)
    out = Path(outdir) if outdir else None
    with ExitStack() as stack:
        # the barrier campaign creates OUTDIR, the LogP campaign then OUTDIR/logp
        bdir, bruns = stack.enter_context(run_campaign(bc, out, quiet=quiet or as_json))
        ldir, lruns = stack.enter_context(run_campaign(lc, out / "logp" if out else None, quiet=quiet or as_json))
        lp = study.logp_params(study.load_logp_rows(lruns))
        meds = study.run_medians(bruns)
        pmax = max(plist)
        doc = {"logp": lp, "results": study.results(meds, lp), "choice": study.choose(meds, pmax),
               "arity": study.arity(meds, pmax, lp), "nprocs": plist, "mpiruns": mpiruns,
               "cores": os.cpu_count()}
        if out:
            from mpitempo.present.barrier import plot_arity, plot_runtime
            from mpitempo.present.tables import _default
            import json

            plot_runtime(doc, str(out / "barrier.png"))
            plot_arity(doc, str(out / "arity.png"))
            (out / "barrier.json").write_text(json.dumps(doc, indent=2, default=_default) + "\n")
        if as_json:
            from mpitempo.present.tables import print_json

            print_json(doc)
            return
        from mpitempo.present.barrier import print_study
        from mpitempo.present.tables import console

        print_study(doc)
        if out:
            console().print(f"plots: {out / 'barrier.png'}, {out / 'arity.png'}; data: {out}")
