#!/usr/bin/env python3
"""Benchmark of the analysis side: 10 million synthetic measurements.

    python bench/stats_10m.py [--dir /tmp/mt-bench-10m] [--keep] [--out bench/results/stats_10m.json]

Writes a campaign directory (2 configurations x 20 mpiruns x 5 ops x 10 sizes x 5000 measurements,
right-skewed with a second mode, 0.5% large outliers, a per-mpirun effect, B 3% slower), then
times, each in a fresh child process (so peak RSS is the phase's own):

1. ingest + Tukey filter + summary: open_campaigns, per_run_table (filter, outlier counts) and summary_rows
   (per-run and across-run statistics with median CIs), as `mpitempo summary --json` does;
2. `mpitempo compare DIR --json`.

Goals: phase 1 < 15 s and < 2 GiB peak RSS; compare < 20 s.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

PHASE1 = """
import json, resource, sys, time
t0 = time.perf_counter()
from mpitempo.analysis.store import open_campaigns
from mpitempo.stats.outliers import Filter
from mpitempo.analysis.summary import counts_from_per_run, per_run_table
from mpitempo.analysis.summary import summary_rows
t1 = time.perf_counter()
data = open_campaigns([sys.argv[1]])
t2 = time.perf_counter()
filt = Filter("tukey", 1.5)
per_run = per_run_table(data.con, filt)
counts = counts_from_per_run(per_run, filt)
t3 = time.perf_counter()
rows = summary_rows(data, filt, per_run=per_run)
t4 = time.perf_counter()
n = data.con.execute("SELECT count(*) FROM meas").fetchone()[0]
print(json.dumps({"measurements": n, "groups": len(rows), "outliers": counts["outliers"],
                  "import_s": t1 - t0, "ingest_s": t2 - t1, "filter_per_run_s": t3 - t2, "summary_s": t4 - t3,
                  "total_s": t4 - t1,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB of the child, stdout)"""
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:3])} failed: {r.stderr.strip()[-2000:]}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/mt-bench-10m")
    ap.add_argument("--keep", action="store_true", help="reuse an existing directory and keep it afterwards")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "stats_10m.json"))
    args = ap.parse_args()
    root = Path(args.dir)
    gen_s = None
    if not (args.keep and root.exists()):
        shutil.rmtree(root, ignore_errors=True)
        from mpitempo.io.synthetic import make_campaign

        t = time.perf_counter()
        make_campaign(root, {"A": 1.0, "B": 1.03}, runs=20, ops=("allreduce", "bcast", "alltoall", "reduce", "barrier"),
                      msizes=tuple(8 * 4 ** i for i in range(10)), nrep=5000, seed=42)
        gen_s = time.perf_counter() - t
    size_mib = sum(f.stat().st_size for f in root.rglob("measurements.csv")) / 2 ** 20

    load0 = os.getloadavg()[0]
    wall1, _, out1 = child([sys.executable, "-c", PHASE1, str(root)])
    phase1 = json.loads(out1)
    exe = shutil.which("mpitempo") or "mpitempo"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "import sys, resource; from mpitempo.cli import main; c = main(sys.argv[1:]);"
                        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr); sys.exit(c)",
                        "compare", str(root), "--json"], capture_output=True, text=True)
    wall2 = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: compare failed: {r.stderr}")
    rows = json.loads(r.stdout)
    rss2 = float(r.stderr.strip().splitlines()[-1])
    res = {
        "benchmark": "stats_10m", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python bench/stats_10m.py", "machine": {"cpus": os.cpu_count(), "loadavg_1m_before": load0, "loadavg_1m_after": os.getloadavg()[0], "python": platform.python_version(),
                                                           "platform": platform.platform()},
        "data": {"measurements": phase1["measurements"], "csv_mib": round(size_mib, 1), "runs": 40,
                 "groups": phase1["groups"], "generate_s": gen_s},
        "ingest_filter_summary": {**{k: round(v, 3) for k, v in phase1.items() if k.endswith("_s")},
                                  "child_wall_s": round(wall1, 3), "peak_rss_mib": round(phase1["peak_rss_mib"], 1),
                                  "outliers": phase1["outliers"], "target": "< 15 s, < 2048 MiB"},
        "compare": {"wall_s": round(wall2, 3), "peak_rss_mib": round(rss2, 1), "rows": len(rows),
                    "significant": sum(x["significant"] for x in rows), "target": "< 20 s",
                    "command": f"{exe} compare {root} --json"},
    }
    res["pass"] = (phase1["total_s"] < 15 and phase1["peak_rss_mib"] < 2048 and wall2 < 20)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
