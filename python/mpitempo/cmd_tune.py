"""`mpitempo tune`: choose the MPI library's fastest collective algorithms, with evidence, and write the
library's own configuration; `--verify CONFIG` checks a written configuration with new mpiruns."""
from __future__ import annotations

import json
import time
from pathlib import Path

import click

from mpitempo import mpilib
from mpitempo.options import FiniteFloatRange
from mpitempo.errors import MtError
from mpitempo.options import (json_option, launcher_option, mpicc_option, platform_option,
                              platform_oversubscribe_option, smpi_selector_option, platform_ppn_option)

DEFAULT_OPS = "allreduce,bcast"
DEFAULT_MSIZES = "8,1K,64K"


def _np_list(text: str | None) -> list[int]:
    if text is None:
        return [2]
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < 1:
            raise MtError(f"invalid -n/--np '{text}': expected process counts >= 1, e.g. 2 or 2,4")
        out.append(int(item))
    if len(set(out)) != len(out):
        raise MtError(f"invalid -n/--np '{text}': a process count is given twice")
    return sorted(out)


def _ops(text: str) -> list[str]:
    from mpitempo.mpilib.variants import TUNABLE_OPS

    ops = [o.strip() for o in text.split(",")]
    if not any(ops):
        raise MtError(f"invalid --ops '{text}': expected a comma-separated list")
    if not all(ops):
        raise MtError(f"invalid --ops '{text}': an empty item (two commas in a row, or a comma at an end)")
    for o in ops:
        if o not in TUNABLE_OPS:
            raise MtError(f"unknown op '{o}' for tune (allowed: {', '.join(TUNABLE_OPS)})")
    if len(set(ops)) != len(ops):
        raise MtError(f"an op is listed twice in --ops '{text}'")
    return ops


def _over(np_list, build) -> dict[int, bool]:
    from mpitempo.runner.launch import ncores

    if mpilib.of(build).simulated:     # simulated ranks run on the platform's cores, not this machine's
        return {n: False for n in np_list}
    return {n: n > ncores() for n in np_list}


@click.command()
@click.option("--ops", default=DEFAULT_OPS, show_default=True, metavar="LIST",
              help="Collectives to tune: barrier, bcast, reduce, allreduce, allgather, alltoall, reduce_scatter, "
                   "gather, scatter.")
@click.option("--msizes", default=DEFAULT_MSIZES, show_default=True, metavar="LIST",
              help="Message sizes in bytes per rank (K/M suffixes, ranges like 8-64K by powers of two).")
@click.option("-n", "--np", "np_text", default=None, metavar="LIST",
              help="Process counts, e.g. 2 or 2,4. More ranks than cores: oversubscribed, "
                   "flagged, for function only. [default: 2]")
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@smpi_selector_option
@click.option("--algorithms", default=None, metavar="SPEC",
              help="Measure only these algorithms: OP:NAME[+NAME...][,OP:...] "
                   "[default: every algorithm the library lists]")
@click.option("--mpiruns", type=click.IntRange(min=1), default=None,
              help="mpiruns per configuration (the library's default and each algorithm), interleaved. "
                   "[default: 10; with --platform 1: a simulation is deterministic]")
@click.option("--time-slice", default="200ms", show_default=True, metavar="T",
              help="Round-Time slice per experiment (op x size) in each mpirun.")
@click.option("--nrep", type=click.IntRange(min=1), default=None,
              help="At most this many valid measurements per experiment and mpirun. [default: 300; with "
                   "--platform 5]")
@click.option("--min-gain", type=FiniteFloatRange(min=0), default=5.0, show_default=True, metavar="PCT",
              help="Keep the default unless an algorithm is faster by more than PCT percent (and significantly).")
@click.option("--alpha", type=FiniteFloatRange(min=0, max=1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level of the rank-sum tests (Holm-adjusted per size).")
@click.option("--budget", default=None, metavar="T",
              help="Plan the campaign to fit this wall time (e.g. 90s, 10m, 1h); says what it left out.")
@click.option("--verify", "verify", default=None, metavar="CONFIG", type=click.Path(dir_okay=False),
              help="Verify a written configuration (the tuning.env of an earlier tune): new mpiruns with it "
                   "against the default; gain per size and per rule, cliffs.")
@click.option("--predict", "predict_sizes", default=None, metavar="LIST",
              help="Also choose at these message sizes, which are not measured, from the a+b*m models fitted "
                   "to the measured ones; such rules are marked PREDICTED in the table, files and tune.json.")
@click.option("--yes", "yes", is_flag=True,
              help="With --verify: apply the file's variables that are not tuning variables of the allow-list "
                   "(docs/security.md: loader, path, launcher variables); without it such a file is refused.")
@click.option("--dry-run", is_flag=True, help="Print the plan (configurations, mpiruns, estimate) and stop.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Output directory: campaign/, tuning.env, rules, report, plots. [default: mpitempo-tune-<date>]")
@click.option("--seed", type=int, default=None, help="Seed of the shuffles. [default: random, recorded]")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
def tune(ops, msizes, np_text, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, smpi_selector,
         algorithms, mpiruns, time_slice, nrep, min_gain, alpha, budget, verify, yes, predict_sizes, dry_run, outdir,
         seed, quiet, as_json):
    """Choose the MPI library's fastest collective algorithms and write its configuration.

    For every op x size x process count, every algorithm the library lists
    (Open MPI: coll_tuned via ompi_info; MPICH: MPIR_CVAR_<OP>_INTRA_ALGORITHM
    via mpivars; else a documented fallback table) runs as its own
    configuration beside the library's default, MPIRUNS interleaved mpiruns
    each, timed with Round-Time on a global clock. The default is kept unless
    an algorithm is faster with Holm-adjusted p <= ALPHA and by more than
    --min-gain; sizes where the choice changes become rule boundaries.

    Writes OUTDIR/tuning.env (the environment that enables the result), the
    library's rules with per-size and per-process-count rules (Open MPI:
    ompi-coll-rules.conf, classic format, and ompi-coll-rules.json for Open
    MPI >= 6.0; MPICH: the selection file mpich-coll-selection.json),
    tune-rules.json, tune.json, tune-report.txt and one plot per op. Also
    reports cliffs (jumps beyond the a+b*x model over sizes and process
    counts) and the prediction error on held-out sizes. Time it on an
    otherwise idle machine.

    \b
    Examples:
      mpitempo tune --ops allreduce,bcast --msizes 8-64K --budget 10m -o t1
      mpitempo tune --verify t1/tuning.env --ops allreduce,bcast --msizes 8-64K
      flock /tmp/mpitempo-cpu.lock mpitempo tune --mpicc ~/ompi/bin/mpicc --json
      mpitempo tune --platform platforms/cluster64-fast.xml -n 16,64 \\
          --ops allreduce --smpi-selector ompi

    With --platform FILE.xml the library is SimGrid's SMPI on a simulated
    platform (docs/simulation.md): the default is SMPI's MPICH or Open MPI
    selector (--smpi-selector), every algorithm SMPI lists is forced with
    smpirun --cfg=smpi/<op>:<name>, one mpirun per configuration (the
    simulation is deterministic), and the choice is written as smpirun
    arguments per process count (smpi-coll-selection.txt); everything is
    labelled SIMULATED.
    """
    from mpitempo.io.sizes import parse_sizes
    from mpitempo.io.params import parse_duration
    from mpitempo.runner.tuneplan import parse_budget

    # -- every input checked before anything is built, created or launched --------------------------
    op_list = _ops(ops)
    sizes = parse_sizes(msizes, "--msizes")
    np_list = _np_list(np_text)
    ts = parse_duration(time_slice, "--time-slice")
    if not ts > 0:
        raise MtError(f"invalid --time-slice '{time_slice}': must be > 0")
    budget_s = parse_budget(budget) if budget is not None else None
    if verify and (algorithms is not None or dry_run or predict_sizes is not None):
        raise MtError("--verify measures a written configuration: it takes no --algorithms, --predict or --dry-run")
    if yes and not verify:
        raise MtError("--yes applies to --verify only (it accepts the variables of a received tuning.env)")
    if verify and platform:   # a combination that cannot work: refused before the file is read
        raise MtError("--verify is not available with --platform: SMPI takes its algorithms as smpirun "
                      "arguments (smpi-coll-selection.txt), not as the environment a tuning.env sets")
    if verify:   # a tuning.env is data from elsewhere: only the allow-listed tuning variables without --yes
        from mpitempo.io.tuning_files import read_settings
        from mpitempo.runner.resume import check_received_env

        check_received_env(read_settings(verify), f"--verify '{verify}'", yes)
    pred_list = parse_sizes(predict_sizes, "--predict") if predict_sizes is not None else []
    both = sorted(set(pred_list) & set(sizes))
    if both:
        raise MtError(f"invalid --predict '{predict_sizes}': {both[0]} B is also in --msizes (it is measured; "
                      "--predict takes sizes that are not)")
    if pred_list and len(sizes) < 2:
        raise MtError("--predict needs at least 2 measured --msizes to fit a+b*m")
    from mpitempo.io.platform import check_platform_flags

    check_platform_flags(platform, platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe,
                         smpi_selector=smpi_selector)
    if platform:
        from mpitempo.io.platform import check_np, read_platform

        if verify:
            raise MtError("--verify is not available with --platform: SMPI takes its algorithms as smpirun "
                          "arguments (smpi-coll-selection.txt), not as the environment a tuning.env sets")
        if budget is not None:
            raise MtError("--budget is not available with --platform: it plans host wall time from the time "
                          "slices, which a simulation spends in simulated time; give --mpiruns and --nrep")
        plat = read_platform(platform)
        for n in np_list:
            check_np(plat, n, bool(platform_oversubscribe), platform_ppn)
    smpi_selector = smpi_selector or "mpich"
    if mpiruns is None:
        mpiruns = 1 if platform else 10
    if nrep is None:
        nrep = 5 if platform else 300
    target = Path(outdir) if outdir else Path(f"mpitempo-tune-{time.strftime('%Y%m%d-%H%M%S')}")
    if not dry_run:
        if target.is_symlink():
            raise MtError(f"output directory '{target}' is a symbolic link; choose a new -o (tune writes only into "
                          "a directory it creates or an empty one)")
        if target.exists() and not target.is_dir():
            raise MtError(f"output directory '{target}' already exists and is not a directory; choose a new -o")
        if target.exists() and (target / "campaign" / "campaign.toml").is_file() and not (target / "tune.json").exists():
            raise MtError(f"output directory '{target}' holds an interrupted tune (its campaign/, no tune.json): tune "
                          f"cannot resume it; complete its measurements with: mpitempo run --resume {target / 'campaign'} "
                          "(then mpitempo compare reads them), or tune again with a new -o")
        if target.exists() and any(target.iterdir()):
            raise MtError(f"output directory '{target}' already exists and is not empty; choose a new -o")
        from mpitempo.io.paths import check_not_in_data_dir

        check_not_in_data_dir(target, "the tune directory")   # never into a campaign's runs/ or a trace

    from mpitempo.build import ensure_build
    from mpitempo.mpilib.variants import catalogue, restrict, selection_env_note

    b = ensure_build(mpicc or ("smpicc" if platform else None))
    lib = mpilib.of(b)
    if lib.simulated and not platform:
        raise MtError("this core is built with SimGrid's smpicc: it runs on a simulated platform only; "
                      "give --platform FILE.xml (e.g. platforms/cluster64-fast.xml)")
    if platform and not lib.simulated:
        raise MtError(f"--platform needs a core built with SimGrid's smpicc (--mpicc smpicc); {mpicc} is "
                      f"{b.flavour}")
    cat = restrict(catalogue(b, op_list, np_list, smpi_selector=smpi_selector), algorithms)
    env_note = selection_env_note(b.flavour)
    if env_note and not quiet and not dry_run:
        click.echo(f"mpitempo tune: note: {env_note}", err=True)
    simulated = lib.simulated
    plat_spec = ({"platform": platform, "platform_ppn": platform_ppn,
                  "platform_oversubscribe": bool(platform_oversubscribe)} if simulated else {})
    label = (f"SMPI {smpi_selector} selector, SIMULATED platform {Path(platform).name}" if simulated
             else b.flavour)
    if verify:
        return _verify(b, cat, Path(verify), op_list, sizes, np_list, launcher, mpicc, mpiruns, ts, nrep, alpha,
                       budget_s, target, seed, quiet, as_json)

    minfo = lib.selection_table(b)   # the library's own selection table, where a complete file needs it

    from mpitempo.runner.tuneplan import Plan, fit

    plan = Plan(op_list, sizes, {op: [a.name for a in cat.algorithms[op]] for op in op_list}, np_list, mpiruns, ts)
    if budget_s is not None and not dry_run:
        import copy

        from mpitempo.runner.tuneplan import probe_overhead

        fit(copy.deepcopy(plan), budget_s, alpha)   # a budget too small even by the model: refused before any launch

        for n in np_list:   # what one mpirun costs here and now
            t = probe_overhead(b, n, launcher)
            if t is not None:
                plan.overhead[n] = t
    plan = fit(plan, budget_s, alpha)
    if dry_run:
        out = {"library": label, "discovery": cat.source, "ops": plan.ops, "msizes": plan.msizes,
               "nprocs": plan.np_list, "algorithms": plan.algorithms, "mpiruns": plan.mpiruns,
               "time_slice_s": plan.time_slice_s, "configurations": plan.configs,
               "total_mpiruns": plan.total_mpiruns,
               # the estimate sums time slices of wall time: a simulation spends them in simulated time
               "estimate_s": None if simulated else round(plan.estimate_s, 1),
               "budget_s": budget_s, "left_out": plan.left_out}
        if as_json:
            from mpitempo.present.tables import print_json
            print_json(out)
        else:
            _print_plan(out)
        return

    spec = _spec(plan, cat, launcher, mpicc, nrep, seed, "tune",
                 default_env=smpi_env(smpi_selector) if simulated else None)
    spec.update(plat_spec)
    if simulated:
        spec["sync"] = "prop"   # every simulated rank reads the one simulated clock: one broadcast copies it exactly
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.execute import check_campaign, execute

    c = build_campaign(spec, kind="tune")
    check_campaign(c)
    if not quiet:
        click.echo(f"mpitempo tune: {label} ({cat.source}): {plan.configs - 1} algorithms + default, "
                   f"{plan.total_mpiruns} mpiruns"
                   + ("" if simulated else f", estimated {plan.estimate_s / 60:.1f} min")
                   + (f" (budget {budget_s / 60:.1f} min)" if budget_s else ""), err=True)
        for lo in plan.left_out:
            click.echo(f"mpitempo tune: left out to fit the budget: {lo}", err=True)
    over = _over(np_list, b)
    if any(over.values()) and not quiet:
        click.echo(f"mpitempo tune: np {', '.join(str(n) for n, o in over.items() if o)} oversubscribes this "
                   "machine: those results check function only, not speed", err=True)
    target.mkdir(parents=True, exist_ok=True)
    camp = target / "campaign"
    t0 = time.monotonic()
    load0 = _load()
    counts = execute(c, camp, quiet=quiet)
    elapsed = time.monotonic() - t0
    busy = _busy_note(load0, _load())
    if counts.get("interrupted"):
        raise MtError(f"interrupted; completed runs are kept in {camp} (tune cannot resume: complete them with "
                      f"mpitempo run --resume {camp}, or tune again with a new -o)", code=130)
    from mpitempo.kinds.tune import failed_configs
    failed = failed_configs(camp)
    if "default" in failed:
        raise MtError(f"the library's default configuration failed in every mpirun: {failed['default']}")

    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide, mpich_mpir_level, rules_from

    if budget_s is not None and elapsed > 1.1 * budget_s:
        failed_note = (f"the campaign took {elapsed / 60:.1f} min, over the budget of {budget_s / 60:.1f} min "
                       f"(estimated {plan.estimate_s / 60:.1f} min): mpiruns were slower than the probe mpirun "
                       "(a busy machine?)")
    else:
        failed_note = None

    data = open_campaign(camp)
    dec = decide(data, min_gain, alpha, failed, seed=seed if seed is not None else 1, deterministic=simulated)
    rows, notes = dec.rows, list(dec.notes) + [n for n in (failed_note, busy, env_note) if n]
    if simulated:   # a simulation's times do not depend on the host's load or on the number of mpiruns
        notes = [n for n in notes if n not in (failed_note, busy) and "too few runs" not in n
                 and "flagged runs (simulated)" not in n]
    if lib.mpir_level():
        rows, more = mpich_mpir_level(rows, dec.candidates)
        notes += more
    from mpitempo.analysis import cliffs as cl
    from mpitempo.analysis import predict as pr
    from mpitempo.analysis.tune import predicted_rows

    table = lib.table_choice(minfo)
    found_cliffs = cl.campaign_cliffs(dec.samples, over, table)
    loo = []
    for op, np_ in sorted({(r["op"], r["nprocs"]) for r in rows}):
        recs = pr.leave_one_out(pr.curves_from(dec.samples, op, np_)) if op != "barrier" else []
        loo.append({"op": op, "nprocs": np_, **pr.summarize(recs), "records": recs,
                    "oversubscribed": over.get(np_, False)})
    if pred_list:
        rows = sorted(rows + predicted_rows(dec.samples, rows, pred_list, b.flavour),
                      key=lambda r: (r["op"], r["nprocs"], r["msize"]))
        notes.append(f"rules at {', '.join(str(m) for m in pred_list)} B are PREDICTED from the a+b*m models "
                     "(not measured there; see prediction.leave_one_out for the model's error on held-out sizes)")
    for r in rows:
        r["oversubscribed"] = over.get(r["nprocs"], False)
        if simulated:
            r["simulated"] = True
    for cnd in dec.candidates:
        cnd["chosen"] = any(r["chosen"] == cnd["algorithm"] and (r["op"], r["msize"], r["nprocs"])
                            == (cnd["op"], cnd["msize"], cnd["nprocs"]) for r in rows)
    ids = {(a.op, a.name): a.id for lst in cat.algorithms.values() for a in lst}
    rules = rules_from(rows, ids)
    from mpitempo.io.tuning_files import write_config
    result = write_config(b, rules, target, minfo, smpi_selector=smpi_selector if simulated else None)
    if simulated:
        result["library"] = label
        result["simulated"] = _simulation(camp)
    result.update({"rows": [_contract_row(r) for r in rows], "candidates": dec.candidates,
                   "alpha": alpha, "min_gain_pct": min_gain, "discovery": cat.source,
                   "method": (f"Round-Time (time slice {plan.time_slice_s * 1e3:g} ms, sync hca3), "
                              f"{plan.mpiruns} interleaved mpiruns per configuration") if not simulated else
                             (f"SIMULATED (SimGrid/SMPI, deterministic): Round-Time on the one simulated clock "
                              f"(sync prop), {nrep} measurements per experiment, {plan.mpiruns} mpirun(s) per "
                              "configuration"),
                   "mpiruns": plan.mpiruns, "campaign": str(camp), "left_out": plan.left_out,
                   "failed_algorithms": failed, "elapsed_s": round(elapsed, 1),
                   "estimate_s": None if simulated else round(plan.estimate_s, 1), "notes": notes + cat.notes,
                   "probe_overhead_s": {str(k): round(v, 2) for k, v in plan.overhead.items()},
                   "oversubscribed": any(over.values()), "cliffs": found_cliffs,
                   "prediction": {"method": "per (op, np, algorithm) a + b*m (a, b >= 0) fitted to the 4 nearest "
                                            "measured sizes on each side; leave-one-out over the measured sizes",
                                  "predicted_sizes": pred_list, "leave_one_out": loo}})
    result["plots"] = _plots(rows, dec.candidates, target, label)
    from mpitempo.present.tune import print_rows, report_text

    from mpitempo.io.safefs import safe_write_text

    safe_write_text(target / "tune-report.txt", report_text(result), target)
    safe_write_text(target / "tune.json", json.dumps(result, indent=2, default=float) + "\n", target)
    if as_json:
        from mpitempo.present.tables import print_json
        print_json({k: result[k] for k in ("library", "rows", "config_file", "settings", "settings_file",
                                           "failed_algorithms", "left_out", "notes", "oversubscribed", "files",
                                           "cliffs", "prediction", "simulated") if k in result})
    else:
        print_rows(rows, f"{label}: default vs chosen per size (gain: median of mpirun medians, "
                         + ("deterministic: no CI, no test)" if simulated else "bootstrap 95% CI; p: Holm-adjusted)"))
        if not any(r["chosen"] != "default" for r in rows):
            click.echo("No algorithm is significantly faster than the default at any measured size: "
                       "the default is kept.")
        from mpitempo.present.tables import width, wrap_line
        for n in result["notes"]:
            click.echo(wrap_line(f"note: {n}", width(), 4))
        for c in found_cliffs:
            click.echo(wrap_line(cl.describe(c), width(), 4))
        if not found_cliffs:
            click.echo("cliffs: none (no jump beyond the a+b*x model of any series)")
        for g in loo:
            if g["points"]:
                click.echo(wrap_line(
                    f"prediction error, {g['op']} np={g['nprocs']} (leave-one-out, {g['points']} sizes): best algorithm "
                    f"right at {100 * g['hit_rate']:.0f}%, regret median {g['regret_median_pct']:.1f}% max "
                    f"{g['regret_max_pct']:.1f}%, |time error| median {g['abs_time_err_median_pct']:.1f}%"
                    + (" [OVERSUBSCRIBED: function only]" if g["oversubscribed"] else ""), width(), 4))
        for name, path in result.get("files", {}).items():
            if name == "ompi_json":
                click.echo(f"JSON rules (Open MPI >= 6.0; not read by Open MPI 5.0): {path}")
        if simulated:
            click.echo(f"SIMULATED platform {platform}: SMPI settings (smpirun arguments per np): "
                       f"{result['config_file']}")
            click.echo(f"report: {target / 'tune-report.txt'}; plots: {', '.join(result['plots'])}")
            return
        click.echo(f"settings: {target / 'tuning.env'}" + (f"; rules: {result['config_file']}"
                                                           if result["config_file"] else ""))
        click.echo(f"report: {target / 'tune-report.txt'}; plots: {', '.join(result['plots'])}")
        click.echo(f"verify with: mpitempo tune --verify {target / 'tuning.env'} --ops {','.join(plan.ops)} "
                   f"--msizes {','.join(str(s) for s in plan.msizes)} -n {','.join(str(n) for n in np_list)}")
    if counts["failed"] and not quiet:
        click.echo(f"mpitempo tune: {counts['failed']} mpirun(s) failed; algorithms that never ran: "
                   f"{', '.join(sorted(failed)) or 'none'}", err=True)


def _load() -> float | None:
    import os

    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _busy_note(before, after) -> str | None:
    """A note when the machine ran other work during the campaign (1-minute load average above the
    number of cores at its start or end): its timings include that work."""
    from mpitempo.runner.launch import ncores

    loads = [x for x in (before, after) if x is not None]
    if loads and max(loads) > ncores():
        return (f"the machine was busy: load average {max(loads):.1f} on {ncores()} cores at the start or end "
                "of the campaign; timings include other work (run tune on an idle machine)")
    return None


def _contract_row(r: dict) -> dict:
    keys = ("op", "msize", "nprocs", "default", "chosen", "gain_pct", "gain_ci_lo_pct", "gain_ci_hi_pct",
            "p_value", "median_default_s", "median_chosen_s", "oversubscribed")
    out = {k: r.get(k) for k in keys}
    if r.get("chosen_per_size"):
        out["chosen_per_size"] = r["chosen_per_size"]
    if r.get("simulated"):
        out["simulated"] = True
    return out


def _simulation(camp: Path) -> dict | None:
    """The simulation record (platform, SimGrid version, network model) of the campaign's first run."""
    from mpitempo.analysis.flags import simulation_of

    for m in sorted(camp.glob("runs/*/meta.json")):
        try:
            sim = simulation_of(json.loads(m.read_text()))
        except (OSError, ValueError):
            continue
        if sim:
            return {k: sim.get(k) for k in ("simulated", "simulator", "simgrid_version", "platform",
                                            "platform_sha256", "network_model")}
    return None


def smpi_env(selector):
    from mpitempo.mpilib.smpi import smpi_env as env

    return env(selector)


def _spec(plan, cat, launcher, mpicc, nrep, seed, name, extra_configs=None, default_env=None) -> dict:
    configs = [{"name": "default", "env": dict(default_env or {}), "mpicc": mpicc, "launcher": launcher}]
    if extra_configs is None:
        for op in plan.ops:
            for a in cat.algorithms[op]:
                if a.name in plan.algorithms[op]:
                    configs.append({"name": a.config, "env": a.env, "mpicc": mpicc, "launcher": launcher,
                                    "ops": [op], "msizes": "8" if op == "barrier" else
                                    ",".join(str(s) for s in plan.msizes)})
    else:
        configs += extra_configs
    msz = ",".join(str(s) for s in plan.msizes)
    spec = {"name": name, "np": plan.np_list, "mpiruns": plan.mpiruns, "ops": plan.ops, "msizes": msz,
            "nrep": nrep, "time_slice": f"{plan.time_slice_s * 1e3:g}ms", "config": configs}
    if seed is not None:
        spec["seed"] = seed
    return spec


def _plots(rows, cands, target: Path, flavour: str) -> list[str]:
    from mpitempo.present.plots.tune import algorithm_plot

    out = []
    for op, np_ in sorted({(r["op"], r["nprocs"]) for r in rows}):
        if op == "barrier":
            continue
        fig = algorithm_plot(op, np_, cands, rows, f"{flavour}: {op} on {np_} ranks (red star: chosen)")
        p = target / f"tune-{op}-np{np_}.png"
        import io

        from mpitempo.io.safefs import safe_write_text

        buf = io.BytesIO()
        fig.savefig(buf, dpi=100, format="png")
        safe_write_text(p, buf.getvalue(), target, binary=True)
        import matplotlib.pyplot as plt
        plt.close(fig)
        out.append(str(p))
    return out


def _print_plan(p: dict) -> None:
    click.echo(f"library: {p['library']} (algorithms from {p['discovery']})")
    for op, algs in p["algorithms"].items():
        click.echo(f"  {op}: default + {len(algs)} algorithms: {', '.join(algs)}")
    click.echo(f"sizes: {', '.join(str(s) for s in p['msizes'])} B; np: {', '.join(str(n) for n in p['nprocs'])}")
    est = ("no estimate on a simulated platform (host time grows with the ranks: docs/simulation.md)"
           if p["estimate_s"] is None else f"estimated {p['estimate_s'] / 60:.1f} min")
    click.echo(f"{p['configurations']} configurations x {p['mpiruns']} mpiruns = {p['total_mpiruns']} mpiruns, "
               f"time slice {p['time_slice_s'] * 1e3:g} ms; {est}"
               + (f" (budget {p['budget_s'] / 60:.1f} min)" if p["budget_s"] else ""))
    for lo in p["left_out"]:
        click.echo(f"left out to fit the budget: {lo}")


# -- verification -------------------------------------------------------------------------------------

def _verify(b, cat, cfg_path: Path, op_list, sizes, np_list, launcher, mpicc, mpiruns, ts, nrep, alpha, budget_s,
            target, seed, quiet, as_json):
    from mpitempo.analysis.comparison import compare, sample_arrays
    from mpitempo.analysis.store import open_campaign
    from mpitempo.io.campaign import build_campaign
    from mpitempo.io.tuning_files import read_settings
    from mpitempo.runner.execute import check_campaign, execute
    from mpitempo.runner.tuneplan import Plan, estimate
    from mpitempo.mpilib.variants import selection_env_note
    from mpitempo.stats.compare import min_runs_for
    from mpitempo.stats.gain import gain_ci

    settings = read_settings(cfg_path)
    from mpitempo.io.tuning_files import check_settings, selected
    sel = check_settings(b, cat, settings, f"--verify '{cfg_path}'")
    # two configurations (default, tuned), each measuring every op x size
    plan = Plan(op_list, sizes, {}, np_list, mpiruns, ts)
    floor = min_runs_for(alpha, "greater")
    if budget_s is not None and 2 * estimate(plan) > budget_s:
        if 2 * estimate(Plan(op_list, sizes, {}, np_list, floor, ts)) > budget_s:
            raise MtError(f"--budget {budget_s:g} s is too small to verify: {floor} mpiruns of default and "
                          f"tuned need {2 * estimate(Plan(op_list, sizes, {}, np_list, floor, ts)):.0f} s")
        while plan.mpiruns > floor and 2 * estimate(plan) > budget_s:
            plan.mpiruns -= 1
        if not quiet:
            click.echo(f"mpitempo tune: left out to fit the budget: mpiruns per configuration {mpiruns} -> "
                       f"{plan.mpiruns}", err=True)
    extra = [{"name": "tuned", "env": settings, "mpicc": mpicc, "launcher": launcher}]
    spec = _spec(plan, cat, launcher, mpicc, nrep, seed, "tune-verify", extra_configs=extra)
    c = build_campaign(spec, kind="tune")
    check_campaign(c)
    target.mkdir(parents=True, exist_ok=True)
    camp = target / "campaign"
    load0 = _load()
    counts = execute(c, camp, quiet=quiet)
    busy = _busy_note(load0, _load())
    if counts.get("interrupted"):
        raise MtError(f"interrupted; completed runs are kept in {camp} (tune cannot resume: complete them with "
                      f"mpitempo run --resume {camp}, or tune again with a new -o)", code=130)
    from mpitempo.kinds.tune import failed_configs
    failed = failed_configs(camp)
    if "tuned" in failed:
        raise MtError(f"the library rejected the configuration {cfg_path}: every mpirun with it failed: "
                      f"{failed['tuned']}")
    if "default" in failed:
        raise MtError(f"the library's default configuration failed in every mpirun: {failed['default']}")
    data = open_campaign(camp)
    cmp = compare(data, by="config", alternative="greater", base="default", alpha=alpha,
                  allow_oversubscribed=True)  # oversubscribed rows are marked below
    arr = sample_arrays(data)
    samples: dict[tuple, list[float]] = {}
    for cfg, op, msize, nprocs, med in zip(arr["config"], arr["op"], arr["msize"], arr["nprocs"], arr["med"]):
        if med is not None and med == med:
            samples.setdefault((str(cfg), str(op), int(msize), int(nprocs)), []).append(float(med))
    over = _over(np_list, b)
    rows = []
    for r in sorted(cmp.rows, key=lambda r: (r["op"], r["nprocs"], r["msize"])):
        key = (r["op"], int(r["msize"]), int(r["nprocs"]))
        ci = gain_ci(samples.get(("default",) + key, []), samples.get(("tuned",) + key, []),
                     seed=seed if seed is not None else 1)
        chosen = selected(sel, r["op"], int(r["msize"]), int(r["nprocs"]), b.flavour)
        rows.append({"op": r["op"], "msize": int(r["msize"]), "nprocs": int(r["nprocs"]), "default": "default",
                     "chosen": chosen, "gain_pct": None if r["delta_pct"] is None else -r["delta_pct"],
                     "gain_ci_lo_pct": ci[0] if ci else None, "gain_ci_hi_pct": ci[1] if ci else None,
                     "p_value": r["p_value"], "median_default_s": r["median_a_s"], "median_chosen_s": r["median_b_s"],
                     "confirmed": bool(r["significant"]), "oversubscribed": over.get(int(r["nprocs"]), False)})
    from mpitempo.analysis.cliffs import campaign_cliffs, describe
    from mpitempo.analysis.tune import rule_gains
    per_rule = rule_gains(rows, samples, seed=seed if seed is not None else 1)
    found_cliffs = campaign_cliffs(samples, over)
    result = {"library": b.flavour, "config_file": settings.get(mpilib.of(b).rules_file_var or ""),
              "settings": settings, "settings_file": str(cfg_path), "verify": rows, "rows": rows,
              "rule_gains": per_rule, "cliffs": found_cliffs,
              "alternative": "greater (one-sided: the tuned configuration is faster)", "mpiruns": plan.mpiruns,
              "campaign": str(camp), "notes": cmp.notes + ([busy] if busy else []) + mpilib.of(b).complete(settings).notes
              + [n for n in (selection_env_note(b.flavour),) if n],
              "oversubscribed": any(over.values())}
    from mpitempo.io.safefs import safe_write_text

    safe_write_text(target / "verify.json", json.dumps(result, indent=2, default=float) + "\n", target)
    if as_json:
        from mpitempo.present.tables import print_json
        print_json(result)
        return
    from mpitempo.present.tune import print_rows

    print_rows(rows, f"{b.flavour}: verification of {cfg_path}: new mpiruns, tuned vs default "
                     f"(one-sided rank-sum p; gain: bootstrap 95% CI)", verify=True)
    click.echo("gain per rule (sizes where the configuration selects one algorithm; geometric mean over its "
               "sizes, bootstrap 95% CI):")
    for g in per_rule:
        gp = "n/a" if g["gain_pct"] is None else f"{g['gain_pct']:+.1f}%"
        ci = "" if g["gain_ci_lo_pct"] is None else f" [{g['gain_ci_lo_pct']:+.1f}, {g['gain_ci_hi_pct']:+.1f}]"
        sz = ",".join(str(m) for m in g["msizes"])
        click.echo(f"  {g['op']} np={g['nprocs']} {g['algorithm']} at {sz} B: {gp}{ci}"
                   + (" confirmed" if g["confirmed"] else "") + (" OVERSUBSCRIBED (function only)"
                                                                 if over.get(g["nprocs"]) else ""))
    for c in found_cliffs:
        click.echo(f"  {describe(c)}")
    tuned = [r for r in rows if r["chosen"] != "default"]
    held = [r for r in tuned if r["confirmed"]]
    if not tuned:
        click.echo("The configuration selects the default at every measured size: nothing to confirm (both "
                   "columns run the library's default; their difference is the run-to-run noise).")
    else:
        click.echo(f"{len(held)} of {len(tuned)} tuned sizes confirmed faster (p <= {alpha:g}).")
    from mpitempo.present.tables import width, wrap_line
    for n in result["notes"]:
        click.echo(wrap_line(f"note: {n}", width(), 4))
