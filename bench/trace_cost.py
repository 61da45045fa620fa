#!/usr/bin/env python3
"""What `mpitempo trace run` costs over the plain run of the same application (issue 33 item 5:
traced / untraced wall time <= 1.5 for HPCG-like runs of a few seconds).

  python bench/trace_cost.py                      # the HPCG-like proxy tests/mpi/trace_src/halo_cg.c
  python bench/trace_cost.py --xhpcg PATH         # HPCG itself (see bench/trace_app_check.py to build it)
  python bench/trace_cost.py --repeat 5 -n 2 --iters 1500 --n 8192

Each repeat runs, in turn:
  untraced   the application under the launcher `trace run` uses (its launch.json argv without the
             tracer's env and preload shim);
  traced     `mpitempo trace run -n N -o DIR -- APP` (the default: the trace's record printed, no
             analysis, no plot);
  analysed   the same with --analyse (the full analysis of `mpitempo trace DIR`), for reference.
Wall time (monotonic clock around the command) and CPU time (user + system of the command and
every process it waited for, getrusage(RUSAGE_CHILDREN)). Holds the CPU lock
${TMPDIR:-/tmp}/mpitempo-cpu.lock; records the load average before and after (the machine is
shared: ratios measured on a loaded machine are upper bounds of what an idle one shows). Prints
the medians and the ratios traced/untraced (wall and CPU); writes bench/results/trace_cost.json.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr[-1000:]}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.returncode


def untraced_argv(launch: dict) -> list[str]:
    """launch.json's argv without `env MPITEMPO_TRACE_...=... /bin/sh -c SHIM LIB`: the same launcher
    and binding, the application directly."""
    argv = launch["argv"]
    i = argv.index("env")
    return argv[:i] + list(launch["app"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xhpcg", type=Path, help="HPCG's xhpcg (built with the core's MPI) instead of the proxy")
    ap.add_argument("-n", "--np", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1500, help="proxy: CG iterations")
    ap.add_argument("--n", type=int, default=8192, help="proxy: points per rank")
    ap.add_argument("--hpcg-args", default="--nx=16 --ny=16 --nz=16 --rt=2")
    ap.add_argument("--no-analysed", action="store_true", help="skip the --analyse runs")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/trace_cost.json")
    a = ap.parse_args()
    bindir = Path(sys.executable).parent
    cli = str(bindir / "mpitempo")
    lock = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    runs = {"untraced": [], "traced": [], "analysed": []}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        if a.xhpcg:
            app = [str(a.xhpcg.resolve()), *a.hpcg_args.split()]
            name = "HPCG " + a.hpcg_args
        else:
            exe = work / "halo_cg"
            subprocess.run([str(bindir / "mpicc"), "-O2", "-o", str(exe), str(ROOT / "tests/mpi/trace_src/halo_cg.c")],
                           check=True)
            app = [str(exe), "--iters", str(a.iters), "--n", str(a.n)]
            name = f"halo_cg (HPCG-like proxy) --iters {a.iters} --n {a.n}"
        # one traced run first: the launch line, and the core built before anything is timed
        first = work / "t-warm"
        subprocess.run([cli, "trace", "run", "-n", str(a.np), "-o", str(first), "--", *app], cwd=work, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        plain = untraced_argv(json.loads((first / "launch.json").read_text()))
        events = sum(json.loads((first / "trace.json").read_text())["events_per_rank"])
        for k in range(a.repeat):
            for mode in ("untraced", "traced", "analysed"):
                if mode == "analysed" and a.no_analysed:
                    continue
                out = work / f"t-{mode}-{k}"
                argv = plain if mode == "untraced" else \
                    [cli, "trace", "run", "-n", str(a.np), "-o", str(out), *(["--analyse"] if mode == "analysed" else []),
                     "--", *app]
                wall, cpu, _ = timed(argv, work)
                runs[mode].append({"wall_s": wall, "cpu_s": cpu, "load1": os.getloadavg()[0]})
                print(f"  {mode:9s} {k}: wall {wall:7.2f} s, cpu {cpu:7.2f} s, load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr)
    load1 = os.getloadavg()

    def med(mode, key):
        return statistics.median(r[key] for r in runs[mode]) if runs[mode] else None

    res = {"application": name, "ranks": a.np, "events": events, "repeat": a.repeat, "untraced_argv": plain,
           "load_before": load0, "load_after": load1, "cpus": os.cpu_count(), "runs": runs,
           "median": {m: {"wall_s": med(m, "wall_s"), "cpu_s": med(m, "cpu_s")} for m in runs if runs[m]}}
    res["ratio_wall"] = res["median"]["traced"]["wall_s"] / res["median"]["untraced"]["wall_s"]
    res["ratio_cpu"] = res["median"]["traced"]["cpu_s"] / res["median"]["untraced"]["cpu_s"]
    if runs["analysed"]:
        res["ratio_wall_analysed"] = res["median"]["analysed"]["wall_s"] / res["median"]["untraced"]["wall_s"]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{name}, {a.np} ranks, {events} events traced, {a.repeat} repeats; load average "
          f"{load0[0]:.1f} -> {load1[0]:.1f} on {os.cpu_count()} CPUs")
    for m, v in res["median"].items():
        print(f"  {m:9s} median wall {v['wall_s']:.2f} s, cpu {v['cpu_s']:.2f} s")
    print(f"ratio traced/untraced: wall {res['ratio_wall']:.2f}, cpu {res['ratio_cpu']:.2f}"
          + (f" (with --analyse: wall {res['ratio_wall_analysed']:.2f})" if "ratio_wall_analysed" in res else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
