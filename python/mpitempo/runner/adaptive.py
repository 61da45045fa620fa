"""Adaptive mpiruns (docs/methods.md, "Adaptive repetitions"): after the campaign's first `mpiruns`,
more rounds of mpiruns for the configurations that have a row whose interval of the median of the
run medians is wider than the precision, at the looks of analysis.adaptive.run_looks, up to
max_mpiruns, and while the budget allows. The decisions are recorded in adaptive.json (looks, level,
each round: the configurations that needed it and why, what stopped the campaign)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from mpitempo.analysis.adaptive import RECORD, looks_level, rel_half_width, run_looks
from mpitempo.io import safefs
from mpitempo.io.params import percent_value
from mpitempo.runner.plan import PlannedRun


def wide_configs(c, outdir: Path, level: float) -> dict[str, list[str]]:
    """config name -> the rows (op size np: rel half-width) whose interval at `level` is wider than the
    configuration's precision (or that have no interval yet)."""
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.analysis.summary import per_run_table
    from mpitempo.stats.describe import median_ci
    from mpitempo.stats.outliers import Filter
    import numpy as np

    data = open_campaigns([outdir])
    try:
        per_run = per_run_table(data.con, Filter())
    finally:
        data.con.close()
    groups: dict[tuple, list[float]] = {}
    for r in per_run:
        if r.get("median_s") is not None:
            groups.setdefault((r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r["median_s"])
    prec = {cfg.name: percent_value(c.params_for(cfg).get("precision") or "off") for cfg in c.configs}
    out: dict[str, list[str]] = {}
    for (cfg, op, msize, np_), meds in sorted(groups.items(), key=lambda kv: str(kv[0])):
        m = np.asarray(meds, dtype=float)
        rel = rel_half_width(median_ci(m, level), float(np.median(m)))
        if prec.get(cfg) and (rel is None or rel > prec[cfg]):
            out.setdefault(cfg, []).append(f"{op} {msize} B np {np_}: " + ("no interval yet" if rel is None
                                                                              else f"+-{rel * 100:.2g}%"))
    return out


def write_record(outdir: Path, rec: dict) -> None:
    safefs.safe_write_text(outdir / RECORD, json.dumps(rec, indent=1) + "\n", outdir)


def more_rounds(c, outdir: Path, planned: list, run_round, progress, deadline: float | None, round_cost) -> str:
    """Add rounds of mpiruns until every row is within its precision, max_mpiruns or the deadline
    (time.monotonic()) is reached; run_round(runs) runs them (False: completed, else interrupted).
    Returns what stopped it: precision, cap, budget or interrupted. round_cost(n_runs) estimates the
    seconds of n more mpiruns."""
    looks = run_looks(c.mpiruns, c.max_mpiruns)
    level = looks_level(len(looks))
    rec = {"looks": looks, "level": level, "alpha": 1 - 0.95, "rounds": [], "stopped": None, "budget_stopped": []}
    stopped = "cap"
    for i, look in enumerate(looks[1:], 1):
        wide = wide_configs(c, outdir, level)
        if not wide:
            stopped = "precision"
            break
        names = [cfg.name for cfg in c.configs if cfg.name in wide]
        runs = []
        for idx in range(looks[i - 1], look):
            for np_ in c.np:
                for name in names:
                    suffix = f"-np{np_}" if len(c.np) > 1 else ""
                    runs.append(PlannedRun(f"{name}{suffix}-{idx:03d}", name, np_, idx))
        if deadline is not None and time.monotonic() + round_cost(len(runs)) > deadline:
            stopped = "budget"
            rec["budget_stopped"] = names
            rec["rounds"].append({"look": look, "configs": names, "run": False,
                                  "why": {n: wide[n][:5] for n in names}, "not_run": "budget"})
            break
        rec["rounds"].append({"look": look, "configs": names, "run": True, "why": {n: wide[n][:5] for n in names}})
        write_record(outdir, {**rec, "stopped": "running"})
        planned.extend(runs)
        progress.add(len(runs), f"look {i + 1} of {len(looks)}: {len(runs)} more mpirun(s) for "
                                f"{', '.join(names)} ({sum(len(wide[n]) for n in names)} row(s) wider than the "
                                f"precision at {level:.2%}); up to {c.max_mpiruns} mpiruns")
        if run_round(runs):
            stopped = "interrupted"
            break
    else:
        stopped = "cap" if wide_configs(c, outdir, level) else "precision"
    rec["stopped"] = stopped
    write_record(outdir, rec)
    return stopped
