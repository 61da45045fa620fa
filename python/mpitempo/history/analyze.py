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
from mpitempo.history.store import SERIES_KEY, Points

BOOTSTRAP = 1000
# factors whose change is a fact about the entry (its flags; when it ran, with ingest --date), not about
# the machine or its software
_NOT_FACTORS = {"flags", "measured_at"}


def build_series(entries: list[dict], points) -> list[dict]:
    """[{key fields..., entries: [{digest, name, started_at, factors, medians, flags, run_ids, median_s, lo_s,
    hi_s, ci_coverage, used}]}] per series, entries oldest first. points: a store.Points (columns, as
    store.load returns them) or a list of point dicts (store.POINT_COLUMNS). Each entry's median and its
    95% CI are those of its unflagged run medians (order statistics, stats.describe.median_ci; with too few
    runs for 95%: min..max with its coverage 1 - 2^(1-n)), computed for all entries at once."""
    from mpitempo.stats.describe import binom_half_cdf, median_ci_ranks

    if not isinstance(points, Points):
        entries = sorted(entries, key=lambda e: (e["started_at"], e["digest"]))
        points = Points.from_rows(entries, points)
    P = points
    nrow = len(P)
    if nrow == 0:
        return []
    cut = np.flatnonzero((np.diff(P.sid) != 0) | (np.diff(P.eid) != 0)) + 1
    starts, ends = np.r_[0, cut], np.r_[cut, nrow]
    cnt = ends - starts
    grp = np.repeat(np.arange(starts.size), cnt)
    ok = P.fid == P.flag_names.index("")
    k = np.add.reduceat(ok.astype(np.int64), starts)            # unflagged runs per (series, entry)
    v_ok = P.median_s[np.lexsort((P.median_s, ~ok, grp))]       # per group: unflagged ascending, then the rest
    v_all = P.median_s[np.lexsort((P.median_s, grp))]
    has = k > 0
    m = np.where(has, k, cnt)
    lo_i, hi_i = starts + (m - 1) // 2, starts + m // 2
    med = np.where(has, 0.5 * (v_ok[lo_i] + v_ok[hi_i]), 0.5 * (v_all[lo_i] + v_all[hi_i]))
    # the interval of the median per number of unflagged runs
    ranks, cover = {}, {}
    for kk in np.unique(k[has]).tolist():
        r = median_ci_ranks(kk)
        ranks[kk] = r if r is not None else (1, kk)
        cover[kk] = 1.0 - 2.0 * binom_half_cdf(r[0] - 1, kk) if r is not None else 1.0 - 2.0 ** (1 - kk)
    lr = np.array([ranks.get(x, (1, 1))[0] for x in k.tolist()], dtype=np.int64)
    ur = np.array([ranks.get(x, (1, 1))[1] for x in k.tolist()], dtype=np.int64)
    lo_v, hi_v = v_ok[starts + lr - 1].tolist(), v_ok[starts + ur - 1].tolist()
    meds, med_l = P.median_s.tolist(), med.tolist()
    fl = np.array(P.flag_names, dtype=object)[P.fid].tolist()
    rn = np.array(P.run_names, dtype=object)[P.rid].tolist()
    gsid, geid = P.sid[starts].tolist(), P.eid[starts].tolist()
    k_l, has_l, st_l, en_l = k.tolist(), has.tolist(), starts.tolist(), ends.tolist()
    out, cur = [], None
    for g in range(len(st_l)):
        if cur is None or gsid[g] != cur[0]:
            cur = (gsid[g], [])
            out.append(dict(zip(SERIES_KEY, P.series[gsid[g]]), entries=cur[1]))
        e = entries[geid[g]]
        a, b = st_l[g], en_l[g]
        h = has_l[g]
        cur[1].append({"digest": e["digest"], "name": e["name"], "started_at": e["started_at"],
                       "factors": e["factors"], "medians": meds[a:b], "flags": fl[a:b], "run_ids": rn[a:b],
                       "median_s": med_l[g], "lo_s": lo_v[g] if h else None, "hi_s": hi_v[g] if h else None,
                       "ci_coverage": cover[k_l[g]] if h else None, "used": h})
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
