"""Compare the levels of one factor of loaded campaigns (the data side of `mpitempo compare`).

Per (op, msize, nprocs) group, the per-mpirun medians (after the outlier filter) of level A and
of level B go into the Mann-Whitney U test of stats.compare. The SQL does the bulk; Python loops
over groups only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.io.sizes import format_size
from mpitempo.stats.compare import ALPHA, compare_samples, holm, min_runs_for, stars
from mpitempo.analysis.filtering import filtered_view
from mpitempo.stats.outliers import Filter
from mpitempo.analysis.store import FACTORS, CampaignData
from mpitempo.analysis.flags import by_severity
from mpitempo.analysis.derived import bandwidth_MBps, exp_info, spread
from mpitempo.analysis.flags import campaign_metas, group_flags
from mpitempo.analysis.summary import per_run_table
from mpitempo.stats.effects import hodges_lehmann, tost, verdict
from mpitempo.stats.strata import median, strata, van_elteren

WARN_FACTORS = ("config", "campaign", "nprocs", "library", "timer", "scheme", "compiler", "host", "governor",
                "cache_policy", "clock_sync", "binding", "cflags", "like")


def allowed_factors() -> list[str]:
    return ["campaign"] + list(FACTORS)


@dataclass
class Comparison:
    factor: str
    levels: list[str]
    base: str
    rows: list[dict]
    notes: list[str] = field(default_factory=list)      # footnotes: missing groups, few runs, factor mismatch
    alternative: str = "two-sided"
    filter: dict = field(default_factory=dict)
    equivalence_pct: float | None = None


def _label(v) -> str:
    return str(v)


def group_name(op, msize, nprocs) -> str:
    return f"{op} {format_size(msize) if msize else 0} np={nprocs}"


def _level_order(data: CampaignData, by: str, values) -> list[str]:
    vals = list(dict.fromkeys(_label(v) for v in values))
    if by == "campaign":
        return [lab for lab in data.labels if lab in vals] + sorted(v for v in vals if v not in data.labels)
    try:
        return sorted(vals, key=lambda v: float(v))
    except ValueError:
        return sorted(vals)


def compare(data: CampaignData, by: str = "config", alternative: str = "two-sided", base: str | None = None,
            use_holm: bool = False, filt: Filter | None = None, alpha: float = ALPHA,
            test: str = "ranksum", equivalence: float | None = None,
            allow_oversubscribed: bool = False) -> Comparison:
    """equivalence: a margin relative to A's median (0.01 = 1%) for the equivalence test (TOST);
    allow_oversubscribed: compare oversubscribed runs too (refused otherwise: correctness only)."""
    if by not in allowed_factors():
        raise MtError(f"unknown factor '{by}' for --by (allowed: {', '.join(allowed_factors())})")
    filt = filt or Filter()
    # the per-run medians after the filter (analysis.perrun: one run in memory at a time)

    if by == "nprocs":
        level_of = None
    else:
        level_of = {(c, rid): lv for c, rid, lv in
                    data.con.execute(f'SELECT campaign, run_id, CAST("{by}" AS VARCHAR) FROM runs').fetchall()}
    res = sorted(((str(r["nprocs"]) if level_of is None else level_of[(r["campaign"], r["run_id"])],
                   r["op"], r["msize"], r["nprocs"], r["campaign"], r["run_id"], r["median_s"], r["n"] + r["outliers"])
                  for r in per_run_table(data.con, filt)),
                 key=lambda x: tuple((v is None, v) for v in x[:6]))
    if not res:
        raise MtError("no measurements to compare")
    levels = _level_order(data, by, [r[0] for r in res])
    if len(levels) < 2:
        where = ", ".join(str(r) for r in data.roots)
        raise MtError(f"factor '{by}' has only one level ('{levels[0]}') in {where}: nothing to compare "
                      f"(give two campaign directories, or --by one of: {', '.join(allowed_factors())})")
    if base is None:
        base = levels[0]
    elif base not in levels:
        raise MtError(f"unknown level '{base}' of factor '{by}' for --base (levels: {', '.join(levels)})")
    others = [v for v in levels if v != base]

    # level -> group -> list of run medians; runs without any valid measurement noted
    samples: dict[str, dict[tuple, list[float]]] = {v: {} for v in levels}
    runrows: dict[str, dict[tuple, list[dict]]] = {v: {} for v in levels}
    empty_runs: list[str] = []
    for level, op, msize, nprocs, camp, run_id, med, nvalid in res:
        key = (op, int(msize), int(nprocs)) if by != "nprocs" else (op, int(msize), 0)
        lst = samples[level].setdefault(key, [])
        runrows[level].setdefault(key, []).append({"run_id": run_id, "run_index": run_id, "n": int(nvalid or 0),
                                                   "median_s": med, "outliers": 0, "campaign": camp,
                                                   "op": op, "msize": int(msize)})
        if med is None:
            empty_runs.append(f"{run_id} ({group_name(op, msize, nprocs)})")
        else:
            lst.append(float(med))

    cm = campaign_metas(data)
    metas = {}
    for d in runrows.values():
        for rr in d.values():
            for x in rr:   # run ids are unique within a campaign: key them by (campaign, run_id) here
                x["run_id"] = (x["campaign"], x["run_id"])
                metas[x["run_id"]] = cm.get(x["campaign"], {}).get(x["run_id"][1], {})
    gflags = {(lv, k): group_flags(rr, metas) for lv, d in runrows.items() for k, rr in d.items()}
    if not allow_oversubscribed:
        over = sorted({lv for (lv, k), f in gflags.items() if "oversubscribed" in f["flags"]})
        if over:
            raise MtError(f"level(s) {', '.join(over)} of '{by}' come from oversubscribed runs (more ranks than "
                          "CPUs): their times are correctness-only; --allow-oversubscribed compares them anyway")

    notes: list[str] = []
    rows: list[dict] = []
    for other in others:
        a_keys, b_keys = set(samples[base]), set(samples[other])
        only_a, only_b = sorted(a_keys - b_keys), sorted(b_keys - a_keys)
        if only_a:
            notes.append(f"only in {base} (not compared): " + ", ".join(group_name(*k) for k in only_a))
        if only_b:
            notes.append(f"only in {other} (not compared): " + ", ".join(group_name(*k) for k in only_b))
        common = sorted(a_keys & b_keys)
        if not common:
            raise MtError(f"nothing to compare: {base} and {other} have no (op, msize, nprocs) in common")
        for key in common:
            r = compare_samples(samples[base][key], samples[other][key], alternative, alpha, test)
            r.update(effect_fields(samples[base][key], samples[other][key], equivalence, alpha))
            fa, fb = gflags[(base, key)]["flags"], gflags[(other, key)]["flags"]
            r.update(flags_a=fa, flags_b=fb, flags=by_severity(sorted(set(fa) | set(fb))))
            r["strata"], r["stratified"] = core_strata_rows(runrows[base][key], runrows[other][key],
                                                            gflags[(base, key)], gflags[(other, key)], alternative,
                                                            alpha, test)
            if r["strata"] and "core_latency" not in r["flags"]:
                r["flags"] = by_severity(r["flags"] + ["core_latency"])
            r.update(bandwidth_fields(runrows[base][key], runrows[other][key], metas))
            op, msize, nprocs = key
            rows.append({"factor": by, "a": base, "b": other, "op": op, "msize": msize,
                         "nprocs": nprocs if by != "nprocs" else None, **r, "alternative": alternative})
    if use_holm:
        adj = holm([r["p_value"] for r in rows])
        for r, p in zip(rows, adj):
            r["p_holm"] = p
            r["stars"] = stars(p)
            r["significant"] = p is not None and p <= alpha
    for r in rows:
        r["filter"] = filt.settings()
        r["verdict"] = row_verdict(r, equivalence, alpha)

    if empty_runs:
        notes.append(f"{len(empty_runs)} run(s) with no valid measurement left out: " + ", ".join(empty_runs[:10])
                     + (" ..." if len(empty_runs) > 10 else ""))
    cannot = [r for r in rows if r["p_value"] is not None and r["min_p"] is not None and r["min_p"] > alpha]
    if cannot:
        sizes = sorted({(r["runs_a"], r["runs_b"]) for r in cannot})
        na, nb = sizes[0]
        notes.append(f"{len(cannot)} comparison(s) have too few runs to reach p <= {alpha:g} "
                     f"(e.g. {na} vs {nb} runs: smallest possible p = {cannot[0]['min_p']:.3g}); "
                     f"need >= {min_runs_for(alpha, alternative)} runs per side, better >= 10")
    elif any(min(r["runs_a"], r["runs_b"]) < 5 for r in rows):
        notes.append("fewer than 5 runs on a side: the test has little power; use >= 10 mpiruns per side")
    if len(rows) > 1:
        nsig = sum(r["significant"] for r in rows)
        if use_holm:
            notes.append(f"{len(rows)} comparisons; p-values and stars are Holm-adjusted (family-wise alpha {alpha:g})")
        else:
            notes.append(f"{len(rows)} comparisons, {nsig} significant at alpha {alpha:g}: about "
                         f"{alpha * len(rows):.1f} would be by chance alone if nothing differed; --holm adjusts")
    notes += core_strata_notes(rows)
    if any(r.get("bandwidth_a_MBps") is not None for r in rows):
        notes.append(BANDWIDTH_NOTE)
    flagged = [r for r in rows if r["flags"]]
    if flagged:
        kinds = by_severity(sorted({f for r in flagged for f in r["flags"]}))
        notes.append(f"{len(flagged)} comparison(s) involve flagged runs ({', '.join(kinds)}): "
                     "see `mpitempo summary` of each side for the runs and likely causes")
    notes += factor_mismatch(data, by, base, others)
    notes += selection_notes(data)
    return Comparison(by, levels, base, rows, notes, alternative, filt.settings(),
                      100.0 * equivalence if equivalence is not None else None)


BANDWIDTH_NOTE = ("bandwidth (MB/s, 1 MB = 1e6 B) of the bandwidth ops: bytes_per_call / each run's median, "
                  "median over runs with its 95% CI; change = (B - A) / A; derived for reading only: the test, "
                  "p-value and verdict are on the times")


def bandwidth_fields(runs_a: list[dict], runs_b: list[dict], metas: dict) -> dict:
    """Both sides' bandwidth (analysis.derived: bytes_per_call / run median, median over runs with
    its CI) and the change in % of A, for ops with bytes_per_call > 0; {} for the others.
    runs_*: rows with run_id (a key of metas), op, msize, median_s."""

    def side(runs):
        vals = []
        for x in runs:
            b = exp_info(metas.get(x["run_id"], {}), x["op"], x["msize"]).get("bytes_per_call") or 0
            if x["median_s"] is not None and isinstance(b, (int, float)) and b > 0:
                vals.append(bandwidth_MBps(float(b), float(x["median_s"])))
        return spread(vals) if vals else None

    a, b = side(runs_a), side(runs_b)
    if a is None or b is None:
        return {}
    return {"bandwidth_a_MBps": a["median"], "bandwidth_b_MBps": b["median"],
            "bandwidth_ci_a_MBps": [a["lo"], a["hi"]], "bandwidth_ci_b_MBps": [b["lo"], b["hi"]],
            "bandwidth_change_pct": 100.0 * (b["median"] - a["median"]) / a["median"] if a["median"] else None}


def core_strata_rows(runs_a: list[dict], runs_b: list[dict], fa: dict, fb: dict, alternative: str, alpha: float,
                     test: str) -> tuple[list[dict] | None, dict | None]:
    """The comparison stratified by the core-to-core latency probe: the runs of both sides pooled
    into strata (stats.strata), and per stratum each side's runs, medians, delta and p (when both
    sides have runs there); and the combined stratified test over the strata where both sides ran
    (van Elteren 1960: {statistic, p_value, method, strata, significant}). (None, None) when the
    pooled probes are all alike."""

    pairs = [(0, x, fa["core_rtt"].get(x["run_id"])) for x in runs_a if x["median_s"] is not None] + \
            [(1, x, fb["core_rtt"].get(x["run_id"])) for x in runs_b if x["median_s"] is not None]
    st = strata([c for _, _, c in pairs])
    if len(st) < 2:
        return None, None
    out, groups = [], []
    for s in st:
        a = [float(pairs[i][1]["median_s"]) for i in s if pairs[i][0] == 0]
        b = [float(pairs[i][1]["median_s"]) for i in s if pairs[i][0] == 1]
        row = {"core_rtt_s": median([pairs[i][2] for i in s]), "runs_a": len(a), "runs_b": len(b),
               "median_a_s": median(a), "median_b_s": median(b), "delta_pct": None, "p_value": None}
        if a and b:
            c = compare_samples(a, b, alternative, alpha, test)
            row.update(delta_pct=c["delta_pct"], p_value=c["p_value"])
        out.append(row)
        groups.append((a, b))
    ve = van_elteren(groups, alternative)
    if ve is not None:
        ve["significant"] = ve["p_value"] <= alpha
    return out, ve


def _strata_part(r: dict, named: bool) -> str:
    """One comparison's strata: '[B: ]110 ns: 8 vs 2 runs, +1.0% p=0.8; 470 ns: ...; within strata combined
    (van Elteren): p = 0.41, not significant[: A and B sampled near and distant cores in different shares]'."""
    parts = []
    for s in r["strata"]:
        d = f", {s['delta_pct']:+.1f}%" if s["delta_pct"] is not None else ""
        p = f" p={s['p_value']:.2g}" if s["p_value"] is not None else ""
        parts.append(f"{s['core_rtt_s'] * 1e9:.0f} ns: {s['runs_a']} vs {s['runs_b']} runs{d}{p}")
    na, nb = sum(s["runs_a"] for s in r["strata"]), sum(s["runs_b"] for s in r["strata"])
    skew = max(abs(s["runs_a"] / na - s["runs_b"] / nb) for s in r["strata"]) if na and nb else 1.0
    msg = (f"{r['b']} vs {r['a']}: " if named else "") + "; ".join(parts)
    ve = r.get("stratified")
    if ve:
        msg += (f"; within strata combined (van Elteren): p = {ve['p_value']:.2g}, "
                + ("significant" if ve["significant"] else "not significant")
                + (f" (over {ve['strata']} strata where both ran)" if ve["strata"] < len(r["strata"]) else ""))
    if skew > 0.25:
        msg += f": {r['a']} and {r['b']} sampled near and distant cores in different shares"
    return msg


def core_strata_note(r: dict) -> str:
    """The note of one stratified comparison row (core_strata_notes folds those of one group)."""
    return core_strata_notes([r])[0]


def core_strata_notes(rows: list[dict]) -> list[str]:
    """One note per (op, msize, nprocs) whose comparisons are stratified by the core-to-core latency
    probe, naming each comparison (B vs A: each algorithm of a tune campaign vs the default) with its
    strata, runs per side, delta and p, and the combined within-strata test."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("strata"):
            groups.setdefault((r["op"], r["msize"], r.get("nprocs")), []).append(r)
    out = []
    for (op, msize, nprocs), lst in groups.items():
        n = max(len(r["strata"]) for r in lst)
        named = [_strata_part(r, True) for r in lst]
        msg = (f"{group_name(op, msize, nprocs)}: the core-to-core latency probe splits the runs into {n} strata "
               f"(core placement; {len(lst)} comparison{'s' if len(lst) > 1 else ''}): " + " | ".join(named))
        if any("different shares" in x for x in named):
            msg += ("; where the shares differ, the difference may come from where the ranks were placed: compare "
                    "within a stratum or with more interleaved mpiruns")
        out.append(msg)
    return out


def effect_fields(a, b, equivalence: float | None, alpha: float) -> dict:
    """effect_s (Hodges-Lehmann shift B - A of the run medians) with its 95% CI, effect_pct and
    equivalent (TOST within +-equivalence of A's median; None without a margin)."""

    hl = hodges_lehmann(a, b, 0.95)
    import numpy as np

    med_a = float(np.median(a)) if len(a) else None
    pct = (lambda v: 100.0 * v / med_a if v is not None and med_a else None)
    eq = tost(a, b, equivalence, alpha) if equivalence is not None else {"p_value": None, "equivalent": None}
    return {"effect_s": hl["shift_s"], "effect_ci_lo_s": hl["ci_lo_s"], "effect_ci_hi_s": hl["ci_hi_s"],
            "effect_pct": pct(hl["shift_s"]), "effect_ci_pct": [pct(hl["ci_lo_s"]), pct(hl["ci_hi_s"])],
            "equivalence_pct": 100.0 * equivalence if equivalence is not None else None,
            "p_equivalence": eq["p_value"], "equivalent": eq["equivalent"]}


def row_verdict(r: dict, equivalence: float | None, alpha: float) -> str:
    p = r.get("p_holm", r["p_value"])
    v = verdict(r["delta_pct"], r["effect_pct"], tuple(r["effect_ci_pct"]), r["significant"], p, r["equivalent"],
                100.0 * equivalence if equivalence is not None else None, r.get("min_p"), alpha)
    if r.get("flags"):
        v += f" [flagged: {', '.join(r['flags'])}]"
    return v


def factor_mismatch(data: CampaignData, by: str, base: str, others: list[str]) -> list[str]:
    """Notes for factors other than `by` whose values differ between the compared sides."""
    cols = [f for f in WARN_FACTORS if f != by]
    sel = ", ".join(f'list(DISTINCT CAST("{c}" AS VARCHAR) ORDER BY CAST("{c}" AS VARCHAR)) AS "{c}"' for c in cols)
    res = data.con.execute(f'SELECT CAST("{by}" AS VARCHAR) AS level, {sel} FROM runs GROUP BY ALL').fetchall()
    per_level = {r[0]: dict(zip(cols, r[1:])) for r in res}
    notes = []
    for other in others:
        a, b = per_level.get(base, {}), per_level.get(other, {})
        for c in cols:
            va, vb = a.get(c) or [], b.get(c) or []
            if va != vb:
                if c == "config" and by in ("library", "compiler"):
                    continue   # configurations are how one varies the library: expected
                notes.append(f"{base} and {other} also differ in {c}: {', '.join(va) or '-'} vs "
                             f"{', '.join(vb) or '-'}: the difference may come from it")
    return notes


def sample_arrays(data: CampaignData, filt: Filter | None = None) -> dict:
    """Per-run medians as numpy arrays (for plots): columns campaign, config, run_id, op, msize, nprocs, med."""
    src = filtered_view(data.con, filt or Filter())
    return data.con.execute(f"""SELECT campaign, config, run_id, any_value(run_index) AS run_index, op, msize, nprocs,
        median(runtime_s) FILTER (WHERE keep) AS med, avg(runtime_s) FILTER (WHERE keep) AS mean
        FROM {src} GROUP BY campaign, config, run_id, op, msize, nprocs
        ORDER BY campaign, config, op, msize, nprocs, run_index""").fetchnumpy()


def selection_notes(data: CampaignData) -> list[str]:
    """Configurations whose runs selected a collective algorithm without a setting the library needs for the
    selection to take effect (mpilib: ``complete``; campaigns run before mpitempo added them): their times
    are those of the library's own choice, whatever their name says."""
    seen, out = set(), []
    for _, meta in sorted(data.metas.items()):
        cfg = meta.get("config")
        if cfg in seen or not isinstance(meta.get("environment"), dict):
            continue
        seen.add(cfg)
        lib = mpilib.of(mpilib.detect(str((meta.get("mpi") or {}).get("library", ""))))
        env = {str(k): str(v) for k, v in meta["environment"].items()}
        try:
            done = lib.complete({}, env)
        except MtError as e:
            out.append(f"configuration {cfg}: {e}: its times are not those of the algorithm it names")
            continue
        if done.added:
            sel = ", ".join(f"{op} {alg}" for op, alg in sorted(done.selects.items()))
            out.append(f"configuration {cfg} selected {sel} without " + ", ".join(f"{k}={v}" for k, v in done.added.items())
                       + f", which {lib.label} needs for the selection to take effect and be checked: its times may be "
                       "those of the library's own choice (run it again: mpitempo adds these settings now)")
    return out

