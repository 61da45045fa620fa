#!/usr/bin/env python3
"""Benchmark: clock-sync duration and drift error under load, adaptive (ci=0.1) against fixed (ci=0) window.

For each mpirun and each build (interleaved), 2 ranks bound to cores run `mpitempo-clocks` with
HCA3, HCA2 and JK, each with `ci=0.1` (the adaptive window; what `ci=auto` gives on 2 ranks) and
`ci=0` (the fixed window), on a simulated clock: rank 1 starts 0.73 s off and drifts DRIFT ppm.
BUSY processes (`while True: pass`, not pinned) run during the whole measurement, to load the
machine as other jobs would. Reported per (build, algorithm, window): sync duration (max over
ranks) median and worst, how many drift errors exceed 0.2 ppm (2 µs after 10 s), how many ranks
were flagged below accuracy, how the fit windows ended and how many windows were measured.
Hold the CPU lock:

  flock /tmp/mpitempo-cpu.lock python3 bench/sync_load.py --build new=DIR [--build old=DIR]
        --busy 2 --drift 0.5 --runs 8

usage: bench/sync_load.py --build LABEL=DIR [--build ...] [--busy N] [--drift PPM] [--runs N] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from buildargs import parse_builds

HERE = Path(__file__).resolve().parent
ALGS = "hca3:ci=0.1,hca3:ci=0,hca2:ci=0.1,hca2:ci=0,jk:ci=0.1,jk:ci=0"


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, metavar="LABEL=DIR",
                    help="a directory holding mpitempo-clocks, with a label (repeatable)")
    ap.add_argument("--busy", type=int, default=2, help="busy processes during the runs (default 2)")
    ap.add_argument("--drift", type=float, default=0.5, help="rank 1's simulated drift in ppm (default 0.5)")
    ap.add_argument("--runs", type=int, default=8, help="mpiruns per build (default 8)")
    ap.add_argument("--out", default=None, help="JSON file (default bench/results/sync-load-STAMP.json)")
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit(f"sync_load.py: --runs must be >= 1, got {a.runs}")
    if a.busy < 0:
        sys.exit(f"sync_load.py: --busy must be >= 0, got {a.busy}")
    mpiexec = shutil.which("mpiexec")
    if not mpiexec:
        sys.exit("sync_load.py: no mpiexec on PATH")
    builds = parse_builds(a.build, "mpitempo-clocks", "sync_load.py")
    load0 = load()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    rows = []
    try:
        for i in range(a.runs):
            for label, exe in builds:
                cmd = [mpiexec, "-n", "2", "-bind-to", "core", str(exe), "--algorithms", ALGS, "--wait", "0",
                       "--sim-offsets", "0,0.73", "--sim-drifts", f"0,{a.drift}"]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
                if r.returncode != 0:
                    sys.exit(f"sync_load.py: {' '.join(cmd)} failed:\n{r.stderr}")
                for x in json.loads(r.stdout):
                    p1 = x["per_rank"][1]
                    rows.append({"build": label, "run": i, "algorithm": x["algorithm"].split(":")[0],
                                 "window": "fixed" if re.search(r"[:,]ci=0$", x["algorithm"]) else "adaptive",
                                 "sync_duration_s": x["sync_duration_s"],
                                 "drift_error_ppm": p1["drift_ppm"] - p1["true_drift_ppm"],
                                 "max_abs_offset_s": x["max_abs_offset_s"], "fit_stop": p1.get("fit_stop"),
                                 "slope_windows": p1.get("slope_windows"), "below_accuracy": p1.get("below_accuracy")})
    finally:
        for p in busy:
            p.kill()
            p.wait()
    load1 = load()
    summary = []
    for key in sorted({(r["build"], r["algorithm"], r["window"]) for r in rows}):
        rs = [r for r in rows if (r["build"], r["algorithm"], r["window"]) == key]
        d = sorted(r["sync_duration_s"] for r in rs)
        e = [abs(r["drift_error_ppm"]) for r in rs]
        summary.append({"build": key[0], "algorithm": key[1], "window": key[2], "runs": len(rs),
                        "duration_median_ms": statistics.median(d) * 1e3, "duration_max_ms": d[-1] * 1e3,
                        "drift_error_over_0.2ppm": sum(x > 0.2 for x in e), "drift_error_max_ppm": max(e),
                        "flagged": sum(bool(r["below_accuracy"]) for r in rs),
                        "fit_stops": sorted({str(r["fit_stop"]) for r in rs}),
                        "windows": sorted({str(r["slope_windows"]) for r in rs})})
    out = Path(a.out) if a.out else HERE / "results" / f"sync-load-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"busy": a.busy, "drift_ppm": a.drift, "runs": a.runs, "loadavg_start": load0,
                               "loadavg_end": load1, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "summary": summary, "rows": rows}, indent=1) + "\n")
    print(f"busy={a.busy} drift={a.drift} ppm, load average {load0:.2f} -> {load1:.2f}; {out}")
    print(f"{'build':8} {'alg':5} {'window':9} {'median ms':>9} {'max ms':>7} {'err>0.2':>7} {'flagged':>7}  stops / windows")
    for s in summary:
        print(f"{s['build']:8} {s['algorithm']:5} {s['window']:9} {s['duration_median_ms']:9.0f} {s['duration_max_ms']:7.0f} "
              f"{s['drift_error_over_0.2ppm']:7d} {s['flagged']:7d}  {','.join(s['fit_stops'])} / {','.join(s['windows'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
