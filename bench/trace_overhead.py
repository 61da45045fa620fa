#!/usr/bin/env python3
"""Benchmark: per-call overhead of libmpitempo-trace.so (issue target: at most 100 ns plus the
timer cost per intercepted call).

For each record class (bench/trace_overhead.c: coll = MPI_Allreduce, p2p = MPI_Sendrecv,
request = Irecv + Isend + Waitall, persistent = Startall + Waitall, probe = an Iprobe that finds
nothing, nbc = Iallreduce + Wait; 4 B on MPI_COMM_SELF) one rank makes N iterations per round,
ROUNDS rounds per mpirun (compiled with the MPI of the core), in separate mpiruns interleaved
over REPEAT repetitions:
  plain       no tracer
  forward     tracer preloaded, the class's calls not selected (the wrappers only forward)
  <timer>     tracer recording every call with that timer (coll: monotonic, gettimeofday,
              rdtscp; the other classes: monotonic, the default)
Per mpirun the median over rounds of the time per call; per configuration the median over
mpiruns (and the fastest round of all). overhead = config - plain; the timer cost is two reads of
that timer (enter and exit; the fastest of 20 rounds of 100000 back-to-back reads in the same program); net = overhead - timer cost is what the target bounds.
Holds the CPU lock (${TMPDIR:-/tmp}/mpitempo-cpu.lock) while measuring and records the load
average, so a run on a busy machine says so. Results: bench/results/trace_overhead.json and a
Markdown table on stdout.

With --lib-b PATH (another build of libmpitempo-trace.so, e.g. of an earlier commit) the
configuration "monotonic-b" records with that library, interleaved with the others: the
difference monotonic - monotonic-b is what a change of the tracer costs per call (the call-site
address of each record: docs/benchmarks.md). --wait-idle S polls the load average for up to S
seconds after taking the lock, until it is below 0.5.

usage: bench/trace_overhead.py [--calls N] [--rounds R] [--repeat K] [--classes LIST] [--mpicc PATH]
                               [--lib-b PATH] [--wait-idle S]
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from mpitempo.build import ensure_build  # noqa: E402
from mpitempo.cmd_trace import find_library  # noqa: E402
from mpitempo.runner.launch import make_launch  # noqa: E402

TIMERS = ("monotonic", "gettimeofday", "rdtscp")
# the calls each class makes (the tracer's call ids, src/trace/trace_calls.def)
CLASSES = {"coll": "allreduce", "p2p": "sendrecv", "request": "irecv,isend,waitall",
           "persistent": "send_init,recv_init,startall,waitall", "probe": "iprobe", "nbc": "iallreduce,wait"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=101)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--classes", default=",".join(CLASSES), help="record classes (default: all)")
    ap.add_argument("--mpicc", default=None)
    ap.add_argument("--out", default=str(HERE / "results" / "trace_overhead.json"))
    ap.add_argument("--lib-b", default=None, help="another libmpitempo-trace.so: config monotonic-b")
    ap.add_argument("--wait-idle", type=float, default=0, help="seconds to wait for a load average < 0.5")
    a = ap.parse_args()
    classes = [c for c in a.classes.split(",") if c]
    bad = [c for c in classes if c not in CLASSES]
    if bad or not classes:
        raise SystemExit(f"--classes: unknown class {bad[0] if bad else '(none)'!r}; choose from {', '.join(CLASSES)}")
    b = ensure_build(a.mpicc)
    lib = find_library(b)
    work = Path(tempfile.mkdtemp(prefix="mt-trace-bench-"))
    exe = work / "trace_overhead"
    subprocess.run([b.mpicc, "-O2", "-o", str(exe), str(HERE / "trace_overhead.c")], check=True)
    nev = a.calls * (a.rounds + 1) + 100
    nev *= 3   # up to 3 calls and their completion records per iteration
    configs = {}
    for c in classes:
        configs[(c, "plain")] = None
        configs[(c, "forward")] = {"MPITEMPO_TRACE_CALLS": "barrier", "MPITEMPO_TRACE_TIMER": "monotonic"}
        for t in (TIMERS if c == "coll" else TIMERS[:1]):
            configs[(c, t)] = {"MPITEMPO_TRACE_CALLS": CLASSES[c], "MPITEMPO_TRACE_TIMER": t}
        if a.lib_b:
            configs[(c, "monotonic-b")] = {"MPITEMPO_TRACE_CALLS": CLASSES[c], "MPITEMPO_TRACE_TIMER": "monotonic"}
    per: dict[str, list[float]] = {k: [] for k in configs}
    per_min: dict[str, list[float]] = {k: [] for k in configs}
    reads: dict[str, list[float]] = {t: [] for t in TIMERS}
    lock = Path(os.environ.get("TMPDIR", "/tmp")) / "mpitempo-cpu.lock"
    with open(lock, "w") as lk:
        t_wait = time.monotonic()
        fcntl.flock(lk, fcntl.LOCK_EX)
        print(f"CPU lock after {time.monotonic() - t_wait:.1f} s", file=sys.stderr)
        t_idle = time.monotonic()
        while os.getloadavg()[0] >= 0.5 and time.monotonic() - t_idle < a.wait_idle:
            time.sleep(5)
        load0 = os.getloadavg()
        for i in range(a.repeat):
            for key, env_add in configs.items():
                cls, name = key
                cmd = [str(exe), str(a.calls), str(a.rounds), cls]
                if env_add:
                    d = work / f"{cls}-{name}-{i}"
                    cmd = ["env", f"LD_PRELOAD={a.lib_b if name == 'monotonic-b' else lib}", f"MPITEMPO_TRACE_DIR={d}",
                           f"MPITEMPO_TRACE_BUFFER={nev}",
                           "MPITEMPO_TRACE_SYNC=none", *[f"{k}={v}" for k, v in env_add.items()], *cmd]
                launch = make_launch(b, 1, cmd)
                r = subprocess.run(launch.argv, capture_output=True, text=True, env=dict(os.environ, **launch.env),
                                   check=True)
                res = json.loads(r.stdout.strip().splitlines()[-1])
                per[key].append(statistics.median(res["call_ns"]))
                per_min[key].append(min(res["call_ns"]))
                for t in TIMERS:
                    reads[t].append(res["read_ns"][t])
                if env_add:
                    meta = json.loads((d / "trace.json").read_text())
                    got = meta["buffer"]["events_recorded"] - 2   # the MPI_Init and MPI_Finalize regions
                    if name != "forward" and got < a.calls * a.rounds:
                        raise SystemExit(f"{cls}/{name}: only {got} events recorded")
                    if name == "forward" and got != 0:
                        raise SystemExit(f"{cls}/forward: {got} calls recorded, expected 0")
                    subprocess.run(["rm", "-rf", str(d)], check=True)
            print(f"repetition {i + 1}/{a.repeat}: " + ", ".join(f"{'/'.join(k)} {v[-1]:.1f} ns" for k, v in per.items()),
                  file=sys.stderr)
        load1 = os.getloadavg()
    subprocess.run(["rm", "-rf", str(work)], check=True)
    rows = []
    for (cls, name), v in per.items():
        base = statistics.median(per[(cls, "plain")])
        base_min = min(per_min[(cls, "plain")])
        key = (cls, name)
        med = statistics.median(v)
        row = {"class": cls, "calls": CLASSES[cls], "config": name, "call_ns": med, "call_ns_min": min(v),
               "call_ns_max": max(v), "overhead_ns": med - base, "fastest_round_ns": min(per_min[key]),
               "overhead_fastest_ns": min(per_min[key]) - base_min}
        if name in TIMERS or name == "monotonic-b":
            row["timer_cost_ns"] = 2 * min(reads[name.removesuffix("-b")])
            row["net_overhead_ns"] = row["overhead_ns"] - row["timer_cost_ns"]
            row["net_overhead_fastest_ns"] = row["overhead_fastest_ns"] - row["timer_cost_ns"]
        rows.append(row)
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
              "mpi": b.mpiexec_version, "calls_per_round": a.calls, "rounds": a.rounds, "repeat": a.repeat,
              "loadavg_before": load0, "loadavg_after": load1,
              "idle": max(load0[0], load1[0]) < 1.5, "rows": rows, "lib_b": a.lib_b,
              "command": " ".join(["bench/trace_overhead.py", *sys.argv[1:]])}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"per MPI call, 4 B on MPI_COMM_SELF, medians over {a.repeat} mpiruns; load average "
          f"{load0[0]:.1f} -> {load1[0]:.1f} ({'idle' if result['idle'] else 'NOT idle: shared machine'})")
    print("| class | config | per call [ns] median (min-max over mpiruns) | fastest round [ns] | overhead [ns] median / "
          "fastest | timer cost, 2 reads [ns] | net [ns] median / fastest |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        tc = f"{r['timer_cost_ns']:.1f}" if "timer_cost_ns" in r else "-"
        net = f"{r['net_overhead_ns']:.1f} / {r['net_overhead_fastest_ns']:.1f}" if "net_overhead_ns" in r else "-"
        print(f"| {r['class']} | {r['config']} | {r['call_ns']:.1f} ({r['call_ns_min']:.1f}-{r['call_ns_max']:.1f}) | "
              f"{r['fastest_round_ns']:.1f} | {r['overhead_ns']:.1f} / {r['overhead_fastest_ns']:.1f} | {tc} | {net} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
