#!/usr/bin/env python3
"""Benchmark: the tracer's clock error at the end of a trace against a known truth (issue 33).

examples/trace/amg_like.c (ITERS iterations, 2 ranks) traced with `mpitempo trace run` and rank 1's
clock given a drift of 0, 50 and 200 ppm:
  sim  the simulated clock (MPITEMPO_SIM_OFFSETS 0,0.003, MPITEMPO_SIM_DRIFTS 0,PPM): the true
       time of every raw timestamp is known; reported: rank 1's error on the global clock
       (relative to rank 0's) at the start (median of the first 5% of its events) and at the end
       (the last 5%), in ns, and the accuracy at the end the tracer states (trace.json
       sync.offset_at_end_per_rank_s[1]);
  os   libfaketime's rate at the OS level (bench/os_clock_wrap.sh, --sync hca3): the truth is known
       up to a constant per rank, so the error's growth from start to end is reported.
Also the correction the tracer applied at the end and the run's length. Holds the CPU lock; records
the load average. Results: bench/results/trace_drift.json and a Markdown table on stdout.

usage: bench/trace_drift.py [--iters N] [--repeat K] [--modes sim,os]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run(mode: str, ppm: float, iters: int, work: Path, exe: str) -> dict:
    from mpitempo.analysis.trace import load

    out = work / f"{mode}-{ppm:g}-{len(list(work.iterdir()))}"
    cli = Path(sys.executable).parent / "mpitempo"
    if mode == "sim":
        env, opts = {"MPITEMPO_SIM_OFFSETS": "0,0.003", "MPITEMPO_SIM_DRIFTS": f"0,{ppm:g}"}, []
    else:
        env = {"MT_OS_DRIFTS_PPM": f"0,{ppm:g}", "MT_OS_OFFSETS_S": "0,0.002"}
        opts = ["--sync", "hca3", "--launcher", "{mpiexec} -n {np} " + str(ROOT / "bench/os_clock_wrap.sh") + " {cmd}"]
    r = subprocess.run([str(cli), "trace", "run", "--json", "-n", "2", *opts, "-o", str(out), "--", exe,
                        "--iters", str(iters)], capture_output=True, text=True, env=dict(os.environ, **env))
    if r.returncode != 0:
        return {"mode": mode, "ppm": ppm, "error": r.stderr.strip()[-300:]}
    res = json.loads(r.stdout)
    _, ev = load(out)
    rk = ev["rank"].astype(int)
    if mode == "sim":
        off, dr = np.array([0, 0.003])[rk], np.array([0, ppm * 1e-6])[rk]
        err = ev["t_enter_s"] - (ev["t_enter_raw_s"] - off) / (1 + dr)
    else:
        err = ev["t_enter_s"] - ev["t_enter_raw_s"] / np.array([1.0, 1 + ppm * 1e-6])[rk]

    def ends(k):
        sel = rk == k
        x = err[sel][np.argsort(ev["t_enter_raw_s"][sel], kind="stable")]
        m = max(1, len(x) // 20)
        return float(np.median(x[:m])), float(np.median(x[-m:]))

    (s0, e0), (s1, e1) = ends(0), ends(1)
    sync = json.loads((out / "trace.json").read_text())["sync"]
    row = {"mode": mode, "ppm": ppm, "violations_global": res["violations_global"], "run_s": sync.get("run_s"),
           "correction_ns": sync["drift_at_end_per_rank_s"][1] * 1e9, "end_correction": sync.get("end_correction"),
           "stated_end_ns": (sync.get("offset_at_end_per_rank_s") or [None, None])[1]}
    if row["stated_end_ns"] is not None:
        row["stated_end_ns"] *= 1e9
    if mode == "sim":
        row.update(start_ns=(s1 - s0) * 1e9, end_ns=(e1 - e0) * 1e9)
    else:
        row.update(growth_ns=((e1 - s1) - (e0 - s0)) * 1e9)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--modes", default="sim,os")
    a = ap.parse_args()
    import fcntl

    lock = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    mpicc = str(Path(sys.executable).parent / "mpicc")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        exe = str(work / "amg_like")
        subprocess.run([mpicc, "-O2", "-o", exe, str(ROOT / "examples/trace/amg_like.c")], check=True)
        runs = work / "runs"
        runs.mkdir()
        load0 = os.getloadavg()[0]
        for _ in range(a.repeat):
            for mode in a.modes.split(","):
                for ppm in (0, 50, 200):
                    rows.append(run(mode, ppm, a.iters, runs, exe))
        load1 = os.getloadavg()[0]
    res = {"iters": a.iters, "load_before": load0, "load_after": load1, "rows": rows}
    (ROOT / "bench/results").mkdir(exist_ok=True)
    (ROOT / "bench/results/trace_drift.json").write_text(json.dumps(res, indent=1) + "\n")
    f = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    print(f"load average {load0:.1f} -> {load1:.1f}; amg_like --iters {a.iters}, 2 ranks\n")
    print("| mode | ppm | run s | error at start ns | error at end ns | growth ns | stated at end ns | correction ns | violations |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['mode']} | {r['ppm']:g} | failed: {r['error'][:80]} |")
            continue
        print(f"| {r['mode']} | {r['ppm']:g} | {r['run_s']:.2f} | {f(r.get('start_ns'))} | {f(r.get('end_ns'))} | "
              f"{f(r.get('growth_ns'))} | {f(r['stated_end_ns'])} | {f(r['correction_ns'])} | {r['violations_global']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
