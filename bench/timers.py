#!/usr/bin/env python3
"""Benchmark: resolution and overhead of every timer (Luecke et al. 2009, section 3.1).

Runs `mpitempo-bench --timer-study` (2^24 back-to-back reads per timer by
default) REPEAT times in separate processes and reports the median over the
repetitions of: resolution (min positive difference), minimum overhead (min
non-negative difference) and mean cost per read. Results go to
bench/results/timers.json and a Markdown table on stdout.

usage: bench/timers.py [--reads N] [--repeat R] [--mpicc PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from mpitempo.build import ensure_build  # noqa: E402
from mpitempo.runner.launch import make_launch  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mpicc", default=None)
    ap.add_argument("--out", default=str(HERE / "results" / "timers.json"))
    a = ap.parse_args()
    b = ensure_build(a.mpicc)
    per_timer: dict[str, list[dict]] = {}
    for i in range(a.repeat):
        launch = make_launch(b, 1, [b.binary(), "--timer-study", "--timer-reads", str(a.reads)])
        env = dict(os.environ, **launch.env)
        t0 = time.monotonic()
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, check=True)
        print(f"repetition {i + 1}/{a.repeat}: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        for x in json.loads(r.stdout):
            per_timer.setdefault(x["timer"], []).append(x)
    rows = []
    for name, xs in per_timer.items():
        if not xs[0].get("available"):
            rows.append({"timer": name, "available": False, "error": xs[0].get("error")})
            continue
        rows.append({
            "timer": name, "available": True, "reads": a.reads, "repeat": a.repeat,
            "resolution_ns": statistics.median(x["resolution_s"] for x in xs) * 1e9,
            "min_overhead_ns": statistics.median(x["min_overhead_s"] for x in xs) * 1e9,
            "mean_read_ns": statistics.median(x["mean_read_s"] for x in xs) * 1e9,
            "mean_read_ns_min": min(x["mean_read_s"] for x in xs) * 1e9,
            "mean_read_ns_max": max(x["mean_read_s"] for x in xs) * 1e9,
        })
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
              "mpi": b.mpiexec_version, "timers": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"| timer | resolution [ns] | min overhead [ns] | mean read [ns] (min-max over {a.repeat}) |")
    print("|---|---:|---:|---:|")
    for r in rows:
        if r["available"]:
            print(f"| {r['timer']} | {r['resolution_ns']:.1f} | {r['min_overhead_ns']:.1f} | "
                  f"{r['mean_read_ns']:.1f} ({r['mean_read_ns_min']:.1f}-{r['mean_read_ns_max']:.1f}) |")
        else:
            print(f"| {r['timer']} | - | - | unavailable: {r['error']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
