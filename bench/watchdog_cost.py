#!/usr/bin/env python3
"""Benchmark: what the watchdog in front of every mpirun costs (docs/campaigns.md, "The watchdog").

Runs, interleaved, N times each, the launcher alone (`mpiexec -n 2 true`, the MPI of the current build)
  direct   started with subprocess.Popen and waited for with a pidfd (as the runner waits);
  c        under the compiled watchdog (mpitempo-watchdog of the core's build);
  python   under the Python watchdog (python/mpitempo/runner/watchdog.py);
and reports the median and quartiles of the wall time in ms, with the load average before and after.
Run it on an idle machine under the CPU lock:

  flock /tmp/mpitempo-cpu.lock python bench/watchdog_cost.py [--runs 30] [--out bench/results/watchdog_cost.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))


def main() -> int:
    from mpitempo.build import ensure_build
    from mpitempo.runner import watchdog

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", default=str(HERE / "results" / "watchdog_cost.json"))
    a = ap.parse_args()
    b = ensure_build()
    compiled = os.path.join(b.bindir, watchdog.BINARY_NAME)
    if not os.path.exists(compiled):
        sys.exit(f"bench: the core in {b.bindir} has no {watchdog.BINARY_NAME}")
    argv = [b.mpiexec, "-n", "2", "true"]
    variants = {"direct": None, "c": compiled, "python": "python"}
    times: dict[str, list[float]] = {k: [] for k in variants}
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    for _ in range(a.runs):
        for name, impl in variants.items():
            t = time.perf_counter()
            if impl is None:
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                os.environ["MPITEMPO_WATCHDOG"] = impl
                p = watchdog.popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rc = watchdog.wait(p, 60)
            times[name].append(time.perf_counter() - t)
            if rc != 0:
                sys.exit(f"bench: {name}: exit code {rc}")
    os.environ.pop("MPITEMPO_WATCHDOG", None)

    def q(v, f):
        s = sorted(v)
        return s[min(len(s) - 1, int(f * len(s)))]

    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": a.runs, "mpiexec": b.mpiexec,
           "loadavg_before": load0, "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
           "ms": {k: {"median": 1e3 * statistics.median(v), "q1": 1e3 * q(v, 0.25), "q3": 1e3 * q(v, 0.75)}
                  for k, v in times.items()}}
    res["ms"]["c_minus_direct"] = res["ms"]["c"]["median"] - res["ms"]["direct"]["median"]
    res["ms"]["python_minus_direct"] = res["ms"]["python"]["median"] - res["ms"]["direct"]["median"]
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    for k in variants:
        m = res["ms"][k]
        print(f"{k:7s} median {m['median']:6.1f} ms  (IQR {m['q1']:.1f}-{m['q3']:.1f})")
    print(f"watchdog cost per mpirun: compiled {res['ms']['c_minus_direct']:.1f} ms, "
          f"Python {res['ms']['python_minus_direct']:.1f} ms (load {load0[0]} -> {res['loadavg_after'][0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
