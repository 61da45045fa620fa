#!/usr/bin/env python3
"""Benchmark of `mpitempo pingpong` against the loop-averaged method (numbers go
to docs/pingpong.md; nothing here is a pass/fail test):

1. timer study of 2^24 back-to-back pairs finishes in < 5 s;
2. on 2 ranks, 8 B: our minimum and median are within 10 % of the
   loop-averaged (osu_latency-style) average measured in the same mpirun;
3. our median is stable across 10 mpiruns: max/min of the run medians <= 1.03.

usage: PYTHONPATH=python python3 bench/pingpong_bench.py [--mpiruns 10] [--ntrial 20000] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpitempo.build import ensure_build
from mpitempo.runner.launch import make_launch
from mpitempo.analysis import pingpong as analysis
from mpitempo.io import pingpong as data


def mpirun(build, args, np_=2):
    cmd = [build.binary("mpitempo-pingpong")] + args
    launch = make_launch(build, np_, cmd)
    env = dict(os.environ)
    env.update(launch.env)
    t0 = time.monotonic()
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode != 0:
        sys.exit(f"mpirun failed: {r.stderr.strip()}")
    return r, time.monotonic() - t0, launch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiruns", type=int, default=10)
    ap.add_argument("--ntrial", type=int, default=20000)
    ap.add_argument("--loop-reps", type=int, default=20)
    ap.add_argument("--msize", default="8")
    ap.add_argument("--npp-sweep", default="1,18,100",
                    help="npp values timed in every mpirun besides the calculated one (comma list, or '' for none)")
    ap.add_argument("--out", default=None, help="keep the run directories here")
    a = ap.parse_args()
    b = ensure_build()
    base = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="pp-bench-"))
    base.mkdir(parents=True, exist_ok=True)

    # 1. the timer study alone: 2^24 pairs (the rest of the run is tiny)
    d = base / "timer"
    d.mkdir(exist_ok=True)
    r, wall, launch = mpirun(b, ["--outdir", str(d), "--msizes", "8", "--ntrial", "1", "--npptrial", "1",
                                 "--timer-reads", str(1 << 24), "--quiet"])
    st = json.loads((d / "meta.json").read_text())["timer"]["study"]
    print(f"launcher: {' '.join(launch.argv[:launch.argv.index(b.binary('mpitempo-pingpong'))])}")
    print(f"timer study: {st['n']} pairs in {st['seconds']:.3f} s (whole mpirun {wall:.2f} s); "
          f"res_timing {st['res_timing_s'] * 1e9:.1f} ns, min_ov {st['min_ov_s'] * 1e9:.1f} ns")

    # 2 + 3. mpiruns of ping-pong + loop-averaged, same ranks, same job
    sweep = [int(x) for x in a.npp_sweep.split(",") if x.strip()]
    extra = ["--npp-sweep", ",".join(str(x) for x in sweep)] if sweep else []
    per_npp: dict[int, list[tuple[float, float, float]]] = {}   # npp -> [(min, median, loop)]
    loops, calc = [], []
    for i in range(a.mpiruns):
        d = base / f"run{i:02d}"
        d.mkdir(exist_ok=True)
        mpirun(b, ["--outdir", str(d), "--msizes", a.msize, "--ntrial", str(a.ntrial), "--loop",
                   "--loop-reps", str(a.loop_reps), "--timer-reads", str(1 << 20), "--quiet"] + extra)
        an = analysis.analyse(data.load_dir(d))
        lp = an["loop"][0]
        loops.append(lp["median_s"])
        calc.append(an["results"][0]["npp_calculated"])
        parts = []
        for res in an["results"]:
            per_npp.setdefault(res["npp"], []).append((res["min_s"], res["median_s"], lp["median_s"]))
            parts.append(f"npp {res['npp']}: min {res['min_s'] * 1e6:.3f} med {res['median_s'] * 1e6:.3f} "
                         f"std {res['std_s'] * 1e6:.3f}")
        print(f"run {i}: npp calculated {calc[-1]} | " + " | ".join(parts) +
              f" | loop avg {lp['median_s'] * 1e6:.3f} us [{lp['min_s'] * 1e6:.3f}..{lp['max_s'] * 1e6:.3f}]",
              flush=True)
    print(f"\nover {a.mpiruns} mpiruns ({a.msize} B, ntrial {a.ntrial}, npp calculated: {sorted(set(calc))}); "
          f"loop-averaged median of run values {statistics.median(loops) * 1e6:.3f} us, "
          f"max/min {max(loops) / min(loops):.4f}")
    print(f"  {'npp':>5} {'med(min)':>9} {'med(median)':>11} {'min/loop':>9} {'median/loop':>11} "
          f"{'max/min of run medians':>23}")
    for npp in sorted(per_npp):
        v = per_npp[npp]
        mins, meds = [x[0] for x in v], [x[1] for x in v]
        rmin = statistics.median(x[0] / x[2] for x in v)
        rmed = statistics.median(x[1] / x[2] for x in v)
        print(f"  {npp:>5} {statistics.median(mins) * 1e6:9.3f} {statistics.median(meds) * 1e6:11.3f} "
              f"{rmin:9.3f} {rmed:11.3f} {max(meds) / min(meds):23.4f}")
    print("  (ratios: median over runs of per-run ratios to the loop average of the same mpirun)")
    print(f"results in {base}")


if __name__ == "__main__":
    main()
