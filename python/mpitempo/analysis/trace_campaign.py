"""`mpitempo trace DIR` on a trace campaign (`trace run --mpiruns N`): the result of every
complete run (analysis.trace.summarise on runs/<id>/) and the view across the mpiruns: per wait
pattern and per call site, the median, minimum and maximum over the runs of the run's total
wait, and how many runs it occurred in (a run in which a pattern did not occur counts as 0).
Failed and incomplete runs are listed, never used."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpitempo.errors import MtError


def _spread(values: list[float]) -> dict:
    a = np.asarray(values, dtype=float)
    return {"median_s": float(np.median(a)), "min_s": float(a.min()), "max_s": float(a.max()),
            "q1_s": float(np.percentile(a, 25)), "q3_s": float(np.percentile(a, 75)), "runs": int(a.size),
            "runs_with": int(np.count_nonzero(a)), "per_run_s": [float(x) for x in a]}


def summarise_campaign(d: str | Path, call: str | None = None, rng: str | None = None) -> dict:
    from mpitempo import kinds
    from mpitempo.analysis.trace import summarise
    from mpitempo.io.rundir import check_root, find_runs
    from mpitempo.stats.waitstates import PATTERNS

    d = Path(d)
    check_root(d)
    kind = kinds.of_campaign(d)
    if kind.name != "trace":
        raise MtError(f"'{d}' is a campaign of kind '{kind.name}', not a trace campaign (see mpitempo summary {d})")
    complete, failed, incomplete = find_runs(d, kind)
    if not complete:
        raise MtError(f"trace campaign '{d}' has no complete run ({len(failed)} failed, {len(incomplete)} "
                      f"incomplete; rerun them with: mpitempo trace run --resume {d})")
    runs = []
    for rd in complete:
        res, _ev, _chosen = summarise(rd, call, rng)
        res["run_id"] = rd.name
        runs.append(res)
    across: dict = {}
    sites: dict = {}
    for p in PATTERNS:
        tot = [r["wait_states"][p]["total_s"] for r in runs]
        if not any(tot):
            continue
        across[p] = _spread(tot)
        labels = sorted({s for r in runs for s in r["wait_states"][p].get("per_site", {})})
        for s in labels:
            vals = [r["wait_states"][p].get("per_site", {}).get(s, {}).get("total_s", 0.0) for r in runs]
            call_of = next(r["wait_states"][p]["per_site"][s]["call"] for r in runs
                           if s in r["wait_states"][p].get("per_site", {}))
            sites.setdefault(p, {})[s] = dict(_spread(vals), call=call_of)
    for p in sites:
        sites[p] = dict(sorted(sites[p].items(), key=lambda kv: -kv[1]["median_s"]))
    viol = [r["violations_global"] for r in runs]
    return {
        "dir": str(d), "campaign": True, "kind": "trace",
        "runs_complete": len(runs), "runs_failed": len(failed), "runs_incomplete": len(incomplete),
        "runs_partial_trace": [r["run_id"] for r in runs if not r.get("complete", True)],
        "failed": [{"run_id": f.get("run_id"), "status": f.get("status"), "reason": f.get("reason")} for f in failed],
        "incomplete": incomplete,
        "oversubscribed": any(r["oversubscribed"] for r in runs),
        "violations_global_total": int(sum(viol)),
        "wait_states_across_runs": across,
        "wait_states_per_site_across_runs": sites,
        "runs": runs,
    }
