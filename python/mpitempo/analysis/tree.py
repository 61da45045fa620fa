"""Analysis of `tree` runs: per-call event matrices from events.csv/links.csv, then the statistics of
mpitempo.stats.tree per run, and comparisons across configurations and mpiruns."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpitempo.io.tree import load_run
from mpitempo.stats import tree as st
from mpitempo.analysis.simulated import record
from mpitempo.errors import MtError
from mpitempo.io import safefs
from mpitempo.stats.compare import compare_samples, mann_whitney


def matrices(run: dict, skip: int = 0) -> dict:
    """{enter, up, down, exit, arr, dep}: calls x ranks (arr/dep by child rank, NaN for the root).
    skip: leave out the first calls."""
    e, ln, m = run["events"], run["links"], run["meta"]
    n = int(m["nprocs"])
    calls = np.unique(e["call"]).astype(int)
    idx = {c: i for i, c in enumerate(calls)}
    C = len(calls)
    out = {k: np.full((C, n), np.nan) for k in ("enter", "up", "down", "exit", "arr", "dep")}
    ci = np.array([idx[int(c)] for c in e["call"]], dtype=int)
    ri = e["rank"].astype(int)
    for k in ("enter", "up", "down", "exit"):
        out[k][ci, ri] = e[k + "_s"]
    if len(ln.get("call", [])):
        li = np.array([idx[int(c)] for c in ln["call"]], dtype=int)
        ch = ln["child"].astype(int)
        out["arr"][li, ch] = ln["arrive_s"]
        out["dep"][li, ch] = ln["depart_s"]
    if skip:
        out = {k: v[skip:] for k, v in out.items()}
    return out


def sim_record(meta: dict) -> dict | None:
    return record(meta)


def analyse_run(d: Path, skip: int = 0, root: Path | None = None) -> dict:
    """One run directory (its files checked by io.tree.load_run; root: the directory the user named)."""

    run = load_run(Path(d), root)
    m = run["meta"]
    t = m["tree"]
    parent, hosts = list(t["parent"]), list(t["host"])
    ncalls = int(np.unique(run["events"]["call"]).size)
    if skip >= ncalls:
        raise MtError(f"invalid --skip {skip}: must be smaller than the {ncalls} recorded calls of run '{d}'")
    ev = matrices(run, skip)
    n = len(parent)
    ct = st.call_times(ev)
    res = {"dir": str(d), "config": m.get("config"), "run_index": m.get("run_index"), "spec": t["spec"],
           "mpi": bool(t.get("mpi_allreduce")), "parent": parent, "hosts": hosts, "nprocs": n,
           "workload": m["workload"], "overhead": m.get("overhead") or {},
           "oversubscribed": bool(m.get("oversubscribed")), "calls": int(ct.size), "simulated": sim_record(m),
           "call_median_s": float(np.median(ct)) if ct.size else None,
           "call_mean_s": float(np.mean(ct)) if ct.size else None,
           "clock": {k: m.get("clock", {}).get(k) for k in ("sync", "spec", "max_abs_offset_s") if k in m.get("clock", {})}}
    if res["mpi"]:
        res.update(paths=[], nodes=[], links=[], imbalance=None, groups=[], subtrees=[], timemaps={}, slow_hosts=[],
                   slow_links=[])
        return res
    rows = [st.path_row(parent, ev, r, hosts) for r in range(n)]
    res["paths"] = rows
    res["nodes"] = [st.node_stats(parent, ev, g) for g in range(n) if st.children(parent)[g]]
    res["links"] = [st.link_stats(ev, c) for c in range(n) if parent[c] >= 0]
    res["imbalance"] = st.imbalance(parent, ev, hosts)
    res["slow_hosts"] = st.slow_hosts(ev, hosts)
    res["slow_links"] = st.slow_links(parent, ev, hosts)
    res["groups"] = st.group_paths(rows)
    res["subtrees"] = st.subtree_costs(parent, ev, hosts)
    res["timemaps"] = {r: st.timemap(st.path_stages(parent, ev, r)) for r in range(n)}
    return res


def campaign_order(root: Path) -> list[str]:
    """The configurations of a campaign in the order they were given (campaign.toml), read without
    following a link; [] for a single run directory or a campaign without a readable file."""
    import tomllib

    p = root / "campaign.toml"
    if not p.is_file() or p.is_symlink():
        return []
    try:
        spec = tomllib.loads(safefs.safe_read_text(p, root, limit=16 << 20))
    except (OSError, ValueError):
        return []
    cfgs = spec.get("config") if isinstance(spec, dict) else None
    return [c["name"] for c in cfgs if isinstance(c, dict) and isinstance(c.get("name"), str)] \
        if isinstance(cfgs, list) else []


def in_config_order(runs: list[dict], order: list[str]) -> list[dict]:
    """The runs with their configurations in the order given (the command line's or campaign.toml's;
    configurations it does not name after those, in order of appearance), each configuration's runs
    by run index. Runs are measured interleaved and shuffled: without this, "A" of a comparison would
    be whichever configuration happened to run first."""
    seen = list(dict.fromkeys(r["config"] for r in runs))
    rank = {c: i for i, c in enumerate([c for c in order if c in seen] + [c for c in seen if c not in order])}
    return sorted(runs, key=lambda r: (rank[r["config"]], r.get("run_index") or 0))


def config_result(runs: list[dict], name: str) -> dict:
    """One configuration of a tree campaign: its first run's structure with the per-path statistics
    as medians over its mpiruns."""
    same = [r for r in runs if r["config"] == name]
    a = same[0]
    ovs = [r["overhead"].get("overhead_pct") for r in same if r["overhead"].get("overhead_pct") is not None]
    paths = []
    for row in a["paths"]:
        vals = {k: float(np.median([next(p[k] for p in r["paths"] if p["rank"] == row["rank"]) for r in same]))
                for k in ("arrival_wait_s", "departure_wait_s", "down_latency_s", "up_latency_s")}
        paths.append({"path": row["path"], "ranks": row["ranks"], **vals})
    imb = a["imbalance"]
    return {"config": a["config"], "tree": a["spec"], "nprocs": a["nprocs"], "mpiruns": len(same),
            "overhead_pct": float(np.median(ovs)) if ovs else None,
            "call_median_s": float(np.median([r["call_median_s"] for r in same])),
            "paths": paths,
            "imbalance": None if imb is None else {k: imb[k] for k in ("culprit_rank", "culprit_host", "evidence_s",
                                                                         "share", "excess_work_s", "imbalanced", "path")},
            "groups": a["groups"], "subtrees": a["subtrees"], "nodes": a["nodes"], "links": a["links"],
            "slow_hosts": a.get("slow_hosts", []), "slow_links": a.get("slow_links", [])}


def json_result(runs: list[dict], comparison: list[dict] | None = None, tuning: dict | None = None) -> dict:
    """The --json contract: the first configuration's overhead_pct, paths, imbalance, groups, subtrees,
    nodes and links at the top level; ``configs``: the same for every tree configuration, in the order
    given; comparison rows when two configurations were given, tuning with more."""
    a = next((r for r in runs if not r["mpi"]), runs[0])
    out = config_result(runs, a["config"])
    out["oversubscribed"] = any(r["oversubscribed"] for r in runs)
    sims = [r["simulated"] for r in runs if r.get("simulated")]
    if sims:
        out["simulated"] = sims[0]
    out["configs"] = [config_result(runs, c) for c in dict.fromkeys(r["config"] for r in runs if not r["mpi"])]
    if comparison is not None:
        out["comparison"] = comparison
    if tuning is not None:
        out["tuning"] = tuning
    return out


def most_changed_path(comparison: list[dict]) -> dict | None:
    """The comparison row whose path time changed most (largest |B - A|), None without rows."""
    rows = [c for c in comparison or [] if c.get("a_s") is not None and c.get("b_s") is not None]
    return max(rows, key=lambda c: abs(c["b_s"] - c["a_s"])) if rows else None


def compare_configs(runs: list[dict], a_name: str, b_name: str) -> list[dict]:
    """Per path: median over mpiruns of the per-run mean path time without arrival waits, A vs B,
    with a Mann-Whitney p-value over the mpiruns when both have at least 2."""

    A = [r for r in runs if r["config"] == a_name]
    B = [r for r in runs if r["config"] == b_name]
    rows = []
    for row in st.compare_paths(A[0]["paths"], B[0]["paths"]):
        rk = int(row["path"])
        av = [next(p["no_wait_s"] for p in r["paths"] if p["rank"] == rk) for r in A]
        bv = [next(p["no_wait_s"] for p in r["paths"] if p["rank"] == rk) for r in B]
        a_s, b_s = float(np.median(av)), float(np.median(bv))
        _, p = mann_whitney(av, bv) if len(av) >= 2 and len(bv) >= 2 else (None, None)
        rows.append({"path": row["path"], "a_path": row["a_path"], "b_path": row["b_path"], "a_s": a_s, "b_s": b_s,
                     "delta_pct": 100.0 * (b_s - a_s) / a_s if a_s else None, "p_value": p})
    return rows


def tuning(runs: list[dict], baselines=("mpi", "binomial")) -> dict:
    """The fastest configuration by the median over mpiruns of the per-run median allreduce time
    (max exit - min enter per call), compared with each baseline (Mann-Whitney over run medians)."""

    by: dict[str, list[float]] = {}
    spec: dict[str, str] = {}
    for r in runs:
        by.setdefault(r["config"], []).append(r["call_median_s"])
        spec[r["config"]] = r["spec"]
    ranking = sorted(by, key=lambda c: float(np.median(by[c])))
    table = [{"config": c, "tree": spec[c], "runs": len(by[c]), "median_s": float(np.median(by[c])),
              "min_s": float(np.min(by[c])), "max_s": float(np.max(by[c]))} for c in ranking]
    best = next((c for c in ranking if spec[c] not in baselines), ranking[0])
    vs = []
    for b in baselines:
        bc = next((c for c in by if spec[c] == b), None)
        if bc is None or bc == best:
            continue
        cmp = compare_samples(by[bc], by[best])
        vs.append({"baseline": bc, "fastest": best, "baseline_s": cmp["median_a_s"], "fastest_s": cmp["median_b_s"],
                   "delta_pct": cmp["delta_pct"], "p_value": cmp["p_value"], "stars": cmp["stars"],
                   "significant": cmp["significant"], "min_p": cmp["min_p"]})
    return {"fastest": best, "ranking": table, "vs_baselines": vs}
