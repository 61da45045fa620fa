"""The decision of `mpitempo tune`: per (op, message size, process count), the library's default or a
significantly faster algorithm, from a tune campaign (one configuration ``default`` running every op,
one configuration ``<op>.<algorithm>`` per forced algorithm).

Per group the per-mpirun medians (after the Tukey filter) of every algorithm are compared with those
of the default by the two-sided Mann-Whitney U test of ``analysis.comparison.compare``; the p-values of
the algorithms of one group are Holm-adjusted (several algorithms are tried against one default). An
algorithm is chosen only if its adjusted p <= alpha, it is faster, and its gain exceeds ``min_gain_pct``;
among such, the one with the largest gain. Otherwise the default stays. The sizes where the choice
changes become the boundaries of the rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mpitempo.analysis.comparison import compare, sample_arrays
from mpitempo.analysis.store import CampaignData
from mpitempo import mpilib
from mpitempo.io.tuning_files import Rule
from mpitempo.stats.compare import ALPHA, holm
from mpitempo.stats.gain import gain_ci
from mpitempo.stats.outliers import Filter

DEFAULT = "default"


@dataclass
class Decision:
    rows: list[dict]                       # one per (op, msize, nprocs): default, chosen, gain, CI, p
    candidates: list[dict]                 # every algorithm vs default per group
    notes: list[str] = field(default_factory=list)
    samples: dict = field(default_factory=dict)   # (config, op, msize, nprocs) -> per-mpirun medians


def _split(config: str) -> tuple[str, str]:
    op, _, alg = config.partition(".")
    return op, alg


def _identical(v: list[float]) -> bool:
    """Every mpirun median the same (a deterministic simulation), to the simulated clock's 10 ns read."""
    return bool(v) and max(v) - min(v) <= 1e-8 + 1e-9 * abs(max(v))


def decide(data: CampaignData, min_gain_pct: float = 5.0, alpha: float = ALPHA, failed: dict | None = None,
           seed: int = 1, deterministic: bool = False) -> Decision:
    """deterministic: the campaign ran on a simulated platform (SimGrid/SMPI), where every mpirun of a
    configuration gives the same times; where the runs of the default and of an algorithm are each
    identical (or single), a test over mpiruns has nothing to test (no dispersion), and the algorithm is
    eligible when it is faster by more than min_gain_pct (p is None). Groups whose runs differ fall back
    to the test."""

    filt = Filter()
    # oversubscribed process counts are tuned for function only: cmd_tune marks every such row
    configs = {str(c) for (c,) in data.con.execute("SELECT DISTINCT CAST(config AS VARCHAR) FROM runs").fetchall()}
    # every algorithm failed in every mpirun: nothing to compare with (compare() refuses one level); the
    # default is kept and the failures are the notes
    cmp_rows, cmp_notes = [], []
    if configs - {DEFAULT}:
        cmp = compare(data, by="config", alternative="two-sided", base=DEFAULT, filt=filt, alpha=alpha,
                      allow_oversubscribed=True)
        cmp_rows, cmp_notes = cmp.rows, cmp.notes
    arr = sample_arrays(data, filt)
    samples: dict[tuple, list[float]] = {}
    for cfg, op, msize, nprocs, med in zip(arr["config"], arr["op"], arr["msize"], arr["nprocs"], arr["med"]):
        if med is not None and med == med:
            samples.setdefault((str(cfg), str(op), int(msize), int(nprocs)), []).append(float(med))

    groups: dict[tuple, list[dict]] = {}
    for r in cmp_rows:
        op, alg = _split(r["b"])
        if op != r["op"]:
            continue
        groups.setdefault((r["op"], int(r["msize"]), int(r["nprocs"])), []).append(dict(r, algorithm=alg))
    # groups measured by the default only (every algorithm failed) still get a row
    for (cfg, op, msize, nprocs) in samples:
        if cfg == DEFAULT:
            groups.setdefault((op, msize, nprocs), [])

    rows, cands = [], []
    for key in sorted(groups, key=lambda k: (k[0], k[2], k[1])):
        op, msize, nprocs = key
        lst = groups[key]
        adj = holm([c["p_value"] for c in lst])
        a = samples.get((DEFAULT, op, msize, nprocs), [])
        for c, p in zip(lst, adj):
            b = samples.get((c["b"], op, msize, nprocs), [])
            ci = gain_ci(a, b, seed=seed)
            gain = None if c["delta_pct"] is None else -c["delta_pct"]
            cand = {"op": op, "msize": msize, "nprocs": nprocs, "algorithm": c["algorithm"],
                    "median_default_s": c["median_a_s"], "median_s": c["median_b_s"], "runs_default": c["runs_a"],
                    "runs": c["runs_b"], "gain_pct": gain, "gain_ci_lo_pct": ci[0] if ci else None,
                    "gain_ci_hi_pct": ci[1] if ci else None, "p_value": c["p_value"], "p_holm": p,
                    "min_p": c["min_p"]}
            exact = deterministic and _identical(a) and _identical(b)
            cand["deterministic"] = exact
            if exact:       # no dispersion: nothing to test, and no p-value to show
                cand["p_value"] = cand["p_holm"] = None
                cand["faster"] = bool(gain is not None and gain > 0)
                cand["slower"] = bool(gain is not None and gain < 0)
            else:
                cand["faster"] = bool(p is not None and p <= alpha and gain is not None and gain > 0)
                cand["slower"] = bool(p is not None and p <= alpha and gain is not None and gain < 0)
            cand["eligible"] = cand["faster"] and gain > min_gain_pct
            cands.append(cand)
        mine = [c for c in cands if (c["op"], c["msize"], c["nprocs"]) == key]
        elig = [c for c in mine if c["eligible"]]
        best = max(elig, key=lambda c: c["gain_pct"]) if elig else None
        fastest = min((c for c in mine if c["median_s"] is not None), key=lambda c: c["median_s"], default=None)
        med_def = mine[0]["median_default_s"] if mine else (float(np.median(a)) if a else None)
        row = {"op": op, "msize": msize, "nprocs": nprocs, "default": DEFAULT,
               "chosen": best["algorithm"] if best else DEFAULT,
               "median_default_s": med_def, "median_chosen_s": best["median_s"] if best else med_def,
               "runs_default": len(a),
               "gain_pct": best["gain_pct"] if best else 0.0,
               "gain_ci_lo_pct": best["gain_ci_lo_pct"] if best else None,
               "gain_ci_hi_pct": best["gain_ci_hi_pct"] if best else None,
               "p_value": best["p_holm"] if best else None,
               "algorithms_tried": len(mine)}
        if best is None and fastest is not None:
            # the default is kept: the row still names the best alternative (the fastest other
            # algorithm) with its gain, bootstrap CI and Holm-adjusted p, so that "kept" can be judged
            row["alternative"] = {k: fastest[k] for k in ("algorithm", "gain_pct", "gain_ci_lo_pct",
                                                            "gain_ci_hi_pct", "p_holm", "median_s")}
        if best is None:
            if fastest is not None and fastest["median_s"] < (med_def or 0):
                row["why_default"] = (f"fastest other: {fastest['algorithm']} "
                                      f"{fastest['gain_pct']:+.1f}% (Holm p={fastest['p_holm']:.3g})"
                                      if fastest["p_holm"] is not None else
                                      f"fastest other: {fastest['algorithm']} {fastest['gain_pct']:+.1f}%"
                                      if fastest.get("deterministic") and fastest["gain_pct"] is not None
                                      else f"fastest other: {fastest['algorithm']}")
            else:
                row["why_default"] = "no algorithm faster than the default"
        rows.append(row)
    # the comparison's own notes, without those that the design of a tune campaign makes expected (an
    # algorithm's configuration measures its op only) or that the per-size Holm adjustment answers
    notes = [n for n in dict.fromkeys(cmp_notes) if not n.startswith("only in ") and "--holm" not in n]
    if deterministic:
        notes.append("SIMULATED platform: every mpirun of a configuration gives the same times (no dispersion), "
                     f"so an algorithm is chosen when it is faster than the default by more than {min_gain_pct:g}% "
                     "(no test, p shown as -); a group whose mpiruns differ is tested as on hardware")
    else:
        notes.append("p-values are Holm-adjusted over the algorithms tried at each (op, size, np)")
    for cfg, why in sorted((failed or {}).items()):
        notes.append(f"{cfg}: not measured: {why}")
    return Decision(rows, cands, notes, samples)


def rules_from(rows: list[dict], ids: dict[tuple[str, str], int] | None = None) -> list[Rule]:
    """Per (op, nprocs), one rule per measured size in size order, collapsed where the choice stays the same:
    a rule holds from the first measured size of its algorithm up to the next boundary."""
    out: list[Rule] = []
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["op"], r["nprocs"]), []).append(r)
    for (op, np_), lst in sorted(by.items()):
        prev = object()
        for r in sorted(lst, key=lambda r: r["msize"]):
            alg = None if r["chosen"] == DEFAULT else r["chosen"]
            if alg != prev:
                out.append(Rule(op, np_, r["msize"], alg, (ids or {}).get((op, alg)) if alg else None,
                                source="predicted" if r.get("predicted") else "measured"))
                prev = alg
    return out


def mpich_mpir_level(rows: list[dict], cands: list[dict]) -> tuple[list[dict], list[str]]:
    """MPICH: an op tuned through the selection file runs at MPICH's MPIR level at every size and process
    count (``MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0`` holds per op), so the library's default (the device's own
    algorithm) is no longer available there. Where the default was kept at some size of an op that is
    tuned elsewhere, the fastest measured MPIR algorithm that is significantly slower than the default
    nowhere at that size fills in; if some size has none, the op keeps the default everywhere (its per-size
    winners are shown as ``chosen_per_size``) and a note says what that gives up."""
    out = [dict(r) for r in rows]
    notes: list[str] = []
    by_op: dict[str, list[dict]] = {}
    for r in out:
        by_op.setdefault(r["op"], []).append(r)
    for op, lst in sorted(by_op.items()):
        if all(r["chosen"] == DEFAULT for r in lst):
            continue
        fills = {}
        for r in lst:
            if r["chosen"] != DEFAULT:
                continue
            here = [c for c in cands if (c["op"], c["msize"], c["nprocs"]) == (op, r["msize"], r["nprocs"])
                    and c["median_s"] is not None and not c["slower"]]
            best = min(here, key=lambda c: c["median_s"], default=None)
            fills[(r["msize"], r["nprocs"])] = best
        if any(b is None for b in fills.values()):
            bad = next(k for k, b in fills.items() if b is None)
            for r in lst:
                if r["chosen"] != DEFAULT:
                    r["chosen_per_size"] = r["chosen"]
                    r["alternative"] = {"algorithm": r["chosen"], "gain_pct": r.get("gain_pct"),
                                        "gain_ci_lo_pct": r.get("gain_ci_lo_pct"), "gain_ci_hi_pct": r.get("gain_ci_hi_pct"),
                                        "p_holm": r.get("p_value"), "median_s": r.get("median_chosen_s")}
                    r.update({"chosen": DEFAULT, "gain_pct": 0.0, "gain_ci_lo_pct": None, "gain_ci_hi_pct": None,
                              "p_value": None, "median_chosen_s": r["median_default_s"]})
            notes.append(f"{op}: the default is kept at every size: tuning it means running it at MPICH's MPIR "
                         f"level at every size, and at {bad[0]} B on {bad[1]} ranks every MPIR algorithm is "
                         "significantly slower than the library's default")
            continue
        for r in lst:
            c = fills.get((r["msize"], r["nprocs"]))
            if c is None:
                continue
            r.update({"chosen": c["algorithm"], "gain_pct": c["gain_pct"], "gain_ci_lo_pct": c["gain_ci_lo_pct"],
                      "gain_ci_hi_pct": c["gain_ci_hi_pct"], "p_value": c["p_holm"], "median_chosen_s": c["median_s"],
                      "mpir_fill": True})
            r.pop("alternative", None)
            notes.append(f"{op} np={r['nprocs']} {r['msize']} B: the default was kept here, but {op} is tuned at "
                         f"other sizes and so runs at MPICH's MPIR level: {c['algorithm']} (the fastest MPIR "
                         f"algorithm measured here: {c['gain_pct']:+.1f}% vs the default, not significantly slower)")
    return out, notes


def rule_gains(rows: list[dict], samples: dict[tuple, list[float]], seed: int = 1, n_boot: int = 2000) -> list[dict]:
    """--verify per rule: the measured sizes of one (op, nprocs) where the configuration selects the same
    algorithm (consecutive in size order) form a rule. Its gain is 100 x (1 - exp(mean over its sizes of
    log(median tuned / median default))) on the medians of the mpirun medians; the 95% CI is a percentile
    bootstrap that resamples the mpiruns of each side at every size. ``confirmed``: every size of the rule
    passed the one-sided test."""
    rng = np.random.default_rng(seed)
    out = []
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["op"], r["nprocs"]), []).append(r)
    for (op, np_), lst in sorted(by.items()):
        groups: list[list[dict]] = []
        for r in sorted(lst, key=lambda r: r["msize"]):
            if groups and groups[-1][-1]["chosen"] == r["chosen"]:
                groups[-1].append(r)
            else:
                groups.append([r])
        for g in groups:
            pairs = [(np.asarray(samples.get(("default", op, r["msize"], np_), [])),
                      np.asarray(samples.get(("tuned", op, r["msize"], np_), []))) for r in g]
            pairs = [(a, b) for a, b in pairs if len(a) and len(b)]
            rec = {"op": op, "nprocs": np_, "algorithm": g[0]["chosen"], "msizes": [r["msize"] for r in g],
                   "gain_pct": None, "gain_ci_lo_pct": None, "gain_ci_hi_pct": None,
                   "confirmed": all(r.get("confirmed") for r in g)}
            if pairs:
                point = np.mean([np.log(np.median(b) / np.median(a)) for a, b in pairs])
                rec["gain_pct"] = float(100 * (1 - np.exp(point)))
                if all(len(a) >= 3 and len(b) >= 3 for a, b in pairs):
                    boots = np.zeros(n_boot)
                    for a, b in pairs:
                        ia = rng.integers(0, len(a), (n_boot, len(a)))
                        ib = rng.integers(0, len(b), (n_boot, len(b)))
                        boots += np.log(np.median(b[ib], axis=1) / np.median(a[ia], axis=1))
                    boots /= len(pairs)
                    lo, hi = np.percentile(boots, [2.5, 97.5])
                    rec["gain_ci_lo_pct"], rec["gain_ci_hi_pct"] = float(100 * (1 - np.exp(hi))), \
                        float(100 * (1 - np.exp(lo)))
            out.append(rec)
    return out


def predicted_rows(samples: dict, rows: list[dict], sizes: list[int], flavour: str) -> list[dict]:
    """Rows for message sizes that were not measured: per (op, nprocs), the algorithm the local a + b m
    models predict to be fastest (analysis.predict). Marked ``predicted``; no p-value. MPICH: an op that
    runs at the MPIR level (tuned at a measured size) chooses among MPIR algorithms only, an op kept at the
    device level keeps the default (a prediction alone does not move an op to the MPIR level)."""
    from mpitempo.analysis.predict import curves_from, predict

    out = []
    for op, np_ in sorted({(r["op"], r["nprocs"]) for r in rows}):
        if op == "barrier":
            continue
        mine = [r for r in rows if (r["op"], r["nprocs"]) == (op, np_)]
        measured = {r["msize"] for r in mine}
        cur = curves_from(samples, op, np_)
        level = mpilib.of(flavour).mpir_level()   # MPICH: an op tuned anywhere runs at the MPIR level everywhere
        mpir = level and any(r["chosen"] != DEFAULT for r in rows if r["op"] == op)
        for m in sizes:
            if m in measured:
                continue
            p = predict(cur, m)
            if level:
                p = {a: t for a, t in p.items() if (a != DEFAULT) == mpir}
            if not p:
                continue
            alg = min(p, key=p.get)
            d = p.get(DEFAULT) or predict(cur, m).get(DEFAULT)
            out.append({"op": op, "msize": m, "nprocs": np_, "default": DEFAULT, "chosen": alg, "predicted": True,
                        "gain_pct": (100 * (d - p[alg]) / d) if d else None, "gain_ci_lo_pct": None,
                        "gain_ci_hi_pct": None, "p_value": None, "median_default_s": d, "median_chosen_s": p[alg],
                        "why_default": "predicted, not measured" if alg == DEFAULT else None})
    return out
