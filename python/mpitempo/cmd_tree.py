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

from mpitempo.options import FINITE
from mpitempo.errors import MtError
from mpitempo.options import (json_option, launcher_option, mpicc_option, np_option, param_options, platform_option,
                              platform_oversubscribe_option, platform_ppn_option)

TREE_KEYS = ("tree", "tree_map", "tree_hosts", "down_order")
# Defaults on a simulated platform (--platform), where every call of a run takes the same simulated time:
# every simulated rank reads the one simulated clock, which one broadcast copies exactly (sync prop); the
# collectors' overhead is the simulated clock reads' (10 ns each, docs/simulation.md), not measured; 100
# recorded calls after 10 warm-up calls.
SIM_DEFAULTS = {"sync": "prop", "overhead_reps": 0, "ncalls": 100, "warmup": 10}


def configs_for(trees: list[str], tune: bool) -> list[dict]:
    """[[config]] tables: one per tree (file or preset); --tune adds MPI_Allreduce and binomial."""
    from mpitempo.io.tree import resolve

    specs = [resolve(t) for t in trees]
    if tune:
        for base in ("binomial", "mpi"):
            if not any(s["tree"] == base and not s["tree_map"] and not s["tree_hosts"] for s in specs):
                specs.append(resolve(base))
    out, seen = [], set()
    for s in specs:
        name = s["name"]
        if name in seen:
            raise MtError(f"--tree '{name}' is given twice: give each configuration once")
        seen.add(name)
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
def tree(np, launcher, mpicc, platform, platform_ppn, platform_oversubscribe, trees, tune, mpiruns, skip, outdir, from_dir, timeout_s, quiet, as_json, **params):
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
      mpitempo tree --platform platforms/cluster64-fast-slownode.xml -n 64 --tree node --work 1000000

    --json prints overhead_pct, paths (path, ranks, arrival_wait_s,
    departure_wait_s, down_latency_s, up_latency_s), imbalance
    (culprit_rank, culprit_host, evidence_s), comparison rows (path, a_s,
    b_s, delta_pct) with two trees, tuning with --tune, slow_hosts and slow_links
    (docs/tree.md), simulated on a simulated platform. Times in seconds.
    """
    from mpitempo.analysis import tree as analysis

    from mpitempo.options import check_platform_flags

    check_platform_flags(platform, platform_ppn=platform_ppn, platform_oversubscribe=platform_oversubscribe)
    if skip < 0:
        raise MtError(f"invalid --skip {skip}: must be >= 0")
    if from_dir:
        if outdir:
            from mpitempo.io.paths import check_not_input

            check_not_input(outdir, [from_dir], "-o", directory=True)
        runs = _analyse_dir(Path(from_dir), skip)
        if outdir:          # with --from, -o receives the analysis and the report
            Path(outdir).mkdir(parents=True, exist_ok=True)
        _present(runs, as_json, tune, Path(outdir) if outdir else None, analysis.campaign_order(Path(from_dir)))
        return
    from mpitempo.io.campaign import build_campaign
    from mpitempo.io.tree import check_against_np
    from mpitempo.runner.execute import check_campaign, run_campaign

    if platform:    # a deterministic simulation: a few calls tell all; see SIM_DEFAULTS
        for k, v in SIM_DEFAULTS.items():
            if params.get(k) is None:
                params[k] = v
    cfgs = configs_for(list(trees) or ["binomial"], tune)
    nps = np or 2
    for c in cfgs:
        check_against_np(c["_nodes"], nps, f"'{c['name']}'")
    if params.get("ncalls") is not None and skip >= int(params["ncalls"]):
        raise MtError(f"invalid --skip {skip}: must be smaller than --ncalls {params['ncalls']}")
    spec = {"config": [{k: v for k, v in c.items() if not k.startswith("_")} for c in cfgs]}
    camp = build_campaign(spec, dict(params, np=nps, mpiruns=mpiruns, launcher=launcher, mpicc=mpicc,
                                     platform=platform, platform_ppn=platform_ppn,
                                     platform_oversubscribe=platform_oversubscribe,
                                     timeout_s=timeout_s, name="tree"), kind="tree")
    check_campaign(camp)
    with run_campaign(camp, outdir, quiet=quiet or as_json) as (out, complete):
        runs = [analysis.analyse_run(d, skip) for d in complete]
        _present(runs, as_json, tune, out if outdir else None, [c["name"] for c in cfgs])


def _analyse_dir(p: Path, skip: int) -> list[dict]:
    from mpitempo.analysis import tree as analysis
    from mpitempo.io.rundir import find_runs

    if (p / "meta.json").exists():
        return [analysis.analyse_run(p, skip)]
    complete, _, _ = find_runs(p)
    if not complete:
        raise MtError(f"'{p}' has no complete tree runs")
    return [analysis.analyse_run(d, skip) for d in complete]


def _present(runs: list[dict], as_json: bool, tune: bool, outdir: Path | None, order: list[str] | None = None) -> None:
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

        safe_write_text(outdir / "analysis.json", json.dumps(res, indent=1) + "\n", outdir)
        html = show.write_html(runs, res, outdir / "report.html")
        if not as_json:
            click.echo(f"analysis.json and {html.name} (timemaps, serialization plot) in {outdir}", err=True)
    if as_json:
        print_json(res)
    else:
        click.echo(show.text(runs, res), nl=False)
