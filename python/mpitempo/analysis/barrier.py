"""The barrier study (Hoefler et al. 2005) from a barrier campaign and a LogP campaign:
measured medians over mpiruns with their confidence interval, LogP predictions, the
optimal combining-tree arity, and the choice of the fastest algorithm with the
comparison test deciding ties. Reading files here; the statistics and the model are
pure functions in stats/."""
from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpitempo.errors import MtError
from mpitempo.stats import logp as model
from mpitempo.stats.compare import ALPHA, compare_samples
from mpitempo.stats.describe import median_ci
from mpitempo.analysis import routes as rts
from mpitempo.analysis.summary import summary_rows
from mpitempo.io.safeload import load_json
from mpitempo.kinds.logp import load_logp
from mpitempo.stats import logp_sched
from mpitempo.stats.outliers import Filter

LOGP_KEYS = ("L_s", "o_s_s", "o_r_s", "g_s")
NATIVE_CONFIG = "native-"   # configuration of the barrier campaign measuring a native algorithm


def row_name(config: str, op: str) -> str:
    """The algorithm name of a row: the op, or 'native:<name>' for MPI_Barrier in configuration
    'native-<name>' (the library forced to its algorithm <name>)."""
    if config.startswith(NATIVE_CONFIG) and op == model.NATIVE:
        return model.NATIVE_PREFIX + config[len(NATIVE_CONFIG):]
    return op


def run_medians(run_dirs: list[Path]) -> dict[tuple[str, int], list[float]]:
    """(algorithm, nprocs) -> the median of the valid measurements of every complete run
    (algorithm: row_name of the run's configuration and the op)."""
    out: dict[tuple[str, int], list[float]] = defaultdict(list)
    for d in run_dirs:
        vals: dict[tuple[str, int], list[float]] = defaultdict(list)
        from mpitempo.io.rundir import load_meta

        config = str(load_meta(d / "meta.json").get("config", "default"))
        with open(d / "measurements.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row["valid"] == "1":
                    vals[(row_name(config, row["op"]), int(row["nprocs"]))].append(float(row["runtime_s"]))
        for k, v in vals.items():
            out[k].append(float(np.median(v)))
    return dict(out)


def study_flags(root: Path) -> dict[tuple[str, int], list[str]]:
    """(algorithm, nprocs) -> the result flags of `mpitempo summary` for that row of the barrier
    campaign (oversubscribed, shared_cpu, outlier_runs, multimodal, core_latency, ...: analysis.flags),
    so that the study's table shows what the summary would warn about."""
    from mpitempo.analysis.store import open_campaigns

    data = open_campaigns([root])
    out: dict[tuple[str, int], list[str]] = {}
    for r in summary_rows(data, Filter()):
        out[(row_name(str(r["config"]), r["op"]), int(r["nprocs"]))] = list(r.get("flags") or [])
    return out


def logp_params(rows: list[dict]) -> dict:
    """The contract's `logp` object from the per-run `logp` objects: medians over mpiruns, and
    `_iqr` = the interquartile range over mpiruns (with one mpirun: that run's IQR over its
    timings). ValueError when the parameters fail the sanity checks."""
    if not rows:
        raise MtError("no complete LogP run")
    out: dict = {}
    for k in LOGP_KEYS + ("rtt_s",):
        v = np.array([float(r[k]) for r in rows if r.get(k) is not None])
        out[k] = float(np.median(v))
        base = k[:-2]
        if len(rows) >= 2:
            out[f"{base}_iqr_s"] = float(np.percentile(v, 75) - np.percentile(v, 25))
        else:
            within = rows[0].get(f"{base}_iqr_s")
            out[f"{base}_iqr_s"] = float(within) if within is not None else None
    gs = [r.get("G_s_per_byte") for r in rows if r.get("G_s_per_byte") is not None]
    out["G_s_per_byte"] = float(np.median(gs)) if gs else None
    out["mpiruns"] = len(rows)
    out["nprocs"] = rows[0].get("nprocs")
    # mpiruns whose own check failed are kept (their timings are not wrong, L is about 0 in shared
    # memory and its sign varies between mpiruns); the medians over mpiruns are checked, with the
    # spread over the mpiruns as the noise allowed
    out["run_problems"] = [{"run_id": r.get("run_id"), "problem": r["sanity_problem"]}
                           for r in rows if r.get("sanity_problem")]
    many = len(rows) >= 2
    try:
        model.check(to_model(out), out.get("rtt_s"), L_spread=out["L_iqr_s"] if many else 0.0,
                    g_spread=out["g_iqr_s"] if many else 0.0)
    except ValueError as e:
        bad = f", {len(out['run_problems'])} of them failed it on their own" if out["run_problems"] else ""
        raise MtError(f"{e} (medians over {len(rows)} mpirun(s){bad})") from None
    return out


def to_model(lp: dict) -> model.LogP:
    return model.LogP(L=lp["L_s"], o_s=lp["o_s_s"], o_r=lp["o_r_s"], g=lp["g_s"])


def extended_model(lp: dict, platform: str | None = None, ppn: int | None = None, start_cost: float = 0.0) -> dict:
    """The extended model's set-up (stats/logp_sched.py): per-pair L from the platform's routes
    (analysis/routes.py) when the study ran on a simulated platform whose topology is derived there,
    else one L; `start_cost` (s) added to every message sent before its sender received anything.
    The routes are referred to those of the pairs LogP was measured on (rank 0 with every other of
    the LogP campaign's ranks)."""
    import xml.etree.ElementTree as ET

    n = int(lp.get("nprocs") or 2)
    info = {"start_cost_s": start_cost, "routes": None, "route_ref_s": None, "latency": None}
    rt = None
    if platform:
        try:
            rt = rts.routes(platform, ppn)
        except (OSError, ValueError, ET.ParseError) as e:
            info["routes_note"] = f"routes not derived from {platform}: {e}"
            rt = None
        if rt is None and "routes_note" not in info:
            info["routes_note"] = ("the platform is not one <cluster> of topology flat, FAT_TREE or TORUS: "
                                   "one L for every pair")
    if rt is not None:
        lat, ref = rts.pair_latency(rt, lp["L_s"], [(0, j) for j in range(1, n)])
        info.update(routes=rt.topology, route_ref_s=ref, latency=lat,
                    link_lat_s=rt.lat, loopback_lat_s=rt.loopback_lat)
    return info


def results(meds: dict, lp: dict, cores: int | None = None, tolerance: float = 0.30,
            flags: dict | None = None, ext: dict | None = None) -> list[dict]:
    """The contract's `results` rows, ordered by algorithm and nprocs; `flags` those of study_flags;
    `ext` the extended model's set-up (extended_model): rows get `predicted_ext_s` and `ratio_ext`."""

    m = to_model(lp)
    ext = ext if ext is not None else extended_model(lp)
    cores = cores or os.cpu_count() or 1
    rows = []
    for (op, p), v in sorted(meds.items()):
        med = float(np.median(v))
        ci = median_ci(v)
        same = model.native_ours(op)        # a native row is predicted as our op of the same algorithm
        if op.startswith(model.NATIVE_PREFIX) and same is None:
            pred, note = None, None
        else:
            pred = model.predict(same or op, p, m)
            note = model.explain(same or op, p, m, med, tolerance)
        pext = logp_sched.simulate(same or op, p, m, ext.get("latency"), ext.get("start_cost_s") or 0.0) \
            if not (op.startswith(model.NATIVE_PREFIX) and same is None) else None
        if note and pext:
            note += f"; the extended model (docs/barrier.md) predicts {pext * 1e6:.3f} us ({med / pext:.2f}x)"
        fl = set((flags or {}).get((op, p), []))
        over = p > cores and "simulated" not in fl   # simulated ranks run on the platform's cores, not this host's
        rows.append({"algorithm": op, "nprocs": p, "mpiruns": len(v), "median_s": med,
                     "ci_lo_s": ci["lo_s"], "ci_hi_s": ci["hi_s"], "ci_need_runs": ci["need_runs"],
                     "predicted_s": pred, "ratio": (med / pred) if pred else None,
                     "predicted_ext_s": pext, "ratio_ext": (med / pext) if pext else None,
                     "within_tolerance": (abs(med / pred - 1) <= tolerance) if pred else None,
                     "note": note, "implements": same, "oversubscribed": over,
                     "flags": sorted(fl | ({"oversubscribed"} if over else set()))})
    return rows


def versus_native(meds: dict, settings: dict | None = None, alpha: float = ALPHA) -> list[dict]:
    """Ours vs the library's implementation of the same algorithm, per P: every native row
    'native:<name>' against our op it implements (model.NATIVE_SAME), Mann-Whitney U on the run
    medians; delta_pct is the native's median relative to ours."""
    out = []
    for (name, p), v in sorted(meds.items()):
        ours = model.native_ours(name)
        if ours is None or (ours, p) not in meds:
            continue
        c = compare_samples(meds[(ours, p)], v, alpha=alpha)
        if c["p_value"] is None or (not c["significant"] and c["min_p"] is not None and c["min_p"] > alpha):
            verdict = f"{len(v)} mpirun(s) cannot show a difference at alpha {alpha}: use more --mpiruns"
        elif not c["significant"]:
            verdict = "no significant difference"
        else:
            verdict = f"the library's is {'faster' if c['median_b_s'] < c['median_a_s'] else 'slower'}"
        out.append({"algorithm": ours, "native": name, "nprocs": p, "setting": (settings or {}).get(name),
                    "median_s": c["median_a_s"], "native_median_s": c["median_b_s"], "delta_pct": c["delta_pct"],
                    "p_value": c["p_value"], "min_p": c["min_p"], "significant": c["significant"],
                    "verdict": verdict})
    return out


def choose(meds: dict, nprocs: int, alpha: float = ALPHA, settings: dict | None = None) -> dict:
    """The fastest algorithm on nprocs by the median of run medians; every other algorithm is
    compared with it (Mann-Whitney U on the run medians): those with no significant difference
    are ties, and "no significant difference" is then the answer. A native row can be the choice:
    its setting is then settings[row] (the environment that selects it)."""
    cands = {op: v for (op, p), v in meds.items() if p == nprocs}
    if not cands:
        raise MtError(f"no measurements on {nprocs} processes to choose from")
    best = min(cands, key=lambda op: (float(np.median(cands[op])), op))
    ties, tests = [], []
    for op, v in sorted(cands.items()):
        if op == best:
            continue
        c = compare_samples(cands[best], v, alpha=alpha)
        tests.append({"algorithm": op, "delta_pct": c["delta_pct"], "p_value": c["p_value"],
                      "significant": c["significant"], "min_p": c["min_p"]})
        if not c["significant"]:
            ties.append(op)
    if best.startswith(model.NATIVE_PREFIX):
        native = f"the library's {best[len(model.NATIVE_PREFIX):]} barrier (measured)"
        setting = (settings or {}).get(best, "see the configuration in campaign.toml")
    else:
        native, setting = model.native_for(best)
    if not tests:
        verdict = f"only {best} was measured on {nprocs} processes: nothing to compare"
    elif ties:
        verdict = (f"no significant difference between {best} and {', '.join(ties)} "
                   f"(Mann-Whitney U on run medians, alpha {alpha})")
        if tests and all(t["min_p"] > alpha for t in tests):
            verdict += f"; {len(cands[best])} mpirun(s) cannot show a difference at this alpha: use more --mpiruns"
    else:
        verdict = f"{best} is significantly faster than every other algorithm (alpha {alpha})"
    return {"algorithm": best, "nprocs": nprocs, "native": native, "native_setting": setting,
            "median_s": float(np.median(cands[best])), "tied_with": ties, "significant": bool(tests) and not ties,
            "verdict": verdict, "tests": tests}


def arity(meds: dict, nprocs: int, lp: dict) -> dict:
    """The optimal combining-tree arity: by the model, and among the measured arities."""
    best, pred = model.optimal_arity(nprocs, to_model(lp), range(2, max(2, min(16, nprocs)) + 1))
    measured = {}
    for (op, p), v in meds.items():
        if p == nprocs and op.startswith("barrier:combining:"):
            measured[int(op.rsplit(":", 1)[1])] = float(np.median(v))
    return {"nprocs": nprocs, "predicted_best": best, "predicted_s": pred,
            "measured_best": min(measured, key=measured.get) if measured else None, "measured_s": measured}


def load_logp_rows(run_dirs: list[Path]) -> list[dict]:
    return load_logp(run_dirs)


def read_summary(path: Path) -> dict:
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise MtError(f"'{path}' is not a JSON object (expected a barrier study summary)")
    return doc


def choice_by_p(meds: dict, rows: list[dict]) -> list[dict]:
    """Per P: the algorithm with the least measured median, and the ones the closed formulas and the
    extended model predict fastest (among the measured algorithms with a model), with the measured
    median of the predicted choice relative to the measured best (`loss_pct`: what following the
    model would cost)."""
    out = []
    for p in sorted({r["nprocs"] for r in rows}):
        rs = [r for r in rows if r["nprocs"] == p]
        best = min(rs, key=lambda r: (r["median_s"], r["algorithm"]))
        rec = {"nprocs": p, "measured_best": best["algorithm"], "measured_s": best["median_s"]}
        for key, col in (("predicted_best", "predicted_s"), ("predicted_ext_best", "predicted_ext_s")):
            cand = [r for r in rs if r[col] is not None]
            if not cand:
                rec[key], rec[key + "_loss_pct"] = None, None
                continue
            pick = min(cand, key=lambda r: (r[col], r["algorithm"]))
            rec[key] = pick["algorithm"]
            rec[key + "_loss_pct"] = 100.0 * (pick["median_s"] / best["median_s"] - 1)
        out.append(rec)
    return out
