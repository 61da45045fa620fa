"""Series and change points of a history (docs/history.md).

A series is one (machine, config, op, msize, nprocs); its entries are the campaigns that measured it, in
the order of their start. Each entry contributes its per-mpirun medians; the runs whose number is flagged
(store.run_flags: oversubscribed, shared CPU, simulated, clock sync off, >= 3x off its siblings) are shown
but left out of the detection, so a loaded night cannot make a change point by itself. Change points come
from E-divisive means on log(run median) with whole entries as the permuted blocks (history.edivisive).

Each change reports: the last entry before it and the first after (dates), the size in % (ratio of the
medians of the run medians of the segments on either side, minus 1; > 0: slower), its 95% CI (bootstrap
over entries, percentile), the permutation p-value, and the factors that differ between those two entries.
"""
from __future__ import annotations

import numpy as np

from mpitempo.history.edivisive import e_divisive

SERIES_KEY = ("machine", "config", "op", "msize", "nprocs")
BOOTSTRAP = 1000
# factors whose change is a fact about the entry, not about the machine or its software
_NOT_FACTORS = {"flags"}


def build_series(entries: list[dict], points: list[dict]) -> list[dict]:
    """[{key fields..., entries: [{digest, name, started_at, factors, medians, flags, median_s, lo_s, hi_s,
    used}]}] per series, entries oldest first."""
    from mpitempo.stats.describe import median_ci

    by_digest = {e["digest"]: e for e in entries}
    groups: dict[tuple, dict[str, list[dict]]] = {}
    for p in points:
        key = tuple(p[k] for k in SERIES_KEY)
        groups.setdefault(key, {}).setdefault(p["digest"], []).append(p)
    out = []
    for key in sorted(groups, key=lambda k: tuple(str(x) if isinstance(x, str) else f"{x:020d}" for x in k)):
        ents = []
        for dig, ps in groups[key].items():
            e = by_digest.get(dig)
            if e is None:
                continue
            meds = [float(p["median_s"]) for p in ps]
            flags = [p["flags"] or "" for p in ps]
            ok = [m for m, f in zip(meds, flags) if not f]
            ci = median_ci(ok) if ok else {"lo_s": None, "hi_s": None}
            cover = ci.get("coverage")
            if ok and ci["lo_s"] is None:   # too few runs for 95%: min..max, with its coverage 1 - 2^(1-n)
                ci = {"lo_s": min(ok), "hi_s": max(ok)}
                cover = 1.0 - 2.0 ** (1 - len(ok))
            ents.append({"digest": dig, "name": e["name"], "started_at": e["started_at"], "factors": e["factors"],
                         "medians": meds, "flags": flags, "run_ids": [p["run_id"] for p in ps],
                         "median_s": float(np.median(ok)) if ok else float(np.median(meds)),
                         "lo_s": ci["lo_s"], "hi_s": ci["hi_s"], "ci_coverage": cover,
                         "used": bool(ok)})
        ents.sort(key=lambda e: (e["started_at"], e["digest"]))
        out.append(dict(zip(SERIES_KEY, key), entries=ents))
    return out


def _boot_ratio(before: list[np.ndarray], after: list[np.ndarray], rng) -> tuple[float, float]:
    """95% percentile CI of median(after)/median(before) - 1 (in %), resampling entries on each side."""
    vals = np.empty(BOOTSTRAP)
    nb, na = len(before), len(after)
    for i in range(BOOTSTRAP):
        b = np.concatenate([before[j] for j in rng.integers(0, nb, nb)])
        a = np.concatenate([after[j] for j in rng.integers(0, na, na)])
        vals[i] = np.exp(np.median(a) - np.median(b)) - 1.0
    lo, hi = np.quantile(vals, [0.025, 0.975])
    return 100.0 * float(lo), 100.0 * float(hi)


def factor_changes(a: dict, b: dict) -> dict:
    """{factor: [before, after]} of the factors that differ."""
    keys = sorted((set(a) | set(b)) - _NOT_FACTORS)
    return {k: [a.get(k), b.get(k)] for k in keys if a.get(k) != b.get(k)}


def detect(series: dict, alpha: float = 0.05, permutations: int = 199, min_entries: int = 2,
           seed: int = 0) -> list[dict]:
    """The change points of one series (see the module's docstring)."""
    ents = series["entries"]
    used = [i for i, e in enumerate(ents) if e["used"]]
    blocks = [np.log(np.array([m for m, f in zip(ents[i]["medians"], ents[i]["flags"]) if not f and m > 0]))
              for i in used]
    keep = [k for k, b in enumerate(blocks) if b.size]
    used = [used[k] for k in keep]
    blocks = [blocks[k] for k in keep]
    rng = np.random.default_rng(seed)
    changes = e_divisive(blocks, alpha=alpha, permutations=permutations, min_blocks=min_entries, rng=rng)
    bounds = [0] + [c.block for c in changes] + [len(blocks)]
    out = []
    for j, c in enumerate(changes):
        before, after = blocks[bounds[j]:c.block], blocks[c.block:bounds[j + 2]]
        size = float(np.exp(np.median(np.concatenate(after)) - np.median(np.concatenate(before))) - 1.0) * 100.0
        lo, hi = _boot_ratio(before, after, rng)
        last, first = ents[used[c.block - 1]], ents[used[c.block]]
        out.append({"last_before": last["started_at"], "first_after": first["started_at"],
                    "last_before_campaign": last["name"], "first_after_campaign": first["name"],
                    "entry_index": used[c.block], "entries_before": c.block - bounds[j],
                    "entries_after": bounds[j + 2] - c.block,
                    "size_pct": size, "ci_pct": [lo, hi], "p_value": c.p_value, "energy": c.q,
                    "direction": "slower" if size > 0 else "faster",
                    "factors_changed": factor_changes(last["factors"] or {}, first["factors"] or {}),
                    "skipped_flagged": [ents[i]["name"] for i in range(used[c.block - 1] + 1, used[c.block])]})
    return out


def analyse(entries: list[dict], points: list[dict], alpha: float, permutations: int, min_entries: int,
            threshold_pct: float, latest: int, seed: int = 0) -> dict:
    """{series: [...], changes: [...], regressions: [...]} of a history; a regression is a change of at least
    threshold_pct (slower) whose first entry after it is one of the latest `latest` entries of its series."""
    series = build_series(entries, points)
    changes, regressions = [], []
    for s in series:
        key = {k: s[k] for k in SERIES_KEY}
        s["changes"] = detect(s, alpha, permutations, min_entries, seed)
        n = len(s["entries"])
        for c in s["changes"]:
            c.update(key)
            c["regression"] = bool(c["size_pct"] >= threshold_pct and c["entry_index"] >= n - latest)
            changes.append(c)
            if c["regression"]:
                regressions.append(c)
    return {"series": series, "changes": changes, "regressions": regressions}
