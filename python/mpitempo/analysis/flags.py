"""Result flags: what a summary or comparison row needs to be believed (DESIGN.md, Trust).

Per (campaign, config, op, msize, nprocs) group, from the runs' meta.json and the per-run rows:

* ``oversubscribed``: a run had more ranks than CPUs on a host (meta.json scheme.oversubscribed or
  shared_cpu.oversubscribed): correctness only, its timings are not performance numbers;
* ``shared_cpu``: a run's ranks shared a CPU (meta.json shared_cpu.shared: the start-up check
  gave a rank less than 80% of its wall time as CPU time, another rank or process ran there);
* ``outlier_runs``: a run median >= 3x (or <= 1/3) the median of its siblings, with the likely cause
  (shared CPU, oversubscribed, fewer measurements than its siblings, a clock sync off, or unknown);
* ``multimodal``: the run medians fall into separate levels (stats.modes); ``modes`` lists them;
* ``sync_inaccurate``: a clock-synchronised run whose measured offset (meta.json clock.quality or
  quality_end, max over ranks) exceeded SYNC_ACCURACY_S, or whose Mean-RTT-Offset saw preempted
  round trips (clock.rtt_preempted_ranks > 0: below its stated accuracy);
* ``regime_change``: inside a run, the level of the measurements (in the order taken) changed
  (stats.changepoints); ``regimes`` lists the runs with their levels;
* ``core_latency``: the core-to-core latency probes of the runs (meta.json core_latency) fall into
  strata (stats.strata: >= 1.6x and >= 30 ns apart): some runs had their ranks on distant cores
  or SMT siblings; ``core_strata`` lists each stratum's probe, runs and centre.

``runs_needed_5pct``: mpiruns for a 95% CI of the centre within +-5% (stats.effects.runs_needed).
"""
from __future__ import annotations

from mpitempo.stats.effects import runs_needed
from mpitempo.stats.modes import modes as find_modes, outlier_runs

FLAG_NAMES = ("oversubscribed", "shared_cpu", "outlier_runs", "multimodal", "sync_inaccurate", "regime_change",
              "core_latency")
REGIME_MAX_ROWS = 2_000_000   # change points are looked for when the data has at most this many measurements
SYNC_ACCURACY_S = 2e-6     # a synchronised clock further off than this is flagged
FEWER_FRACTION = 0.5       # a run with fewer than half its siblings' measurements is "cut short"


def run_facts(meta: dict) -> dict:
    """The distortion facts of one run's meta.json: oversubscribed, shared_cpu, min_cpu_share, sync_max_s."""
    meta = meta or {}
    sc = meta.get("shared_cpu") if isinstance(meta.get("shared_cpu"), dict) else {}
    scheme = meta.get("scheme") if isinstance(meta.get("scheme"), dict) else {}
    over = bool(scheme.get("oversubscribed") or sc.get("oversubscribed") or meta.get("oversubscribed"))
    clock = meta.get("clock") if isinstance(meta.get("clock"), dict) else {}
    sync = None
    for k in ("quality", "quality_end"):
        q = clock.get(k)
        v = q.get("max_abs_offset_s") if isinstance(q, dict) else None
        vals = v if isinstance(v, list) else [v]
        for x in vals:
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                sync = max(sync or 0.0, float(x))
    cl = meta.get("core_latency") if isinstance(meta.get("core_latency"), dict) else {}
    probes = [v["rtt_median_s"] for v in (cl.get("before"), cl.get("after"))
              if isinstance(v, dict) and isinstance(v.get("rtt_median_s"), (int, float))]
    return {"core_rtt_s": sum(probes) / len(probes) if probes else None,
            "oversubscribed": over, "shared_cpu": bool(sc.get("shared")) or over,
            "min_cpu_share": sc.get("min_cpu_share"), "sync_max_s": sync,
            "synced": bool(clock.get("sync")) and clock.get("sync") not in ("none", "off"),
            "sync_preempted": int(clock.get("rtt_preempted_ranks") or 0)}


def _cause(facts: dict, n: int, sibling_n: float) -> str:
    causes = []
    if facts.get("oversubscribed"):
        causes.append("oversubscribed")
    if facts.get("shared_cpu") and not facts.get("oversubscribed"):
        share = facts.get("min_cpu_share")
        causes.append("ranks shared a CPU" + (f" ({100 * share:.0f}% CPU share at start-up)" if share is not None else ""))
    if sibling_n and n < FEWER_FRACTION * sibling_n:
        causes.append(f"cut short: {n} measurements where its siblings have {sibling_n:.0f} (time slices?)")
    if facts.get("sync_max_s") is not None and facts["sync_max_s"] > SYNC_ACCURACY_S:
        causes.append(f"clock sync off by {facts['sync_max_s'] * 1e6:.1f} µs")
    if facts.get("sync_preempted"):
        causes.append(f"Mean-RTT-Offset saw preempted round trips on {facts['sync_preempted']} rank(s)")
    return "; ".join(causes) or "unknown (the machine changed state? another job?)"


def group_flags(rows: list[dict], metas: dict) -> dict:
    """Flags of one group. rows: its per-run rows (run_id, run_index, n, outliers, median_s);
    metas: run_id -> meta.json. Returns {flags, modes, runs_needed_5pct, outlier_runs, runs}."""
    rs = [r for r in rows if r.get("n") and r.get("median_s") is not None]
    meds = [float(r["median_s"]) for r in rs]
    facts = {r["run_id"]: run_facts(metas.get(r["run_id"], {})) for r in rows}
    flags = []
    if any(f["oversubscribed"] for f in facts.values()):
        flags.append("oversubscribed")
    if any(f["shared_cpu"] for f in facts.values()):
        flags.append("shared_cpu")
    outl = []
    for o in outlier_runs(meds):
        r = rs[o["index"]]
        others = [x["n"] + x.get("outliers", 0) for x in rs if x is not r]
        sib = sorted(others)[len(others) // 2] if others else 0
        outl.append({"run_id": r["run_id"], "run_index": r.get("run_index"), "median_s": r["median_s"],
                     "ratio": o["ratio"], "cause": _cause(facts[r["run_id"]], r["n"] + r.get("outliers", 0), sib)})
    if outl:
        flags.append("outlier_runs")
    ms = find_modes(meds)
    mode_list = None
    core = [facts[r["run_id"]]["core_rtt_s"] for r in rs]
    factor = None
    if len(ms) > 1:
        flags.append("multimodal")
        mode_list = []
        for m in ms:
            c = [core[i] for i in m["runs"] if core[i] is not None]
            mode_list.append({"center_s": m["center_s"], "share": m["share"],
                              "runs": [rs[i].get("run_index") for i in m["runs"]],
                              "core_rtt_s": sum(c) / len(c) if c else None})
        factor = core_latency_factor(meds, core, [next(k for k, m in enumerate(ms) if i in m["runs"])
                                                   for i in range(len(meds))])
    if any(f["synced"] and ((f["sync_max_s"] is not None and f["sync_max_s"] > SYNC_ACCURACY_S)
                            or f["sync_preempted"]) for f in facts.values()):
        flags.append("sync_inaccurate")
    cs = core_strata_of([r.get("run_index") for r in rs], meds, core)
    if cs:
        flags.append("core_latency")
    return {"flags": flags, "modes": mode_list, "runs_needed_5pct": runs_needed(meds, 0.05),
            "outlier_runs": outl, "runs": len(meds), "mode_factor": factor, "core_strata": cs,
            "core_rtt": {r["run_id"]: c for r, c in zip(rs, core)}}


def core_strata_of(run_index: list, meds: list[float], core: list) -> list[dict] | None:
    """The strata of runs by their core-to-core latency probe (stats.strata), each {core_rtt_s
    (median probe), runs (run indices), share (of the probed runs), center_s (median of their run
    medians)}; None when the probes are all alike or fewer than 2 runs have one."""
    from mpitempo.stats.strata import median, strata

    st = strata(core)
    if len(st) < 2:
        return None
    n = sum(len(s) for s in st)
    return [{"core_rtt_s": median([core[i] for i in s]), "runs": sorted(run_index[i] for i in s),
             "share": len(s) / n, "center_s": median([meds[i] for i in s])} for s in st]


def core_latency_factor(meds: list[float], core: list, mode_of: list[int]) -> dict | None:
    """Does the core-to-core latency probe (meta.json core_latency) explain the levels? Over the
    runs with a probe (>= 5): Kruskal-Wallis of the probe across the levels (p) and Spearman's rho
    of the probe with the run medians (direction): {name, rho, p, runs}."""
    idx = [i for i, c in enumerate(core) if c is not None]
    groups: dict[int, list[float]] = {}
    for i in idx:
        groups.setdefault(mode_of[i], []).append(core[i])
    if len(idx) < 5 or len(groups) < 2 or len({core[i] for i in idx}) < 2:
        return None
    from mpitempo.stats.ranks import kruskal, spearman_rho     # not scipy.stats: `summary` starts faster

    rho = spearman_rho([meds[i] for i in idx], [core[i] for i in idx])
    p = kruskal(*groups.values())[1]
    return {"name": "core_latency", "rho": float(rho), "p": float(p), "runs": len(idx)}


def campaign_metas(data) -> dict:
    """campaign label -> run_id -> meta.json, read beside each run's measurement file (run ids of
    two campaigns may be equal; a store whose files moved gives empty metas: no meta flags)."""
    import json
    from pathlib import Path

    out: dict[str, dict] = {}
    for camp, run_id, f in data.con.execute("SELECT campaign, run_id, file FROM runs").fetchall():
        meta = {}
        try:
            meta = json.loads((Path(f).parent / "meta.json").read_text())
        except (OSError, ValueError, TypeError):
            meta = data.metas.get(run_id, {}) if len(data.labels) <= 1 else {}
        out.setdefault(camp, {})[run_id] = meta if isinstance(meta, dict) else {}
    return out


def flags_by_group(per_run: list[dict], metas_by_campaign: dict) -> dict:
    """group key (campaign, config, op, msize, nprocs) -> group_flags(...)."""
    groups: dict[tuple, list[dict]] = {}
    for r in per_run:
        groups.setdefault((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r)
    return {k: group_flags(v, metas_by_campaign.get(k[0], {})) for k, v in groups.items()}


def regime_changes(con, max_rows: int = REGIME_MAX_ROWS) -> dict | None:
    """(campaign, config, op, msize, nprocs) -> [{run_id, run_index, segments}] for the runs whose
    valid measurements change level; None when the data is too large to look (then not flagged)."""
    import numpy as np

    from mpitempo.stats.changepoints import segments

    n = con.execute("SELECT count(*) FROM meas WHERE valid").fetchone()[0]
    if n > max_rows:
        return None
    a = con.execute("""SELECT dense_rank() OVER (ORDER BY campaign, config, op, msize, nprocs, run_id) AS gid,
            runtime_s FROM meas WHERE valid ORDER BY gid, rep""").fetchnumpy()
    out: dict[tuple, list] = {}
    if a["runtime_s"].size == 0:
        return out
    gid = np.asarray(a["gid"])
    rt = np.asarray(a["runtime_s"], dtype=float)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(gid)) + 1, [gid.size]])
    changed = {}
    for s0, s1 in zip(starts[:-1], starts[1:]):
        seg = segments(rt[s0:s1])
        if len(seg) > 1:
            changed[int(gid[s0])] = seg
    if not changed:
        return out
    ids = con.execute("""SELECT DISTINCT dense_rank() OVER (ORDER BY campaign, config, op, msize, nprocs, run_id),
            campaign, config, op, msize, nprocs, run_id, run_index FROM meas WHERE valid""").fetchall()
    for g, camp, cfg, op, msize, nprocs, run_id, run_index in ids:
        if int(g) in changed:
            out.setdefault((camp, cfg, op, int(msize), int(nprocs)), []).append(
                {"run_id": run_id, "run_index": int(run_index), "segments": changed[int(g)]})
    for v in out.values():
        v.sort(key=lambda x: x["run_index"])
    return out


def flag_notes(rows: list[dict]) -> list[str]:
    """Warnings for people, one per kind of distortion, naming the groups and runs."""
    notes = []

    def name(r):
        from mpitempo.io.sizes import format_size

        return f"{r['config']} {r['op']} {format_size(r['msize']) if r['msize'] else 0} np={r['nprocs']}"

    over = [r for r in rows if "oversubscribed" in r.get("flags", [])]
    if over:
        notes.append(f"warning: {len(over)} group(s) come from OVERSUBSCRIBED runs (more ranks than CPUs): "
                     "correctness only, the times are not performance numbers")
    shared = [r for r in rows if "shared_cpu" in r.get("flags", []) and "oversubscribed" not in r.get("flags", [])]
    if shared:
        notes.append(f"warning: {len(shared)} group(s) include runs whose ranks SHARED A CPU (start-up check; "
                     "bind ranks to cores and keep other jobs off the machine): times may include time slices")
    for r in rows:
        for o in r.get("outlier_runs") or []:
            notes.append(f"warning: {name(r)}: run {o['run_index']} median {o['median_s'] * 1e6:.3f} µs is "
                         f"{o['ratio']:.2g}x its siblings'; likely cause: {o['cause']}")
        if r.get("modes"):
            lv = ", ".join(f"{m['center_s'] * 1e6:.3g} µs ({100 * m['share']:.0f}% of runs)" for m in r["modes"])
            notes.append(f"warning: {name(r)}: the run medians fall into {len(r['modes'])} levels: {lv}; the "
                         "centre mixes machine states (docs/methods.md, 'The mpirun as a factor')")
            f = r.get("mode_factor")
            if f and f["p"] <= 0.05 and f["rho"] > 0:
                cl = ", ".join(f"{m['core_rtt_s'] * 1e9:.0f} ns" for m in r["modes"] if m.get("core_rtt_s"))
                notes.append(f"{name(r)}: the levels follow the core-to-core latency between the ranks' CPUs "
                             f"(cache-line round trip {cl}; Kruskal-Wallis p = {f['p']:.2g} across the levels, Spearman "
                             f"rho = {f['rho']:.2f}, {f['runs']} runs): the hypervisor placed the vCPUs on near or distant cores")
        for g in r.get("regimes") or []:
            lv = " then ".join(f"{x['center_s'] * 1e6:.3g} µs ({100 * x['share']:.0f}%)" for x in g["segments"])
            notes.append(f"warning: {name(r)}: run {g['run_index']} changed level while measuring: {lv}")
        if r.get("core_strata"):
            notes.append(f"warning: {name(r)}: the core-to-core latency probe splits the runs: " + core_strata_text(r["core_strata"])
                         + "; ranks were placed on near and distant cores (or SMT siblings): compare runs of one "
                           "stratum (summary --json core_strata)")
        if "sync_inaccurate" in r.get("flags", []):
            notes.append(f"warning: {name(r)}: clock sync was off by more than {SYNC_ACCURACY_S * 1e6:g} µs, or its "
                         "Mean-RTT-Offset saw preempted round trips (below its stated accuracy)")
    return notes


def core_strata_text(cs: list[dict]) -> str:
    """'110 ns: runs 0, 3 (median 0.55 µs) vs 470 ns: runs 1, 2 (median 1.3 µs)'"""
    def runs(v):
        return ", ".join(str(x) for x in v[:8]) + (" ..." if len(v) > 8 else "")
    return " vs ".join(f"{s['core_rtt_s'] * 1e9:.0f} ns: run{'s' if len(s['runs']) > 1 else ''} {runs(s['runs'])} "
                       f"(median {s['center_s'] * 1e6:.3g} µs)" for s in cs)


def flag_cell(flags) -> str:
    short = {"oversubscribed": "OVERSUB", "shared_cpu": "shared-cpu", "outlier_runs": "outlier-runs",
             "multimodal": "multimodal", "sync_inaccurate": "sync-off", "regime_change": "regime-change",
             "core_latency": "core-lat"}
    return ",".join(short.get(f, f) for f in flags or []) or "-"
