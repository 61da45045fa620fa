"""`mpitempo tree`: allreduce spanning trees (Bongo, Anshus and Bjorndalen 2004).

A campaign of kind `tree` (kinds/tree.py): one configuration per --tree, run by the common runner
(mpiruns interleaved); the C core `mpitempo-tree` runs the allreduce along the tree with event
collectors; this command analyses the events (waits, latencies, imbalance culprit, path groups,
subtree costs), compares two configurations per path, and with --tune ranks the trees against
MPI_Allreduce and a binomial tree.
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from mpitempo.options import budget_options, FINITE
from mpitempo.errors import MtError
from mpitempo.options import (json_option, launcher_option, mpicc_option, np_option, param_options, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)

TREE_KEYS = ("tree", "tree_map", "tree_hosts", "down_order")
# Defaults on a simulated platform (--platform), where every call of a run takes the same simulated time:
# every simulated rank reads the one simulated clock, which one broadcast copies exactly (sync prop); the
# collectors' overhead is the simulated clock reads' (10 ns each, docs/simulation.md), not measured; 100
# recorded calls after 10 warm-up calls.
SIM_DEFAULTS = {"sync": "prop", "overhead_reps": 0, "ncalls": 100, "warmup": 10}


def canonical(spec: str) -> str:
    """A preset as the core reads it: integers without leading zeros or signs, node's default levels
    written out (kary:02 is kary:2, node is node:binomial:flat)."""
    import re

    spec = re.sub(r"[-+]?\d+", lambda m: str(int(m.group(0))), spec)
    if spec == "node" or spec.startswith("node:"):
        lv = (spec.split(":")[1:] + ["binomial", "flat"][len(spec.split(":")) - 1:])[:2]
        spec = "node:" + ":".join(lv)
    return spec


def configs_for(trees: list[str], tune: bool) -> list[dict]:
    """[[config]] tables: one per tree (file or preset); --tune adds MPI_Allreduce and binomial."""
    from mpitempo.io.tree import resolve
    from mpitempo.safe_text import safe

    specs = [resolve(t) for t in trees]
    given = list(trees)
    if tune:
        for base in ("binomial", "mpi"):
            if not any(s["tree"] == base and not s["tree_map"] and not s["tree_hosts"] for s in specs):
                specs.append(resolve(base))
                given.append(base)
    out, seen, same = [], set(), {}
    for s, value in zip(specs, given):
        name = s["name"]
        if name in seen:
            raise MtError(f"--tree '{name}' is given twice: give each configuration once")
        seen.add(name)
        key = (canonical(s["tree"]), tuple(s["tree_map"] or ()), tuple(s["tree_hosts"] or ()), s["down_order"] or "fixed")
        if key in same:
            raise MtError(f"--tree '{safe(value)}' and '{safe(same[key])}' are the same tree ({safe(key[0])}): give each "
                          "configuration once (more mpiruns with --mpiruns)")
        same[key] = value
        c = {"name": name, "tree": s["tree"]}
        for k in ("tree_map", "tree_hosts"):
            if s[k]:
                c[k] = ",".join(str(x) for x in s[k])
        if s["down_order"]:
            c["down_order"] = s["down_order"]
        c["_nodes"] = s
        out.append(c)
    return out


@click.command()
@np_option
@launcher_option
@mpicc_option
@platform_option
@platform_ppn_option
@platform_oversubscribe_option
@click.option("--tree", "trees", multiple=True, metavar="FILE|PRESET",
              help="Tree description (TOML file, docs/tree.md) or preset: flat, binomial, kary:K, fanout:F1/F2, "
                   "parents:P0/P1/.., node:INTER:INTRA, mpi. Repeat for several configurations (two: per-path "
                   "comparison). Default: binomial.")
@click.option("--tune", is_flag=True,
              help="Rank the given trees by allreduce time and compare the fastest with MPI_Allreduce and a "
                   "binomial tree (added when not given), Mann-Whitney over mpiruns.")
@param_options("tree", exclude=TREE_KEYS)
@click.option("--mpiruns", type=int, default=1, show_default=True, help="mpiruns per configuration (interleaved).")
@click.option("--skip", type=int, default=0, show_default=True, help="Leave out the first N recorded calls of each run.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep the campaign here: runs/<id>/{meta.json,events.csv,links.csv}, analysis.json, "
                   "report.html with the timemaps (default: a temporary directory, removed afterwards). "
                   "With --from: where analysis.json and report.html go.")
@click.option("--from", "from_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Analyse an existing tree campaign instead of measuring.")
@click.option("--timeout", "timeout_s", type=FINITE, default=600, show_default=True, help="Seconds per mpirun.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
@budget_options
def tree(np, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, trees, tune, mpiruns, skip, outdir, from_dir, timeout_s, quiet, as_json,
         budget, estimate_only, **params):
    """Allreduce as an explicit spanning tree with global-clock event
    collectors: arrival/departure order and waits, down/up and link
    latencies, the load-imbalance culprit, similar paths, subtree costs,
    timemaps; two trees compared per path; --tune ranks trees against
    MPI_Allreduce and a binomial tree (Bongo, Anshus and Bjorndalen 2004).

    \b
    Examples:
      mpitempo tree -n 4 --tree kary:2 --ncalls 5000
      mpitempo tree -n 8 --tree binomial --tree flat --mpiruns 5 -o cmp
      mpitempo tree -n 4 --tree examples/tree-fanout.toml --workload sor --json
      mpitempo tree -n 4 --tune --tree kary:3 --tree flat --mpiruns 10
      mpitempo tree --platform platforms/cluster64-fast-slownode.xml -n 64 \\
          --tree node --work 1000000

    --json prints overhead_pct, paths (path, ranks, arrival_wait_s,
    departure_wait_s, down_latency_s, up_latency_s), imbalance
    (culprit_rank, culprit_host, evidence_s), comparison rows (path, a_s,
    b_s, delta_pct) with two trees, tuning with --tune, slow_hosts and slow_links
    (docs/tree.md), simulated on a simulated platform. Times in seconds.
    """
    from mpitempo.analysis import tree as analysis

    from mpitempo.io.platform import check_platform_flags

    check_platform_flags(platform, platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe)
    if skip < 0:
        raise MtError(f"invalid --skip {skip}: must be >= 0")
    if from_dir:
        _refuse_measuring_options()
        if outdir:
            from mpitempo.io.paths import check_not_input

            check_not_input(outdir, [from_dir], "-o", directory=True)
            _check_outdir(Path(outdir))
        runs = _analyse_dir(Path(from_dir), skip)
        if outdir:          # with --from, -o receives the analysis and the report
            Path(outdir).mkdir(parents=True, exist_ok=True)
        _present(runs, as_json, tune, Path(outdir) if outdir else None, analysis.campaign_order(Path(from_dir)),
                 quiet)
        return
    from mpitempo.io.campaign import build_campaign
    from mpitempo.io.tree import check_against_np
    from mpitempo.runner.estimate import budget_gate
    from mpitempo.runner.execute import check_campaign, run_campaign

    if platform:    # a deterministic simulation: a few calls tell all; see SIM_DEFAULTS
        for k, v in SIM_DEFAULTS.items():
            if params.get(k) is None:
                params[k] = v
    _refuse_ignored_params(params, from_platform=bool(platform))
    cfgs = configs_for(list(trees) or ["binomial"], tune)
    nps = np or 2
    for c in cfgs:
        check_against_np(c["_nodes"], nps, f"'{c['name']}'")
    if params.get("ncalls") is not None and int(params["ncalls"]) >= 1 and skip >= int(params["ncalls"]):
        raise MtError(f"invalid --skip {skip}: must be smaller than --ncalls {params['ncalls']}")
    spec = {"config": [{k: v for k, v in c.items() if not k.startswith("_")} for c in cfgs]}
    camp = build_campaign(spec, dict(params, np=nps, mpiruns=mpiruns, launcher=launcher, mpicc=mpicc,
                                     platform=platform, platform_ppn=platform_ppn,
                                     platform_oversubscribe=platform_oversubscribe,
                                     timeout_s=timeout_s, name="tree"), kind="tree")
    deadline, stop = budget_gate(camp, budget, estimate_only, quiet, check_campaign(camp), outdir=outdir)
    if stop:
        return
    with run_campaign(camp, outdir, quiet=quiet or as_json, deadline=deadline) as (out, complete):
        runs = [analysis.analyse_run(d, skip) for d in complete]
        _present(runs, as_json, tune, out if outdir else None, [c["name"] for c in cfgs], quiet)


# options of one workload only: given with the other, they would be silently ignored
WORKLOAD_ONLY = {"gsum": ("msize", "datatype", "redop", "work"), "sor": ("sor_rows", "sor_cols")}


def _refuse_ignored_params(params: dict, from_platform: bool = False) -> None:
    """Refuse a measuring option that the run would ignore: a Gsum option with --workload sor and the
    reverse, --overhead-calls when the overhead is not measured (--overhead-reps 0, the default on a
    simulated platform)."""
    wl = params.get("workload") or "gsum"
    for other, names in WORKLOAD_ONLY.items():
        if other == wl:
            continue
        for k in names:
            if params.get(k) is not None:
                raise MtError(f"--{k.replace('_', '-')} applies to --workload {other} only (this run: --workload "
                              f"{wl}): leave it out")
    if params.get("overhead_calls") is not None and str(params.get("overhead_reps")) == "0":
        why = " (the default on a simulated platform)" if from_platform else ""
        raise MtError("--overhead-calls is not used with --overhead-reps 0" + why + ": the overhead is not measured; "
                      "give --overhead-reps N to measure it, or leave --overhead-calls out")


# what --from uses; every other option is about measuring and is refused with it, not ignored
FROM_OPTIONS = ("from_dir", "outdir", "skip", "tune", "as_json", "quiet")


def _refuse_measuring_options() -> None:
    from click.core import ParameterSource

    ctx = click.get_current_context()
    for prm in ctx.command.params:
        if prm.name in FROM_OPTIONS or ctx.get_parameter_source(prm.name) in (None, ParameterSource.DEFAULT):
            continue
        flag = max(prm.opts, key=len)
        raise MtError(f"{flag} is not used with --from (the runs are analysed as they were measured): leave it out "
                      f"(allowed with --from: -o, --skip, --tune, --json, --quiet)")


def _check_outdir(out: Path) -> None:
    """-o of --from, before anything is read: a directory (or a name to create) whose analysis.json and
    report.html are absent or regular files, never a link, FIFO or device."""
    import os
    import stat

    from mpitempo.io.safefs import check_not_link

    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return
    except OSError as e:
        raise MtError(f"cannot write into -o '{out}': {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise MtError(f"cannot write into -o '{out}': it is a symbolic link; give the directory itself")
    if not stat.S_ISDIR(st.st_mode):
        from mpitempo.io.safefs import _what

        raise MtError(f"cannot write into -o '{out}': it is {_what(st.st_mode)}, not a directory")
    for name in ("analysis.json", "report.html"):
        check_not_link(out / name, out, want="file")


def _analyse_dir(p: Path, skip: int) -> list[dict]:
    from mpitempo import kinds
    from mpitempo.analysis import tree as analysis
    from mpitempo.io.integrity import verify_run
    from mpitempo.io.rundir import check_root, find_runs, load_meta
    from mpitempo.io.safefs import check_not_link

    if check_not_link(p / "meta.json", p, want="any", verb="read") is not None:   # one run directory
        for name in ("events.csv", "links.csv"):
            check_not_link(p / name, p, want="any", verb="read")
        kind = kinds.get("tree")
        problem = verify_run(p, load_meta(p / "meta.json"), kind.data_files)
        if problem:
            raise MtError(f"run '{p}' is damaged: {problem}; refusing to use it")
        return [analysis.analyse_run(p, skip)]
    check_root(p)
    kind = kinds.of_campaign(p)
    if kind.name != "tree":
        raise MtError(f"'{p}' is a campaign of kind '{kind.name}', not a tree campaign (see mpitempo summary {p})")
    complete, _, _ = find_runs(p, kind)
    if not complete:
        raise MtError(f"'{p}' has no complete tree runs")
    return [analysis.analyse_run(d, skip, p) for d in complete]


def _present(runs: list[dict], as_json: bool, tune: bool, outdir: Path | None, order: list[str] | None = None,
             quiet: bool = False) -> None:
    from mpitempo.analysis import tree as analysis
    from mpitempo.present import tree as show
    from mpitempo.present.tables import print_json

    runs = analysis.in_config_order(runs, order or [])
    configs = list(dict.fromkeys(r["config"] for r in runs))
    trees = [c for c in configs if not next(r for r in runs if r["config"] == c)["mpi"]]
    comparison = analysis.compare_configs(runs, trees[0], trees[1]) if len(trees) == 2 and not tune else None
    tuning = analysis.tuning(runs) if tune or len(configs) > 2 or len(trees) < len(configs) else None
    res = analysis.json_result(runs, comparison, tuning)
    if outdir is not None:
        from mpitempo.io.safefs import safe_write_text

        doc = show.html(runs, res)     # made before anything is written: never one file without the other
        safe_write_text(outdir / "analysis.json", json.dumps(res, indent=1) + "\n", outdir)
        safe_write_text(outdir / "report.html", doc, outdir)
        if not as_json and not quiet:
            click.echo(f"analysis.json and report.html (timemaps, serialization plot) in {outdir}", err=True)
    if as_json:
        print_json(res)
    else:
        click.echo(show.text(runs, res), nl=False)
