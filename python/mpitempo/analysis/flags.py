"""Result flags: what a summary or comparison row needs to be believed (docs/design.md, "Trust").

Per (campaign, config, op, msize, nprocs) group, from the runs' meta.json and the per-run rows:

* ``oversubscribed``: a run had more ranks than CPUs on a host (meta.json scheme.oversubscribed or
  shared_cpu.oversubscribed): correctness only, its timings are not performance numbers;
* ``shared_cpu``: a run's ranks shared a CPU (meta.json shared_cpu.shared: the start-up check
  gave a rank less than 80% of its wall time as CPU time, another rank or process ran there);
* ``outlier_runs``: a run median >= 3x (or <= 1/3) the median of its siblings, with the likely cause
  (shared CPU, oversubscribed, fewer measurements than its siblings, a clock sync off, or unknown);
  a run whose core-latency probe puts it outside the largest stratum, off in the direction of its
  probe (slower on more distant cores, faster on nearer ones), is placement: ``core_latency``;
* ``multimodal``: the run medians fall into separate levels (stats.modes); ``modes`` lists them; not
  raised when the levels are exactly the core-latency strata (then ``core_latency`` says it);
* ``sync_inaccurate``: a clock-synchronised run whose measured offset right after the sync (meta.json
  clock.quality) exceeded SYNC_ACCURACY_S, or whose offset at the end (clock.quality_end, measured after
  the last measurement) exceeded its threshold (quality_end.threshold_s: the stated accuracy, or the
  scheme's window or slack when smaller), or whose Mean-RTT-Offset saw preempted round trips
  (clock.rtt_preempted_ranks > 0), or whose sync left a rank's clock below its stated accuracy otherwise
  (clock.below_accuracy_ranks > 0: the drift not known well enough for the run's horizon, 2 µs / horizon,
  or inherited from its reference), or that the core flagged itself (clock.sync_inaccurate); the group's
  ``sync`` holds the measured accuracy, the end error, threshold, horizon and the end check's cost;
* ``regime_change``: inside a run, the level of the measurements (in the order taken) changed
  (stats.changepoints); ``regimes`` lists the runs with their levels;
* ``core_latency``: the core-to-core latency probes of the runs (meta.json core_latency) fall into
  strata (stats.strata: >= 1.6x and >= 30 ns apart) whose run medians differ by >= STRATA_MIN_EFFECT:
  some runs had their ranks on distant cores or SMT siblings, and this op's time depends on it;
  ``core_strata`` lists each stratum's probe, runs and centre;
* ``compute_miscalibrated`` (overlap ops, ``*_overlap``): in a run, the compute between post and
  wait did not take the time it was asked to: |compute_median_s / compute_target_s - 1| >
  COMPUTE_TOLERANCE (meta.json experiments[].overlap); the overlap figure is not to be trusted;
  ``compute_off_runs`` lists those runs with their deviation;
* ``warmup_capped``: ``--warmup auto`` found no steady state before its cap in a run (meta.json
  experiments[].warmup_capped; analysis/warmup.py): the first measurements may still be warming up.

* ``zero_time``: a run's median runtime is exactly 0: most of its measurements read 0 s, which is not
  the time of any operation (the timer did not advance between the two reads: coarser than the op; or
  the data file was edited); ``zero_time_runs`` lists those runs.

* ``simulated``: the run was on a simulated platform (SimGrid/SMPI: meta.json
  launch.launcher.simulation, or an SMPI library string): its times are the platform model's, not a
  measurement of hardware (docs/simulation.md); shown first wherever a flag is shown.

The flags are listed in FLAG_NAMES order, most severe first (wrong, then mixed, then noisy:
FLAG_SEVERITY); their false-alarm and detection rates are measured by bench/flag_rates.py
(docs/methods.md, "Flag rates").

``runs_needed_5pct``: mpiruns for a 95% CI of the centre within +-5% (stats.effects.runs_needed).
"""
from __future__ import annotations

from mpitempo.stats.effects import runs_needed
from mpitempo.stats.modes import modes as find_modes, outlier_runs
from mpitempo.analysis.derived import compute_deviation, exp_info, pure_op
from mpitempo.analysis.warmup import group_warmup
from mpitempo.io.sizes import format_size
from mpitempo.stats.changepoints import segments
from mpitempo.stats.ranks import kruskal, spearman_rho
from mpitempo.stats.strata import median, strata

# The flags in order of severity (docs/methods.md, "Flag rates"): first those that say a run's numbers
# are wrong (not a measurement of the hardware, of the asked placement or clock, or of its machine's
# usual state), then those that say the numbers are right but mix machine states or may be noisy.
FLAG_NAMES = ("simulated", "zero_time", "oversubscribed", "sync_inaccurate", "outlier_runs", "shared_cpu",
              "compute_miscalibrated", "regime_change", "multimodal", "core_latency", "warmup_capped")
FLAG_SEVERITY = {"simulated": "wrong", "zero_time": "wrong", "oversubscribed": "wrong", "sync_inaccurate": "wrong", "outlier_runs": "wrong",
                 "shared_cpu": "wrong", "compute_miscalibrated": "wrong", "regime_change": "mixed",
                 "multimodal": "mixed", "core_latency": "mixed", "warmup_capped": "noisy"}
REGIME_MAX_ROWS = 2_000_000   # change points are looked for when the data has at most this many measurements
SYNC_ACCURACY_S = 2e-6     # a synchronised clock further off than this is flagged
FEWER_FRACTION = 0.5       # a run with fewer than half its siblings' measurements is "cut short"
COMPUTE_TOLERANCE = 0.05   # an overlap op's compute off its target by more than this (5%) is flagged
STRATA_MIN_EFFECT = 0.10   # core_latency: only when the strata's medians differ by >= 10% (the op depends on it)
# The core's start-up check (src/core/run/cpushare.h, mirrored here; meta.json has the verdict) marks a run
# shared_cpu when a rank got less than CPU_SHARE_MIN of the check's wall time as CPU time while it waited
# for its CPU for at least RUN_DELAY_MIN of it (or the kernel does not say), or less than CPU_SHARE_GROSS.
CPU_SHARE_MIN = 0.8        # MT_CPUSHARE_MIN
RUN_DELAY_MIN = 0.05       # MT_RUNDELAY_MIN
CPU_SHARE_GROSS = 0.5      # MT_CPUSHARE_GROSS


def cpu_share_low(share: float, run_delay_share: float | None, share_min: float = CPU_SHARE_MIN,
                  run_delay_min: float = RUN_DELAY_MIN, gross: float = CPU_SHARE_GROSS) -> bool:
    """One rank's verdict of the start-up check, as the core's mt_cpushare_low (run_delay_share None or
    negative: unknown)."""
    if share < gross:
        return True
    if not share < share_min:
        return False
    return run_delay_share is None or run_delay_share < 0 or run_delay_share >= run_delay_min


def by_severity(flags) -> list[str]:
    """The flags in FLAG_NAMES order (most severe first); unknown names keep their order after them."""
    rank = {f: i for i, f in enumerate(FLAG_NAMES)}
    fl = list(dict.fromkeys(flags or []))
    return sorted(fl, key=lambda f: (rank.get(f, len(rank)), fl.index(f)))


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
    return {"core_rtt_s": sum(probes) / len(probes) if probes else None, "simulated": simulation_of(meta) is not None,
            "oversubscribed": over, "shared_cpu": bool(sc.get("shared")) or over,
            "min_cpu_share": sc.get("min_cpu_share"), "sync_max_s": sync,
            "synced": bool(clock.get("sync")) and clock.get("sync") not in ("none", "off"),
            "sync_preempted": int(clock.get("rtt_preempted_ranks") or 0),
            **_sync_end_facts(clock, sync),
            # ranks below the sync's stated accuracy for any reason: those, or (any offset algorithm)
            # the drift not known well enough for the horizon (2 us / horizon), or the error inherited from the reference (docs/clocks.md)
            "sync_below": int(clock.get("below_accuracy_ranks") or 0)}


def _num_or_none(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _sync_end_facts(clock: dict, sync_max: float | None) -> dict:
    """The end-of-run clock check of one run (meta.json clock.quality_end, docs/clocks.md "Verified at the
    end"): the error measured after the last measurement, the threshold it is held to (the stated
    accuracy, or the scheme's window or slack when smaller) and which, the horizon (sync -> last
    measurement), the check's cost, and the core's own verdict (clock.sync_inaccurate). Runs written
    before the check existed have only max_abs_offset_s there: the threshold is then SYNC_ACCURACY_S."""
    qe = clock.get("quality_end") if isinstance(clock.get("quality_end"), dict) else {}
    per_rank = qe.get("offset_per_rank_s") if isinstance(qe.get("offset_per_rank_s"), list) else None
    thr = _num_or_none(qe.get("threshold_s"))
    acc = _num_or_none(clock.get("accuracy_s"))
    return {"sync_end_s": _num_or_none(qe.get("max_abs_offset_s")),
            "sync_end_per_rank_s": [_num_or_none(v) for v in per_rank] if per_rank is not None else None,
            "sync_threshold_s": thr if thr is not None else SYNC_ACCURACY_S,
            "sync_threshold_of": qe.get("threshold_of") if isinstance(qe.get("threshold_of"), str) else "stated_accuracy",
            "sync_horizon_s": _num_or_none(qe.get("horizon_s")),
            "sync_check_s": _num_or_none(qe.get("duration_s")),
            "sync_check_fraction": _num_or_none(qe.get("cost_fraction")),
            "sync_accuracy_s": acc if acc is not None else sync_max,
            "sync_drift_bound_ppm": _num_or_none(clock.get("drift_bound_ppm")),
            "sync_flagged": clock.get("sync_inaccurate") is True}


def sync_off(f: dict) -> bool:
    """Is a synchronised run's clock below its stated accuracy: an offset measured after the sync or at
    the end beyond the threshold (the stated accuracy, or the scheme's gap when smaller), Mean-RTT-Offset
    preempted, a rank below its stated accuracy (at the run's horizon), or the core's own verdict?"""
    if not f.get("synced"):
        return False
    thr = f.get("sync_threshold_s") or SYNC_ACCURACY_S
    return bool((f.get("sync_max_s") is not None and f["sync_max_s"] > min(thr, SYNC_ACCURACY_S))
                or (f.get("sync_end_s") is not None and f["sync_end_s"] > thr)
                or f.get("sync_preempted") or f.get("sync_below") or f.get("sync_flagged"))


def sync_group(rs: list[dict], facts: dict) -> dict | None:
    """The clock facts of a group's synchronised runs (summary --json "sync"): the measured accuracy
    (worst run), the end error, threshold and horizon, the end check's cost, and the runs off."""
    fs = [(r.get("run_index"), facts[r["run_id"]]) for r in rs if facts[r["run_id"]].get("synced")]
    if not fs:
        return None

    def worst(k):
        v = [f[k] for _, f in fs if f.get(k) is not None]
        return max(v) if v else None

    tight = min((f for _, f in fs), key=lambda f: f.get("sync_threshold_s") or SYNC_ACCURACY_S)
    return {"accuracy_s": worst("sync_accuracy_s"), "end_max_abs_offset_s": worst("sync_end_s"),
            "threshold_s": tight.get("sync_threshold_s") or SYNC_ACCURACY_S,   # the tightest run's, and what it is
            "threshold_of": tight.get("sync_threshold_of") or "stated_accuracy",
            "horizon_s": worst("sync_horizon_s"), "end_check_s": worst("sync_check_s"),
            "end_check_fraction": worst("sync_check_fraction"), "drift_bound_ppm": worst("sync_drift_bound_ppm"),
            "inaccurate_runs": [i for i, f in fs if sync_off(f)], "reasons": _sync_reasons([f for _, f in fs])}


def _sync_reasons(fs: list[dict]) -> list[str]:
    """Why the runs' clocks are below their stated accuracy, each reason once."""
    out = []
    for f in fs:
        thr = f.get("sync_threshold_s") or SYNC_ACCURACY_S
        if f.get("sync_end_s") is not None and f["sync_end_s"] > thr:
            out.append(f"a rank {f['sync_end_s'] * 1e6:.3g} µs off at the end (more than "
                       f"{thr * 1e6:.3g} µs: {str(f.get('sync_threshold_of')).replace('_', ' ')})")
        elif f.get("sync_max_s") is not None and f["sync_max_s"] > min(thr, SYNC_ACCURACY_S):
            out.append(f"a rank {f['sync_max_s'] * 1e6:.3g} µs off (more than {min(thr, SYNC_ACCURACY_S) * 1e6:.3g} µs)")
        if f.get("sync_preempted"):
            out.append(f"Mean-RTT-Offset saw preempted round trips on {f['sync_preempted']} rank(s)")
        elif f.get("sync_below"):
            out.append(f"{f['sync_below']} rank(s) below their stated accuracy (the drift not known well enough "
                       "for the horizon, or inherited from the reference)")
    return list(dict.fromkeys(out))


def simulation_of(meta: dict) -> dict | None:
    """The simulation record of a run (platform, digest, SimGrid version, network model), or None for
    a run on hardware. A core built with smpicc but started without mpitempo is still recognised by
    its MPI library string ("SMPI Version ...")."""
    meta = meta or {}
    launch = meta.get("launch") if isinstance(meta.get("launch"), dict) else {}
    launcher = launch.get("launcher") if isinstance(launch.get("launcher"), dict) else {}
    sim = launcher.get("simulation")
    if isinstance(sim, dict) and sim.get("simulated"):
        return sim
    mpi = meta.get("mpi") if isinstance(meta.get("mpi"), dict) else {}
    if str(mpi.get("library", "")).startswith("SMPI"):
        return {"simulated": True, "simulator": "SimGrid/SMPI", "platform": None}
    return None


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
    elif facts.get("sync_below"):
        causes.append(f"the clock sync is below its stated accuracy on {facts['sync_below']} rank(s)")
    return "; ".join(causes) or "unknown (the machine changed state? another job?)"


def group_flags(rows: list[dict], metas: dict) -> dict:
    """Flags of one group. rows: its per-run rows (run_id, run_index, n, outliers, median_s);
    metas: run_id -> meta.json. Returns {flags, modes, runs_needed_5pct, outlier_runs, runs}."""
    rs = [r for r in rows if r.get("n") and r.get("median_s") is not None]
    meds = [float(r["median_s"]) for r in rs]
    facts = {r["run_id"]: run_facts(metas.get(r["run_id"], {})) for r in rows}
    flags = []
    if any(f.get("simulated") for f in facts.values()):
        flags.append("simulated")
    zero = [r.get("run_index") for r in rs if float(r["median_s"]) == 0.0]
    if zero:
        flags.append("zero_time")
    if any(f["oversubscribed"] for f in facts.values()):
        flags.append("oversubscribed")
    if any(f["shared_cpu"] for f in facts.values()):
        flags.append("shared_cpu")
    core = [facts[r["run_id"]]["core_rtt_s"] for r in rs]
    cs, far_off = strata_and_outliers([r.get("run_index") for r in rs], meds, core)
    outl = []
    for o in far_off:
        r = rs[o["index"]]

        others = [x["n"] + x.get("outliers", 0) for x in rs if x is not r]
        sib = sorted(others)[len(others) // 2] if others else 0
        outl.append({"run_id": r["run_id"], "run_index": r.get("run_index"), "median_s": r["median_s"],
                     "ratio": o["ratio"], "cause": _cause(facts[r["run_id"]], r["n"] + r.get("outliers", 0), sib)})
    if outl:
        flags.append("outlier_runs")
    ms = find_modes(meds)
    mode_list = None
    factor = None
    if len(ms) > 1:
        mode_list = []
        for m in ms:
            c = [core[i] for i in m["runs"] if core[i] is not None]
            mode_list.append({"center_s": m["center_s"], "share": m["share"],
                              "runs": [rs[i].get("run_index") for i in m["runs"]],
                              "core_rtt_s": sum(c) / len(c) if c else None})
        factor = core_latency_factor(meds, core, [next(k for k, m in enumerate(ms) if i in m["runs"])
                                                   for i in range(len(meds))])
        if not (cs and _levels_are_strata(ms, cs, rs)):
            flags.append("multimodal")   # else the levels are the placement strata: core_latency says it
    sync = sync_group(rs, facts)
    if sync and sync["inaccurate_runs"]:
        flags.append("sync_inaccurate")
    if cs:
        flags.append("core_latency")
    off = compute_off_runs(rows, metas)
    if off:
        flags.append("compute_miscalibrated")

    warm = group_warmup(rows, metas)
    if warm and warm["capped_runs"]:
        flags.append("warmup_capped")
    return {"warmup": warm, "sync": sync, "flags": by_severity(flags), "modes": mode_list, "runs_needed_5pct": runs_needed(meds, 0.05),
            "outlier_runs": outl, "runs": len(meds), "mode_factor": factor, "core_strata": cs,
            "core_rtt": {r["run_id"]: c for r, c in zip(rs, core)}, "compute_off_runs": off, "zero_time_runs": zero}


def _levels_are_strata(ms: list[dict], cs: list[dict], rs: list[dict]) -> bool:
    """Do the levels of run medians coincide with the core-latency strata (every level's probed runs
    in one stratum, and no two levels in the same one)?"""
    where = {r: k for k, s in enumerate(cs) for r in s["runs"]}
    seen = set()
    for m in ms:
        ks = {where[rs[i].get("run_index")] for i in m["runs"] if rs[i].get("run_index") in where}
        if len(ks) != 1 or ks & seen:
            return False
        seen |= ks
    return True


def strata_and_outliers(run_index: list, meds: list[float], core: list) -> tuple[list[dict] | None, list[dict]]:
    """(core_strata, outlier runs) of a group: the strata of the core-to-core probe (core_strata_of)
    when their run medians differ by >= STRATA_MIN_EFFECT (else None: the runs were placed apart but
    this op's time does not depend on it), and the runs >= RATIO_GROSS off their siblings
    (stats.modes.outlier_runs: [{index, ratio}]) among the runs of its own stratum (its siblings on the
    same placement); a stratum of one run is off when it is off all others against the direction of
    its probe (slower on nearer cores, faster on more distant ones)."""
    cs = core_strata_of(run_index, meds, core)
    if cs and max(s["center_s"] for s in cs) < (1 + STRATA_MIN_EFFECT) * min(s["center_s"] for s in cs):
        cs = None
    if not cs:
        return None, outlier_runs(meds)
    out = []
    for s in cs:
        idx = [i for i in range(len(meds)) if run_index[i] in s["runs"] and core[i] is not None]
        if len(idx) >= 2:      # siblings on the same placement
            out += [{"index": idx[o["index"]], "ratio": o["ratio"]} for o in outlier_runs([meds[i] for i in idx])]
    every = {o["index"]: o for o in outlier_runs(meds)}
    for s in cs:               # a stratum of one run: off the others against the direction of its probe
        idx = [i for i in range(len(meds)) if run_index[i] in s["runs"] and core[i] is not None]
        if len(idx) == 1 and idx[0] in every:
            o = every[idx[0]]
            others = [c for j, c in enumerate(core) if c is not None and j != idx[0]]
            slower_cores = core[idx[0]] > sorted(others)[len(others) // 2]
            if slower_cores != (o["ratio"] > 1):
                out.append(o)
    out += [o for i, o in every.items() if core[i] is None]     # runs without a probe: against all
    return cs, sorted(out, key=lambda o: o["index"])


def compute_off_runs(rows: list[dict], metas: dict) -> list[dict]:
    """The runs of an overlap op's group whose compute was off its target by more than
    COMPUTE_TOLERANCE: [{run_id, run_index, deviation}] (rows need op and msize)."""

    out = []
    for r in rows:
        if not r.get("op") or pure_op(r["op"]) is None:
            continue
        ov = exp_info(metas.get(r["run_id"], {}), r["op"], r.get("msize", 0)).get("overlap")
        dev = compute_deviation(ov) if isinstance(ov, dict) else None
        if dev is not None and dev > COMPUTE_TOLERANCE:
            out.append({"run_id": r["run_id"], "run_index": r.get("run_index"), "deviation": dev})
    return out


def core_strata_of(run_index: list, meds: list[float], core: list) -> list[dict] | None:
    """The strata of runs by their core-to-core latency probe (stats.strata), each {core_rtt_s
    (median probe), runs (run indices), share (of the probed runs), center_s (median of their run
    medians)}; None when the probes are all alike or fewer than 2 runs have one."""

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

    rho = spearman_rho([meds[i] for i in idx], [core[i] for i in idx])
    p = kruskal(*groups.values())[1]
    return {"name": "core_latency", "rho": float(rho), "p": float(p), "runs": len(idx)}


def campaign_metas(data) -> dict:
    """campaign label -> run_id -> meta.json, read beside each run's measurement file (run ids of
    two campaigns may be equal; a store whose files moved gives empty metas: no meta flags)."""
    from pathlib import Path

    out: dict[str, dict] = {}
    for camp, run_id, f in data.con.execute("SELECT campaign, run_id, file FROM runs").fetchall():
        meta = {}
        from mpitempo.errors import MtError
        from mpitempo.io.rundir import load_meta

        try:
            meta = load_meta(Path(f).parent / "meta.json")
        except (MtError, TypeError):
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
    """Warnings for people, one per kind of distortion, naming the groups and runs; in order of
    severity (FLAG_NAMES: a run that is wrong before a run that is noisy), rows in their order within."""
    out: list[tuple[int, str]] = []
    rank = {f: i for i, f in enumerate(FLAG_NAMES)}

    def add(flag: str, text: str) -> None:
        out.append((rank[flag], text))

    def name(r):
        return f"{r['config']} {r['op']} {format_size(r['msize']) if r['msize'] else 0} np={r['nprocs']}"

    sim = [r for r in rows if "simulated" in r.get("flags", [])]
    if sim:
        add("simulated", f"warning: {len(sim)} group(s) come from a SIMULATED platform (SimGrid/SMPI): the times are "
                     "the platform model's, not a measurement of hardware (docs/simulation.md)")
    for r in rows:
        if "zero_time" in r.get("flags", []):
            z = r.get("zero_time_runs") or []
            add("zero_time", f"warning: {name(r)}: the median runtime of run(s) "
                f"{', '.join(str(i) for i in z) or '?'} is 0 s: most measurements read no time at all (a timer "
                "coarser than the op, or an edited data file); not a measurement of the op")
    over = [r for r in rows if "oversubscribed" in r.get("flags", [])]
    if over:
        add("oversubscribed", f"warning: {len(over)} group(s) come from OVERSUBSCRIBED runs (more ranks than CPUs): "
                     "correctness only, the times are not performance numbers")
    shared = [r for r in rows if "shared_cpu" in r.get("flags", []) and "oversubscribed" not in r.get("flags", [])]
    if shared:
        add("shared_cpu", f"warning: {len(shared)} group(s) include runs whose ranks SHARED A CPU (start-up check; "
                     "bind ranks to cores and keep other jobs off the machine): times may include time slices")
    for r in rows:
        for o in r.get("outlier_runs") or []:
            add("outlier_runs", f"warning: {name(r)}: run {o['run_index']} median {o['median_s'] * 1e6:.3f} µs is "
                         f"{o['ratio']:.2g}x its siblings'; likely cause: {o['cause']}")
        if r.get("modes"):
            lv = ", ".join(f"{m['center_s'] * 1e6:.3g} µs ({100 * m['share']:.0f}% of runs)" for m in r["modes"])
            if "multimodal" in r.get("flags", []):   # else the levels are the core-latency strata (noted there)
                add("multimodal", f"warning: {name(r)}: the run medians fall into {len(r['modes'])} levels: {lv}; "
                    "the centre mixes machine states (docs/methods.md, 'The mpirun as a factor')")
            f = r.get("mode_factor")
            if f and f["p"] <= 0.05 and f["rho"] > 0:
                cl = ", ".join(f"{m['core_rtt_s'] * 1e9:.0f} ns" for m in r["modes"] if m.get("core_rtt_s"))
                add("multimodal", f"{name(r)}: the levels follow the core-to-core latency between the ranks' CPUs "
                             f"(cache-line round trip {cl}; Kruskal-Wallis p = {f['p']:.2g} across the levels, Spearman "
                             f"rho = {f['rho']:.2f}, {f['runs']} runs): the hypervisor placed the vCPUs on near or distant cores")
        for g in r.get("regimes") or []:
            lv = " then ".join(f"{x['center_s'] * 1e6:.3g} µs ({100 * x['share']:.0f}%)" for x in g["segments"])
            add("regime_change", f"warning: {name(r)}: run {g['run_index']} changed level while measuring: {lv}")
        if r.get("core_strata"):
            add("core_latency", f"warning: {name(r)}: the core-to-core latency probe splits the runs: " + core_strata_text(r["core_strata"])
                         + "; ranks were placed on near and distant cores (or SMT siblings): compare runs of one "
                           "stratum (summary --json core_strata)")
        off = r.get("compute_off_runs") or []
        if off:
            worst = max(off, key=lambda o: o["deviation"])
            add("compute_miscalibrated", f"warning: {name(r)}: the compute between post and wait was off its target by more than "
                         f"{100 * COMPUTE_TOLERANCE:g}% in {len(off)} run(s) (worst {100 * worst['deviation']:.1f}%, "
                         f"run {worst['run_index']}): the overlap figure is not to be trusted "
                         "(docs/methods.md, 'compute_miscalibrated')")
        if "warmup_capped" in r.get("flags", []):
            w = r.get("warmup") or {}
            add("warmup_capped", f"warning: {name(r)}: --warmup auto found no steady state before its cap in run(s) "
                         f"{', '.join(str(i) for i in w.get('capped_runs', []))}: the first measurements may still be "
                         "warming up (docs/methods.md#warm-up)")
        if "sync_inaccurate" in r.get("flags", []):
            add("sync_inaccurate", f"warning: {name(r)}: clock sync below its stated accuracy in run(s) "
                f"{', '.join(str(i) for i in (r.get('sync') or {}).get('inaccurate_runs', [])) or '?'}: "
                + "; ".join((r.get("sync") or {}).get("reasons") or ["the core flagged it (clock.sync_inaccurate)"])
                + "; " + sync_text(r.get("sync")) + " (docs/clocks.md)")
    return [t for _, t in sorted(out, key=lambda x: x[0])]   # stable: rows keep their order


def sync_text(sy: dict | None) -> str:
    """'measured accuracy 0.12 µs; at the end 0.08 µs, 12 s after the sync (threshold 2 µs: stated accuracy;
    end check 4.1 ms, 0.03% of the run)'"""
    if not sy:
        return "no clock facts"

    def us(v):
        return "?" if v is None else f"{v * 1e6:.3g} µs"
    t = f"measured accuracy {us(sy.get('accuracy_s'))}"
    if sy.get("end_max_abs_offset_s") is not None:
        t += f"; at the end {us(sy['end_max_abs_offset_s'])}"
        if sy.get("horizon_s") is not None:
            t += f", {sy['horizon_s']:.3g} s after the sync"
    t += f" (threshold {us(sy.get('threshold_s'))}: {str(sy.get('threshold_of', '')).replace('_', ' ')}"
    if sy.get("end_check_s") is not None:
        t += f"; end check {sy['end_check_s'] * 1e3:.2g} ms"
        if sy.get("end_check_fraction") is not None:
            t += f", {100 * sy['end_check_fraction']:.2g}% of the run"
    return t + ")"


def sync_notes(rows: list[dict]) -> list[str]:
    """The accuracy measured (not a model's) of the groups with a global clock, the error at the end, the
    threshold and the end check's cost (summary, report): one line per config and distinct text (the
    groups of one config share their runs, so usually one line per config)."""
    seen: dict[tuple, int] = {}
    for r in rows:
        if r.get("sync"):
            k = (r.get("campaign", ""), r["config"], sync_text(r["sync"]))
            seen[k] = seen.get(k, 0) + 1
    return [f"clock of {cfg} ({n} group{'s' if n > 1 else ''}): {t}" for (_, cfg, t), n in seen.items()]


def core_strata_text(cs: list[dict]) -> str:
    """'110 ns: runs 0, 3 (median 0.55 µs) vs 470 ns: runs 1, 2 (median 1.3 µs)'"""
    def runs(v):
        return ", ".join(str(x) for x in v[:8]) + (" ..." if len(v) > 8 else "")
    return " vs ".join(f"{s['core_rtt_s'] * 1e9:.0f} ns: run{'s' if len(s['runs']) > 1 else ''} {runs(s['runs'])} "
                       f"(median {s['center_s'] * 1e6:.3g} µs)" for s in cs)


def flag_cell(flags) -> str:
    short = {"simulated": "SIMULATED", "zero_time": "ZERO-TIME", "oversubscribed": "OVERSUB", "shared_cpu": "shared-cpu", "outlier_runs": "outlier-runs",
             "multimodal": "multimodal", "sync_inaccurate": "sync-off", "regime_change": "regime-change",
             "core_latency": "core-lat", "compute_miscalibrated": "compute-off", "warmup_capped": "warmup-capped"}
    return ",".join(short.get(f, f) for f in by_severity(flags)) or "-"
