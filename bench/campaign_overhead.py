#!/usr/bin/env python3
"""Benchmark: how much of a campaign's wall time is spent outside the timed mpiruns.

Goal: a 2-configuration, 10-mpirun campaign of 4 ops x 6 sizes on 2
ranks spends at most 15% of its wall time outside the mpiruns; the launch
overhead (mpirun start-up and tear-down, MPI_Init/Finalize) is reported apart.

  total      = wall time of `mpitempo run` (build cached, as in normal use)
  mpiruns    = sum of the wall times of the mpirun commands (runlog.jsonl)
  in core    = sum over runs of meta.json end_time - start_time (after MPI_Init .. end of measuring)
  outside    = total - mpiruns             (orchestration: planning, checks, files, Python start)
  launch     = mpiruns - in core           (launcher + MPI start-up/shut-down)

usage: bench/campaign_overhead.py [--nrep N] [--mpiruns N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def iso(s: str) -> float:
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nrep", type=int, default=200)
    ap.add_argument("--mpiruns", type=int, default=10)
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    work = Path(a.keep or tempfile.mkdtemp(prefix="mt-overhead-"))
    spec = work / "campaign.toml"
    work.mkdir(parents=True, exist_ok=True)
    spec.write_text(f"""name = "overhead"
mpiruns = {a.mpiruns}
ops = ["allreduce", "bcast", "alltoall", "reduce"]
msizes = "8-256"
nrep = {a.nrep}
seed = 1

[[config]]
name = "A"

[[config]]
name = "B"
env = {{ MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = "recursive_doubling" }}
""")
    out = work / "camp"
    mpitempo = [sys.executable, "-m", "mpitempo.cli"]
    subprocess.run(mpitempo + ["build"], check=True, capture_output=True)  # cached, as in normal use
    t0 = time.monotonic()
    r = subprocess.run(mpitempo + ["run", str(spec), "-o", str(out), "--quiet", "--no-summary"],
                       capture_output=True, text=True)
    total = time.monotonic() - t0
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 1
    log = [json.loads(x) for x in (out / "runlog.jsonl").read_text().splitlines()]
    mpiruns = sum(x["duration_s"] for x in log)
    core = 0.0
    for d in (out / "runs").iterdir():
        m = json.loads((d / "meta.json").read_text())
        core += iso(m["end_time"]) - iso(m["start_time"])
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": len(log), "nrep": a.nrep,
           "total_s": total, "mpiruns_s": mpiruns, "in_core_s": core,
           "outside_s": total - mpiruns, "outside_pct": 100 * (total - mpiruns) / total,
           "launch_s": mpiruns - core, "launch_per_run_s": (mpiruns - core) / len(log),
           "launch_pct": 100 * (mpiruns - core) / total}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "campaign_overhead.json").write_text(json.dumps(res, indent=2) + "\n")
    print(f"{len(log)} mpiruns, total {total:.2f} s: outside the mpiruns {res['outside_s']:.2f} s "
          f"({res['outside_pct']:.1f}%), launch overhead {res['launch_s']:.2f} s "
          f"({res['launch_per_run_s'] * 1000:.0f} ms per mpirun, {res['launch_pct']:.1f}% of the total), "
          f"measuring {core:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
