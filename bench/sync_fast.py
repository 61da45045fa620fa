#!/usr/bin/env python3
"""Benchmark: clock-sync duration and held-out accuracy side by side, for one or more builds.

For each mpirun and each build (interleaved, so that "before" and "after" share the machine's
state), 2 ranks bound to cores run `mpitempo-clocks` twice:
  nodrift  one host clock (true offset 0), offsets checked right after sync
  osdrift  rank 1's CLOCK_MONOTONIC runs DRIFT ppm fast and starts OFFSET s off at the OS level
           (bench/os_clock_wrap.sh, libfaketime), offsets checked right after sync and 10 s later
Reported per (build, case, algorithm): sync duration (max over ranks) median and worst, max |offset|
median and worst at each wait, drift error, fit points and the slope interval reached (when the
build reports them). Run it under the CPU lock:

  flock /tmp/mpitempo-cpu.lock python3 bench/sync_fast.py --build before=/tmp/old --build after=build-h

usage: bench/sync_fast.py --build LABEL=DIR [--build ...] [--runs N] [--algorithms LIST]
                          [--drift PPM] [--offset S] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from buildargs import parse_builds

HERE = Path(__file__).resolve().parent


def run_clocks(exe: Path, algs: str, waits: str, drift: float | None, offset: float) -> list[dict]:
    mpiexec = shutil.which("mpiexec")
    if not mpiexec:
        sys.exit("sync_fast.py: no mpiexec on PATH")
    cmd = [mpiexec, "-n", "2", "-bind-to", "core"]
    env = dict(os.environ)
    if drift is not None:
        cmd.append(str(HERE / "os_clock_wrap.sh"))
        env["MT_OS_DRIFTS_PPM"] = f"0,{drift}"
        env["MT_OS_OFFSETS_S"] = f"0,{offset}"
    cmd += [str(exe), "--algorithms", algs, "--wait", waits]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        sys.exit(f"sync_fast.py: {' '.join(cmd)} failed:\n{r.stderr}")
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, metavar="LABEL=DIR",
                    help="a directory holding mpitempo-clocks, with a label (repeatable)")
    ap.add_argument("--runs", type=int, default=5, help="mpiruns per build and case (default 5)")
    ap.add_argument("--algorithms", default="hca3,hca2,jk")
    ap.add_argument("--drift", type=float, default=30.0, help="rank 1's OS-level drift in ppm (default 30)")
    ap.add_argument("--offset", type=float, default=0.002, help="rank 1's OS-level offset in s (default 0.002)")
    ap.add_argument("--out", default=None, help="JSON file (default bench/results/sync-fast-STAMP.json)")
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit(f"sync_fast.py: --runs must be >= 1, got {a.runs}")
    builds = parse_builds(a.build, "mpitempo-clocks", "sync_fast.py")
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    rows = []
    for i in range(a.runs):
        for label, exe in builds:
            for case, drift, waits in (("nodrift", None, "0"), ("osdrift", a.drift, "0,10")):
                for r in run_clocks(exe, a.algorithms, waits, drift, a.offset):
                    p1 = r["per_rank"][1]
                    rows.append({"build": label, "run": i, "case": case, "algorithm": r["algorithm"],
                                 "wait_s": r["wait_s"], "sync_duration_s": r["sync_duration_s"],
                                 "max_abs_offset_s": r["max_abs_offset_s"],
                                 "drift_ppm": p1["drift_ppm"], "true_drift_ppm": drift or 0.0,
                                 "slope": p1.get("slope"), "slope_windows": p1.get("slope_windows"),
                                 "fit_points": p1.get("fit_points"), "fit_ci_ppm": p1.get("fit_ci_ppm"),
                                 "fit_stop": p1.get("fit_stop")})
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(a.out) if a.out else HERE / "results" / f"sync-fast-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg_before": load0,
           "loadavg_after": load1, "runs": a.runs, "drift_ppm": a.drift, "offset_s": a.offset,
           "builds": {lb: str(e) for lb, e in builds}, "rows": rows}
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{out} (load average before {' '.join(load0)}, after {' '.join(load1)})")
    print(f"{'build':8} {'case':8} {'alg':5} {'sync ms med/worst':>18} {'|off| 0s us med/worst':>22} "
          f"{'|off| 10s us med/worst':>23} {'drift err ppm max':>18} {'fit pts med':>11} {'windows':>8}")
    for label, _ in builds:
        for case in ("nodrift", "osdrift"):
            for alg in dict.fromkeys(r["algorithm"] for r in rows):
                rs = [r for r in rows if r["build"] == label and r["case"] == case and r["algorithm"] == alg]
                r0 = [r for r in rs if r["wait_s"] == 0]
                r10 = [r for r in rs if r["wait_s"] == 10]
                d = [r["sync_duration_s"] * 1e3 for r in r0]
                o0 = [r["max_abs_offset_s"] * 1e6 for r in r0]
                o10 = [r["max_abs_offset_s"] * 1e6 for r in r10]
                de = [abs(r["drift_ppm"] - r["true_drift_ppm"]) for r in r0]
                fp = [r["fit_points"] for r in r0 if r["fit_points"] is not None]
                wn = sorted({r["slope_windows"] for r in r0})
                s10 = f"{statistics.median(o10):10.3f} / {max(o10):7.3f}" if o10 else f"{'-':>23}"
                print(f"{label:8} {case:8} {alg:5} {statistics.median(d):8.0f} / {max(d):7.0f} "
                      f"{statistics.median(o0):11.3f} / {max(o0):7.3f} {s10} {max(de):18.3f} "
                      f"{(statistics.median(fp) if fp else float('nan')):11.0f} {','.join(map(str, wn)):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
