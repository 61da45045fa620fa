#!/usr/bin/env python3
"""Benchmark: the false-alarm and detection rates of the result flags (docs/methods.md, "Flag rates").

Two steps, so that a calibration costs a few short exclusive holds of the CPU lock and the threshold
sweep none:

  measure PART... --out DIR  runs the parts' campaigns with `mpitempo run` into DIR/PART-campaign in
                           one hold of the CPU lock, exclusive (after waiting up to 4 minutes for a
                           load average < 0.5; the load seen is recorded in DIR/PART.json) and at
                           most --budget seconds long: a campaign still running then is interrupted
                           and the next `measure` of that part resumes it. Parts:
      null     10 configurations identical by construction (n00..n09) x allreduce and bcast at 8 B and
               4 KiB, delay, idelay_overlap = 60 rows of 8 interleaved mpiruns each, with a global
               clock (--sync hca3) and --warmup auto: every flag can fire, none should.
      level    the synthetic op `delay` with a level change injected (MPITEMPO_TEST_DELAY_STEP, a test
               knob of the core): run_level = one run of 8 at FACTOR_RUN x the delay (outlier_runs
               should fire), half_level = every odd run at FACTOR_HALF x (multimodal), step = in every
               run the measurements after the first 40% at FACTOR_STEP x (regime_change); 16 configs
               (rows) each.
      busy     busy_one = one run of 8 with a busy process on each CPU for the whole mpirun (shared_cpu),
               busy_all = all runs so (shared_cpu; sync_inaccurate and compute_miscalibrated are
               recorded too); 10 and 4 configs, with delay, idelay_overlap and --sync hca3.
      oversub  np 4 on the 2 CPUs (oversubscribed), 10 configs x delay.
  analyse DIR... --out FILE  loads every campaign found, computes per row (config, op, size, np) the
                           statistic behind each flag, and for each flag its false-alarm rate (null
                           rows flagged) and detection rate (rows of the injection it is meant to
                           catch flagged) at the thresholds in the code and over a sweep of
                           candidate thresholds. Rates come with their Wilson 95% interval.

Per-run injection (one run of a config) goes through a launcher wrapper (DIR/inject.py) that reads
--config and --run-index from the core's command line and sets the knob or starts the busy
processes for that mpirun only.
usage: bench/flag_rates.py measure PART [PART...] --out DIR [--budget S]   (repeat until every part is complete)
       bench/flag_rates.py analyse DIR [DIR...] [--out bench/results/flag_rates.json]
"""
from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

MPIRUNS = 8
NREP = 200
WARMUP = 10                  # fixed in the level part: the step's position counts warm-up calls
DELAY = "20us"
FACTOR_RUN = 4.0             # one run 4x: "far off its siblings" (outlier_runs: >= 3x)
FACTOR_HALF = 1.25           # half the runs 25% slower: two levels of runs (multimodal)
FACTOR_STEP = 1.25           # the level changes by 25% inside each run (regime_change) ...
STEP_AT = 2 * NREP // 5      # ... after 40% of the measurements (not 50%: the run median stays in one level)
TARGET_FALSE = 0.05
TARGET_DETECT = 0.95

WRAPPER = r'''#!/usr/bin/env python3
"""flag_rates launcher wrapper: PLAN {mpiexec ... cmd}; injects for the run named in PLAN."""
import json, os, signal, subprocess, sys
plan = json.load(open(sys.argv[1]))
args = sys.argv[2:]
def arg(k):
    return args[args.index(k) + 1] if k in args else None
inj = plan.get(f"{arg('--config')}:{arg('--run-index')}", {})
env = dict(os.environ, **inj.get("env", {}))
busy = []
for cpu in inj.get("busy_cpus", []):
    busy.append(subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]))
try:
    rc = subprocess.call(args, env=env)
finally:
    for p in busy:
        p.send_signal(signal.SIGKILL)
        p.wait()
sys.exit(rc)
'''


def _toml(name: str, configs: list[dict], common: dict) -> str:
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        return str(v)
    lines = [f'name = "{name}"', 'order = "interleave"', "seed = 2026"]
    lines += [f"{k} = {val(v)}" for k, v in common.items()]
    for c in configs:
        lines.append("\n[[config]]")
        lines += [f"{k} = {val(v)}" for k, v in c.items()]
    return "\n".join(lines) + "\n"


def _launcher(d: Path) -> str:
    from mpitempo.build import ensure_build
    from mpitempo.runner.launch import default_template

    b = ensure_build()
    tpl = default_template(b, 2)[0]
    return f"{sys.executable} {d / 'inject.py'} {d / 'plan.json'} " + tpl


def plan_part(part: str, d: Path, smoke: bool = False) -> list[tuple[str, str]]:
    """[(campaign name, toml text)] of a part; writes the wrapper and its plan into d. smoke: 2
    configurations of each kind (a check that the part runs, not a measurement)."""
    plan: dict = {}

    def n(k):
        return min(k, 2) if smoke else k
    if part == "null":
        cfgs = [{"name": f"n{i:02d}"} for i in range(n(10))]
        common = {"np": 2, "mpiruns": MPIRUNS, "ops": ["allreduce", "bcast", "delay", "idelay_overlap"],
                  "msizes": "8,4K", "nrep": NREP, "warmup": "auto", "sync": "hca3", "delay": DELAY}
        return [("null", _toml("flag-rates-null", cfgs, common))]
    if part == "oversub":
        cfgs = [{"name": f"oversub{i:02d}"} for i in range(n(10))]
        common = {"np": 4, "mpiruns": 3, "ops": ["delay"], "nrep": 100, "warmup": WARMUP, "delay": DELAY}
        return [("oversub", _toml("flag-rates-oversub", cfgs, common))]
    launcher = _launcher(d)
    cfgs = []
    if part == "level":
        for i in range(n(16)):
            c = f"run_level{i:02d}"
            plan[f"{c}:{i % MPIRUNS}"] = {"env": {"MPITEMPO_TEST_DELAY_STEP": f"0:{FACTOR_RUN}"}}
            cfgs.append({"name": c, "launcher": launcher})
        for i in range(n(16)):
            c = f"half_level{i:02d}"
            for r in range(1, MPIRUNS, 2):
                plan[f"{c}:{r}"] = {"env": {"MPITEMPO_TEST_DELAY_STEP": f"0:{FACTOR_HALF}"}}
            cfgs.append({"name": c, "launcher": launcher})
        for i in range(n(16)):
            cfgs.append({"name": f"step{i:02d}",
                         "env": {"MPITEMPO_TEST_DELAY_STEP": f"{WARMUP + STEP_AT}:{FACTOR_STEP}"}})
        common = {"np": 2, "mpiruns": MPIRUNS, "ops": ["delay"], "nrep": NREP, "warmup": WARMUP, "delay": DELAY}
    elif part == "busy":
        ncpu = len(os.sched_getaffinity(0))
        for i in range(n(10)):
            c = f"busy_one{i:02d}"
            plan[f"{c}:{i % MPIRUNS}"] = {"busy_cpus": list(range(ncpu))}
            cfgs.append({"name": c, "launcher": launcher})
        for i in range(n(4)):
            c = f"busy_all{i:02d}"
            for r in range(MPIRUNS):
                plan[f"{c}:{r}"] = {"busy_cpus": list(range(ncpu))}
            cfgs.append({"name": c, "launcher": launcher})
        common = {"np": 2, "mpiruns": MPIRUNS, "ops": ["delay", "idelay_overlap"],
                  "nrep": NREP, "warmup": WARMUP, "sync": "hca3", "delay": DELAY}
    else:
        raise SystemExit(f"unknown part '{part}' (allowed: null, level, busy, oversub)")
    (d / "inject.py").write_text(WRAPPER)
    (d / "plan.json").write_text(json.dumps(plan, indent=1))
    return [(part, _toml(f"flag-rates-{part}", cfgs, common))]


def wait_idle(limit_s: float = 240.0) -> list[float]:
    t0 = time.monotonic()
    while os.getloadavg()[0] >= 0.5 and time.monotonic() - t0 < limit_s:
        time.sleep(5)
    return list(os.getloadavg())


def measure(parts: list[str], out: Path, smoke: bool = False, budget_s: float = 570.0, shared: bool = False) -> int:
    """Run the parts' campaigns in one hold of the CPU lock (exclusive; shared with --smoke), after
    waiting up to 4 minutes for a load average < 0.5. The hold ends after budget_s (the wait
    included): a campaign still running then is interrupted (Ctrl-C: its complete runs stay) and the
    next `measure` of that part resumes it (`mpitempo run --resume`)."""
    import signal

    out.mkdir(parents=True, exist_ok=True)
    lock = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock"), "w")
    shared = shared or smoke
    fcntl.flock(lock, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    t_hold = time.monotonic()
    hold = {"parts": parts, "smoke": smoke, "shared_lock": shared, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    rc = 0
    try:
        hold["loadavg_start"] = list(os.getloadavg()) if shared else wait_idle()
        hold["waited_for_idle_s"] = round(time.monotonic() - t_hold, 1)
        for part in parts:
            left = budget_s - (time.monotonic() - t_hold)
            if left < 30:
                hold.setdefault("not_started", []).append(part)
                continue
            dest = out / f"{part}-campaign"
            if dest.is_dir():
                cmd = ["run", "--resume", str(dest), "--yes"]
            else:
                camps = plan_part(part, out, smoke)
                f = out / f"{part}.toml"
                f.write_text(camps[0][1])
                cmd = ["run", str(f), "-o", str(dest)]
            t0 = time.monotonic()
            load0 = list(os.getloadavg())
            with open(out / f"{part}.log", "a") as log:
                p = subprocess.Popen([sys.executable, "-m", "mpitempo.cli", *cmd], stdout=log, stderr=log,
                                     start_new_session=True,
                                     env=dict(os.environ, PYTHONPATH=str(HERE.parent / "python")))
                try:
                    code = p.wait(timeout=left)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGINT)
                    try:
                        code = p.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGKILL)
                        code = p.wait()
                    code = f"interrupted ({code}): resume with the same command"
            rec = {"part": part, "command": " ".join(["mpitempo", *cmd]), "exit": code,
                   "wall_s": round(time.monotonic() - t0, 1), "loadavg_start": load0,
                   "loadavg_end": list(os.getloadavg()), "date": hold["date"], "smoke": smoke, "shared_lock": shared}
            prev = json.loads((out / f"{part}.json").read_text()) if (out / f"{part}.json").is_file() else {}
            rec["holds"] = prev.get("holds", []) + [{k: rec[k] for k in ("command", "exit", "wall_s", "loadavg_start",
                                                                            "loadavg_end")}]
            rec["loadavg_start_of_hold"] = hold["loadavg_start"]
            (out / f"{part}.json").write_text(json.dumps(rec, indent=1))
            print(json.dumps(rec), flush=True)
            if code not in (0, 3) and not isinstance(code, str):
                rc = 1
        hold["held_s"] = round(time.monotonic() - t_hold, 1)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
    print(json.dumps(hold), flush=True)
    return rc


# ---------------------------------------------------------------- analysis

def wilson(k: int, n: int) -> list[float] | None:
    if n == 0:
        return None
    z = 1.959964
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, c - h), min(1.0, c + h)]


def injection_of(config: str, part: str) -> str:
    for k in ("run_level", "half_level", "step", "busy_one", "busy_all", "oversub"):
        if config.startswith(k):
            return k
    return "null" if part == "null" else "unknown"


TARGET = {"run_level": ["outlier_runs"], "half_level": ["multimodal"], "step": ["regime_change"],
          "busy_one": ["shared_cpu"], "busy_all": ["shared_cpu"], "oversub": ["oversubscribed"]}


def row_stats(camp: Path) -> list[dict]:
    """Per summary row: its flags (as `mpitempo summary` computes them) and the statistic of each flag."""
    import numpy as np

    from mpitempo.analysis.flags import campaign_metas, run_facts, compute_off_runs
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.analysis.summary import per_run_table, summary_rows
    from mpitempo.stats.outliers import Filter

    data = open_campaigns([camp])
    filt = Filter()
    pr = per_run_table(data.con, filt)
    rows = summary_rows(data, filt, per_run=pr)
    metas = campaign_metas(data)
    series: dict = {}
    a = data.con.execute("SELECT config, op, msize, nprocs, run_id, runtime_s FROM meas WHERE valid "
                         "ORDER BY config, op, msize, nprocs, run_id, rep").fetchnumpy()
    keys = list(zip(a["config"], a["op"], a["msize"], a["nprocs"], a["run_id"]))
    rt = np.asarray(a["runtime_s"], dtype=float)
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            k = keys[start]
            series.setdefault((str(k[0]), str(k[1]), int(k[2]), int(k[3])), []).append(rt[start:i])
            start = i
    by: dict = {}
    for r in pr:
        by.setdefault((r["config"], r["op"], int(r["msize"]), int(r["nprocs"])), []).append(r)
    out = []
    for r in rows:
        key = (r["config"], r["op"], int(r["msize"]), int(r["nprocs"]))
        runs = sorted(by.get(key, []), key=lambda x: x["run_index"])
        m = metas.get(r["campaign"], {})
        ok = [x for x in runs if x.get("n") and x.get("median_s") is not None]   # as analysis.flags.group_flags
        facts = [run_facts(m.get(x["run_id"], {})) for x in runs]
        exps = []
        for x in runs:
            for e in (m.get(x["run_id"], {}).get("experiments") or []):
                if e.get("op") == r["op"] and e.get("msize") == r["msize"]:
                    exps.append(e)
        off = compute_off_runs([dict(x, op=r["op"], msize=r["msize"]) for x in runs], m)
        from mpitempo.analysis.derived import compute_deviation, exp_info, pure_op
        devs = []
        if pure_op(r["op"]) is not None:
            for x in runs:
                ov = exp_info(m.get(x["run_id"], {}), r["op"], r["msize"]).get("overlap")
                d = compute_deviation(ov) if isinstance(ov, dict) else None
                if d is not None:
                    devs.append(d)
        out.append({"config": r["config"], "op": r["op"], "msize": int(r["msize"]), "nprocs": int(r["nprocs"]),
                    "flags": list(r.get("flags") or []),
                    "medians": [float(x["median_s"]) for x in ok],
                    "series": [s for s in series.get(key, [])],
                    "min_cpu_share": [f["min_cpu_share"] for f in facts],
                    # every rank's (CPU share, run-delay share) of the start-up check, per run
                    "rank_shares": [[(q.get("cpu_share"), q.get("run_delay_share"))
                                     for q in (m.get(x["run_id"], {}).get("ranks") or []) if isinstance(q, dict)]
                                    for x in runs],
                    "shared": [bool(f["shared_cpu"]) for f in facts],
                    "oversubscribed": any(f["oversubscribed"] for f in facts),
                    "sync_max_s": [f["sync_max_s"] for f in facts if f["synced"]],
                    "sync_preempted": [f["sync_preempted"] for f in facts if f["synced"]],
                    "core_rtt_s": [run_facts(m.get(x["run_id"], {}))["core_rtt_s"] for x in ok],
                    "compute_dev": devs, "compute_off": len(off),
                    "warmup_capped": sum(bool(e.get("warmup_capped")) for e in exps)})
    return out


def detectors(thr: dict):
    """flag -> function(row) -> bool, at the thresholds thr (the code's when not given)."""
    from mpitempo.stats import changepoints, modes, strata

    def with_consts(mod, values, fn):
        old = {k: getattr(mod, k) for k in values}
        for k, v in values.items():
            setattr(mod, k, v)
        try:
            return fn()
        finally:
            for k, v in old.items():
                setattr(mod, k, v)

    from mpitempo.analysis import flags as F

    def level_flags(r):
        """analysis.flags.group_flags on the row's run medians and probes, at thr."""
        rows = [{"run_id": f"r{i}", "run_index": i, "n": 1, "outliers": 0, "median_s": m, "op": "-", "msize": 0}
                for i, m in enumerate(r["medians"])]
        metas = {f"r{i}": ({"core_latency": {"before": {"rtt_median_s": c}}} if c is not None else {})
                 for i, c in enumerate(r["core_rtt_s"])}
        return with_consts(modes, {"GAP_FACTOR": thr["GAP_FACTOR"], "RATIO_GROSS": thr["RATIO_GROSS"]},
                           lambda: with_consts(F, {"STRATA_MIN_EFFECT": thr["STRATA_MIN_EFFECT"]},
                                               lambda: set(F.group_flags(rows, metas)["flags"])))

    def multimodal(r):
        return "multimodal" in level_flags(r)

    def outlier(r):
        return "outlier_runs" in level_flags(r)

    def core(r):
        return "core_latency" in level_flags(r)

    def regime(r):
        return with_consts(changepoints, {"Z_MIN": thr["Z_MIN"], "MIN_REL_SHIFT": thr["MIN_REL_SHIFT"]},
                           lambda: any(len(changepoints.change_points(s)) > 0 for s in r["series"]))

    def shared(r):
        if r["oversubscribed"]:
            return True
        if "rank_shares" not in r:   # a row analysed before the run delay was recorded
            return any(s is not None and s < thr["CPU_SHARE_MIN"] for s in r["min_cpu_share"])
        return any(F.cpu_share_low(s, d, thr["CPU_SHARE_MIN"], thr["RUN_DELAY_MIN"], thr["CPU_SHARE_GROSS"])
                   for run in r["rank_shares"] for s, d in run if isinstance(s, (int, float)))

    def sync(r):
        return any(s is not None and s > thr["SYNC_ACCURACY_S"] for s in r["sync_max_s"]) or any(r["sync_preempted"])

    def compute(r):
        return any(d > thr["COMPUTE_TOLERANCE"] for d in r["compute_dev"])

    return {"zero_time": lambda r: any(m == 0 for m in r["medians"]),   # a run median of exactly 0 s
            "oversubscribed": lambda r: r["oversubscribed"], "shared_cpu": shared, "outlier_runs": outlier,
            "multimodal": multimodal, "sync_inaccurate": sync, "regime_change": regime, "core_latency": core,
            "compute_miscalibrated": compute, "warmup_capped": lambda r: r["warmup_capped"] > 0}


def code_thresholds() -> dict:
    from mpitempo.analysis import flags
    from mpitempo.stats import changepoints, modes, strata

    return {"GAP_FACTOR": modes.GAP_FACTOR, "RATIO_GROSS": modes.RATIO_GROSS, "Z_MIN": changepoints.Z_MIN,
            "MIN_REL_SHIFT": changepoints.MIN_REL_SHIFT, "CPU_SHARE_MIN": getattr(flags, "CPU_SHARE_MIN", 0.8),
            "RUN_DELAY_MIN": getattr(flags, "RUN_DELAY_MIN", 0.0), "CPU_SHARE_GROSS": getattr(flags, "CPU_SHARE_GROSS", 0.0),
            "SYNC_ACCURACY_S": flags.SYNC_ACCURACY_S, "STRATA_RATIO": strata.RATIO,
            "STRATA_MIN_EFFECT": flags.STRATA_MIN_EFFECT,
            "COMPUTE_TOLERANCE": flags.COMPUTE_TOLERANCE}


SWEEP = {"GAP_FACTOR": [4, 6, 8, 10, 12, 16, 20], "RATIO_GROSS": [1.5, 2, 2.5, 3, 4],
         "Z_MIN": [8, 12, 16, 24, 32], "MIN_REL_SHIFT": [0.05, 0.10, 0.15, 0.2, 0.3],
         "STRATA_MIN_EFFECT": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "CPU_SHARE_MIN": [0.5, 0.6, 0.7, 0.75, 0.8, 0.9],
         "RUN_DELAY_MIN": [0.0, 0.02, 0.05, 0.1, 0.2], "CPU_SHARE_GROSS": [0.0, 0.3, 0.5, 0.6], "COMPUTE_TOLERANCE": [0.02, 0.05, 0.1, 0.2],
         "SYNC_ACCURACY_S": [1e-6, 2e-6, 5e-6]}
FLAG_OF = {"CPU_SHARE_MIN": "shared_cpu", "RUN_DELAY_MIN": "shared_cpu", "CPU_SHARE_GROSS": "shared_cpu", "GAP_FACTOR": "multimodal", "RATIO_GROSS": "outlier_runs", "Z_MIN": "regime_change",
           "MIN_REL_SHIFT": "regime_change", "STRATA_MIN_EFFECT": "core_latency", "COMPUTE_TOLERANCE": "compute_miscalibrated",
           "SYNC_ACCURACY_S": "sync_inaccurate"}


def rates(rows: list[dict], thr: dict) -> dict:
    det = detectors(thr)
    out = {}
    for flag, fn in det.items():
        null = [r for r in rows if r["injection"] == "null"]
        k = sum(bool(fn(r)) for r in null)
        rec = {"false_alarms": k, "null_rows": len(null), "false_rate": k / len(null) if null else None,
               "false_ci": wilson(k, len(null)), "detection": {}}
        for inj, targets in TARGET.items():
            rs = [r for r in rows if r["injection"] == inj]
            if not rs:
                continue
            kk = sum(bool(fn(r)) for r in rs)
            rec["detection"][inj] = {"fired": kk, "rows": len(rs), "rate": kk / len(rs), "ci": wilson(kk, len(rs)),
                                     "target": flag in targets}
        out[flag] = rec
    return out


def analyse(dirs: list[Path], out: Path) -> int:
    rows, loads, libraries = [], [], set()
    for d in dirs:
        for camp in sorted(d.glob("*-campaign")):
            part = camp.name[: -len("-campaign")]
            for m in sorted(camp.glob("runs/*/meta.json")):   # which MPI library measured (rates differ)
                libraries.add(json.loads(m.read_text()).get("mpi", {}).get("library", "unknown"))
            for r in row_stats(camp):
                r["injection"] = injection_of(r["config"], part)
                r["part"] = part
                rows.append(r)
        for j in sorted(d.glob("*.json")):
            if j.name != "plan.json":
                loads.append(json.loads(j.read_text()))
    thr = code_thresholds()
    res = {"thresholds": thr, "targets": {"false_rate_max": TARGET_FALSE, "detection_min": TARGET_DETECT},
           "injections": {"run_level": f"one run of {MPIRUNS} at {FACTOR_RUN}x the delay",
                          "half_level": f"the odd runs of {MPIRUNS} at {FACTOR_HALF}x",
                          "step": f"from measurement {STEP_AT + 1} of {NREP} on {FACTOR_STEP}x, every run",
                          "busy_one": f"a busy process on each CPU during one run of {MPIRUNS}",
                          "busy_all": "a busy process on each CPU during every run", "oversub": "np 4 on 2 CPUs"},
           "measurements": loads, "mpi_libraries": sorted(libraries), "rows": len(rows),
           "rows_by_injection": {k: sum(r["injection"] == k for r in rows) for k in sorted({r["injection"] for r in rows})},
           "at_code_thresholds": rates(rows, thr), "sweep": {}}
    # the flags summary computed, for a check that the detectors here are the code's
    det = detectors(thr)
    res["detector_agrees_with_summary"] = {f: sum(bool(det[f](r)) == (f in r["flags"]) for r in rows) / len(rows)
                                           for f in det if rows}
    for name, values in SWEEP.items():
        flag = FLAG_OF[name]
        res["sweep"][name] = []
        for v in values:
            t = dict(thr, **{name: v})
            rr = rates(rows, t)[flag]
            res["sweep"][name].append({"value": v, "false_rate": rr["false_rate"],
                                       "detection": {k: x["rate"] for k, x in rr["detection"].items() if x["target"]}})
    # per swept threshold: the smallest value (the most sensitive) whose false-alarm rate is within target
    res["smallest_within_target"] = {}
    for name, pts in res["sweep"].items():
        ok = [p for p in pts if p["false_rate"] is not None and p["false_rate"] <= TARGET_FALSE]
        if name == "SYNC_ACCURACY_S" or name == "COMPUTE_TOLERANCE":
            ok = ok[:1]
        res["smallest_within_target"][name] = ok[0] if ok else None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    for name, pts in res["sweep"].items():
        print(f"sweep {name}: " + "; ".join(
            f"{p['value']:g}: false {100 * p['false_rate']:.0f}%" if p["false_rate"] is not None else f"{p['value']:g}: -"
            for p in pts) + "  | detection " + "; ".join(
            f"{p['value']:g}: " + ",".join(f"{k} {100 * v:.0f}%" for k, v in p["detection"].items()) for p in pts))
    for f, rec in res["at_code_thresholds"].items():
        det_txt = ", ".join(f"{k} {x['fired']}/{x['rows']}" for k, x in rec["detection"].items() if x["target"])
        print(f"{f:22s} false {rec['false_alarms']}/{rec['null_rows']}  detect {det_txt or '-'}")
    print(markdown(res))
    print(f"wrote {out}")
    return 0


THRESHOLDS_OF = {"oversubscribed": "", "shared_cpu": "CPU_SHARE_MIN, RUN_DELAY_MIN, CPU_SHARE_GROSS", "outlier_runs": "RATIO_GROSS",
                 "multimodal": "GAP_FACTOR, MIN_RUNS", "sync_inaccurate": "SYNC_ACCURACY_S",
                 "regime_change": "Z_MIN, MIN_REL_SHIFT, MIN_SEG", "core_latency": "STRATA_RATIO, STRATA_MIN_GAP, "
                 "STRATA_MIN_EFFECT", "compute_miscalibrated": "COMPUTE_TOLERANCE", "warmup_capped": ""}


def markdown(res: dict) -> str:
    """The rates table of docs/methods.md ("Flag rates") from an analysis result."""
    from mpitempo.analysis.flags import FLAG_NAMES, FLAG_SEVERITY

    def rate(k, n, ci):
        return f"{k}/{n} ({100 * k / n:.0f}%, CI {100 * ci[0]:.0f}-{100 * ci[1]:.0f}%)" if n else "-"
    lines = ["| flag | severity | false alarms (identical configurations) | detection (injection: rows flagged) |",
             "|---|---|---|---|"]
    at = res["at_code_thresholds"]
    for f in FLAG_NAMES:
        if f not in at:
            continue
        r = at[f]
        det = "; ".join(f"{k}: {rate(x['fired'], x['rows'], x['ci'])}" for k, x in r["detection"].items() if x["target"])
        lines.append(f"| `{f}` | {FLAG_SEVERITY[f]} | {rate(r['false_alarms'], r['null_rows'], r['false_ci'] or [0, 0])} "
                     f"| {det or '-'} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="run one part's campaigns under the exclusive CPU lock")
    m.add_argument("parts", nargs="+", choices=["null", "level", "busy", "oversub"])
    m.add_argument("--budget", type=float, default=570.0, help="seconds of one hold of the lock, the wait for an "
                   "idle machine included (default 570: under 10 minutes)")
    m.add_argument("--out", required=True, type=Path, help="directory for the campaigns")
    m.add_argument("--shared", action="store_true", help="take the lock shared and do not wait for an idle machine: "
                   "a pilot on a loaded machine (its rates are not the idle machine's)")
    m.add_argument("--smoke", action="store_true", help="2 configurations per kind under the shared lock: "
                   "checks that the part runs (not a measurement)")
    an = sub.add_parser("analyse", help="rates at the code's thresholds and over a sweep")
    an.add_argument("dirs", nargs="+", type=Path)
    an.add_argument("--out", type=Path, default=HERE / "results" / "flag_rates.json")
    a = ap.parse_args()
    if a.cmd == "measure":
        return measure(a.parts, a.out, a.smoke, a.budget, a.shared)
    return analyse(a.dirs, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
