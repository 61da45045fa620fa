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
  measuring  = sum over runs and experiments of meta.json experiments[].wall_s (the timed loops)
  per mpirun = (mpiruns - measuring) / runs: everything an mpirun costs besides measuring
  steps      = with MPITEMPO_PHASES=1 the core stamps every start-up and tear-down step into each
               run's stderr.log (src/core/run/run.c): medians per step; "spawn+exit" is the rest of
               the mpirun's wall time (mpiexec starting the ranks, process exit, mpiexec ending)

usage: bench/campaign_overhead.py [--nrep N] [--mpiruns N] [--keep DIR] [--label L] [--out FILE]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
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
    ap.add_argument("--label", default="", help="recorded with the result (e.g. before/after)")
    ap.add_argument("--out", default=None, help="result file (default bench/results/campaign_overhead.json)")
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
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    r = subprocess.run(mpitempo + ["run", str(spec), "-o", str(out), "--quiet", "--no-summary"],
                       capture_output=True, text=True, env=dict(os.environ, MPITEMPO_PHASES="1"))
    total = time.monotonic() - t0
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 1
    log = [json.loads(x) for x in (out / "runlog.jsonl").read_text().splitlines()]
    mpiruns = sum(x["duration_s"] for x in log)
    core = measuring = 0.0
    dur = {x["run_id"]: x["duration_s"] for x in log}
    steps: dict[str, list[float]] = {}
    for d in (out / "runs").iterdir():
        m = json.loads((d / "meta.json").read_text())
        core += iso(m["end_time"]) - iso(m["start_time"])
        measuring += sum(e.get("wall_s", 0.0) for e in m["experiments"])
        st = {}
        for line in (d / "stderr.log").read_text().splitlines() if (d / "stderr.log").exists() else []:
            if line.startswith("mpitempo-phase "):
                _, name, t = line.split()
                st.setdefault(name, float(t))
        if "main" in st and "mpi_finalize" in st and d.name in dur:
            names = sorted(st, key=st.get)
            for p, q in zip(names, names[1:]):
                steps.setdefault(q, []).append(st[q] - st[p])
            steps.setdefault("spawn+exit", []).append(dur[d.name] - (st["mpi_finalize"] - st["main"]))
    med = {k: statistics.median(v) for k, v in steps.items()}
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "label": a.label,
           "loadavg_before": load0, "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
           "runs": len(log), "nrep": a.nrep, "measuring_s": measuring,
           "per_mpirun_s": (mpiruns - measuring) / len(log), "steps_median_s": med,
           "total_s": total, "mpiruns_s": mpiruns, "in_core_s": core,
           "outside_s": total - mpiruns, "outside_pct": 100 * (total - mpiruns) / total,
           "launch_s": mpiruns - core, "launch_per_run_s": (mpiruns - core) / len(log),
           "launch_pct": 100 * (mpiruns - core) / total}
    (HERE / "results").mkdir(exist_ok=True)
    dest = Path(a.out) if a.out else HERE / "results" / "campaign_overhead.json"
    dest.write_text(json.dumps(res, indent=2) + "\n")
    print(f"{len(log)} mpiruns, total {total:.2f} s: outside the mpiruns {res['outside_s']:.2f} s "
          f"({res['outside_pct']:.1f}%), launch overhead {res['launch_s']:.2f} s "
          f"({res['launch_per_run_s'] * 1000:.0f} ms per mpirun, {res['launch_pct']:.1f}% of the total), "
          f"in core {core:.2f} s; per mpirun besides measuring {res['per_mpirun_s'] * 1000:.0f} ms "
          f"(measuring {measuring:.2f} s in all)")
    if med:
        print("per mpirun, median ms: " + ", ".join(f"{k} {v * 1000:.1f}" for k, v in med.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
