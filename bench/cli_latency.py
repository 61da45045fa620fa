#!/usr/bin/env python3
"""Benchmark: how fast the command line answers, as a user meets it (fresh processes).

  help      `mpitempo --help`, and `--help` of every command (targets: < 0.3 s)
  summary   `mpitempo summary DIR` on the demo campaign (examples/demo.toml; target: < 1 s),
            also --json and --csv

Each number is the median (and min, max) wall time of --repeat fresh processes. Without --campaign
the demo campaign is run first (examples/demo.toml) into a temporary directory.
Hold the CPU lock: flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" python bench/cli_latency.py --out
Results: bench/results/cli_latency.json (with --out).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], n: int) -> dict:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ts.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"cli_latency: {' '.join(argv)} failed: {r.stderr.strip()[-300:]}")
    return {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts), "n": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10, help="fresh processes per command (default 10)")
    ap.add_argument("--campaign", default=None, help="an existing demo campaign directory")
    ap.add_argument("--out", action="store_true", help="write bench/results/cli_latency.json")
    a = ap.parse_args()
    exe = shutil.which("mpitempo", path=str(Path(sys.executable).parent)) or shutil.which("mpitempo")
    if not exe:
        sys.exit("cli_latency: no mpitempo command on PATH")
    load = os.getloadavg()
    res: dict = {"load_before": load, "repeat": a.repeat, "help": {}, "summary": {}}
    res["help"]["mpitempo --help"] = timed([exe, "--help"], a.repeat)
    from mpitempo.cli import COMMANDS
    for cmd in COMMANDS:
        res["help"][f"mpitempo {cmd} --help"] = timed([exe, cmd, "--help"], a.repeat)
    tmp = None
    camp = a.campaign
    if camp is None:
        tmp = tempfile.mkdtemp(prefix="mt-cli-bench-")
        camp = str(Path(tmp) / "demo")
        subprocess.run([exe, "run", str(ROOT / "examples" / "demo.toml"), "-o", camp, "--quiet", "--no-summary"],
                       check=True)
    for extra in ([], ["--json"], ["--csv"]):
        res["summary"][" ".join(["mpitempo summary DEMO", *extra]).strip()] = timed([exe, "summary", camp, *extra],
                                                                                    a.repeat)
    res["load_after"] = os.getloadavg()
    if tmp:
        shutil.rmtree(tmp)
    for part in ("help", "summary"):
        for k, v in res[part].items():
            print(f"{k:<40} median {v['median_s'] * 1000:7.1f} ms  (min {v['min_s'] * 1000:.1f}, "
                  f"max {v['max_s'] * 1000:.1f}, n={v['n']})")
    print(f"load average before/after: {load[0]:.2f} / {res['load_after'][0]:.2f}")
    if a.out:
        path = ROOT / "bench" / "results" / "cli_latency.json"
        path.write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
