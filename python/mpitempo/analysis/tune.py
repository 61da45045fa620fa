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
from mpitempo.io.tuning_files import Rule
from mpitempo.stats.compare import ALPHA, holm
from mpitempo.stats.gain import gain_ci

DEFAULT = "default"


@dataclass
class Decision:
    rows: list[dict]                       # one per (op, msize, nprocs): default, chosen, gain, CI, p
    candidates: list[dict]                 # every algorithm vs default per group
    notes: list[str] = field(default_factory=list)


def _split(config: str) -> tuple[str, str]:
    op, _, alg = config.partition(".")
    return op, alg


def decide(data: CampaignData, min_gain_pct: float = 5.0, alpha: float = ALPHA, failed: dict | None = None,
           seed: int = 1) -> Decision:
    from mpitempo.stats.outliers import Filter

    filt = Filter()
    # oversubscribed process counts are tuned for function only: cmd_tune marks every such row
    cmp = compare(data, by="config", alternative="two-sided", base=DEFAULT, filt=filt, alpha=alpha,
                  allow_oversubscribed=True)
    arr = sample_arrays(data, filt)
    samples: dict[tuple, list[float]] = {}
    for cfg, op, msize, nprocs, med in zip(arr["config"], arr["op"], arr["msize"], arr["nprocs"], arr["med"]):
        if med is not None and med == med:
            samples.setdefault((str(cfg), str(op), int(msize), int(nprocs)), []).append(float(med))

    groups: dict[tuple, list[dict]] = {}
    for r in cmp.rows:
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
        if best is None:
            if fastest is not None and fastest["median_s"] < (med_def or 0):
                row["why_default"] = (f"fastest other: {fastest['algorithm']} "
                                      f"{fastest['gain_pct']:+.1f}% (Holm p={fastest['p_holm']:.3g})"
                                      if fastest["p_holm"] is not None else f"fastest other: {fastest['algorithm']}")
            else:
                row["why_default"] = "no algorithm faster than the default"
        rows.append(row)
    # the comparison's own notes, without those that the design of a tune campaign makes expected (an
    # algorithm's configuration measures its op only) or that the per-size Holm adjustment answers
    notes = [n for n in dict.fromkeys(cmp.notes) if not n.startswith("only in ") and "--holm" not in n]
    notes.append("p-values are Holm-adjusted over the algorithms tried at each (op, size, np)")
    for cfg, why in sorted((failed or {}).items()):
        notes.append(f"{cfg}: not measured: {why}")
    return Decision(rows, cands, notes)


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
                out.append(Rule(op, np_, r["msize"], alg, (ids or {}).get((op, alg)) if alg else None))
                prev = alg
    return out


def mpich_one_per_op(rows: list[dict], cands: list[dict]) -> tuple[list[dict], list[str]]:
    """MPICH selects one algorithm per op for all sizes: where the per-size choices differ, keep the
    algorithm chosen at the most sizes if it is significantly slower than the default at none of the
    measured sizes (else the default), and say what that gives up."""
    notes = []
    out = [dict(r) for r in rows]
    by: dict[tuple, list[dict]] = {}
    for r in out:
        by.setdefault((r["op"], r["nprocs"]), []).append(r)
    for (op, np_), lst in by.items():
        chosen = {r["chosen"] for r in lst}
        if len(chosen) <= 1:
            continue
        counts = {}
        for r in lst:
            if r["chosen"] != DEFAULT:
                counts[r["chosen"]] = counts.get(r["chosen"], 0) + 1
        pick = None
        for alg in sorted(counts, key=lambda a: -counts[a]):
            slower = [c for c in cands if c["op"] == op and c["nprocs"] == np_ and c["algorithm"] == alg and c["slower"]]
            if not slower:
                pick = alg
                break
        for r in lst:
            if r["chosen"] != (pick or DEFAULT):
                c = next((c for c in cands if (c["op"], c["msize"], c["nprocs"], c["algorithm"])
                          == (op, r["msize"], np_, pick)), None) if pick else None
                notes.append(f"{op} np={np_} {r['msize']} B: {r['chosen']} was fastest, but MPICH takes one "
                             f"algorithm for all sizes: {pick or DEFAULT} is used")
                r["chosen_per_size"] = r["chosen"]
                r["chosen"] = pick or DEFAULT
                if c:
                    r.update({k: c[k] for k in ("gain_pct", "gain_ci_lo_pct", "gain_ci_hi_pct")})
                    r["p_value"], r["median_chosen_s"] = c["p_holm"], c["median_s"]
                else:
                    r.update({"gain_pct": 0.0, "gain_ci_lo_pct": None, "gain_ci_hi_pct": None, "p_value": None,
                              "median_chosen_s": r["median_default_s"]})
    return out, notes
