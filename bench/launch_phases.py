#!/usr/bin/env python3
"""Benchmark: where the time of one short mpirun goes (2 ranks, the MPI on PATH).

Runs, interleaved, N times each:
  true      mpiexec -n 2 -bind-to core /bin/true            (the launcher alone)
  hello     mpiexec ... a C program with MPI_Init/MPI_Finalize (+ the MPI library's start-up)
  core      mpiexec ... mpitempo-bench as a campaign runs it (4 ops x 6 sizes, nrep 200, --outdir),
            with MPITEMPO_PHASES=1: rank 0 prints a CLOCK_MONOTONIC time stamp at every start-up
            and tear-down step (src/core/run/run.c), so each step's share is measured, not guessed.
Extra builds (--build LABEL=DIR) are run the same way, side by side. Times are medians over the
runs, in ms. Run it under the CPU lock:

  flock /tmp/mpitempo-cpu.lock python3 bench/launch_phases.py --build after=build-h [--runs 20]
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

from buildargs import parse_builds

HERE = Path(__file__).resolve().parent
HELLO = r"""#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
"""
STEPS = ["main", "mpi_init", "validate", "timer_open", "timer_study", "cpushare", "rank_records",
         "corelat_before", "app_run", "corelat_after", "files", "mpi_finalize"]


def timed(argv: list[str], env: dict) -> tuple[float, float, str]:
    t0 = time.monotonic()  # CLOCK_MONOTONIC on Linux, as the core's time stamps
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    t1 = time.monotonic()
    if r.returncode != 0:
        sys.exit(f"launch_phases.py: {' '.join(argv[:6])} ... failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return t0, t1, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, metavar="LABEL=DIR",
                    help="a directory holding mpitempo-bench, with a label (repeatable)")
    ap.add_argument("--runs", type=int, default=20, help="mpiruns of each kind (default 20)")
    ap.add_argument("--extra", default="", help="more mpitempo-bench options for every build (one string)")
    ap.add_argument("--args", action="append", default=[], metavar="LABEL=OPTIONS",
                    help="more options for one build; {work} is a scratch directory shared by its runs "
                         "(e.g. after='--timer-cache {work}/timer-study.txt')")
    ap.add_argument("--out", default=None, help="JSON file (default bench/results/launch-phases-STAMP.json)")
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit(f"launch_phases.py: --runs must be >= 1, got {a.runs}")
    mpiexec, mpicc = shutil.which("mpiexec"), shutil.which("mpicc")
    if not mpiexec or not mpicc:
        sys.exit("launch_phases.py: needs mpiexec and mpicc on PATH")
    builds = parse_builds(a.build, "mpitempo-bench", "launch_phases.py")
    per = {}
    for x in a.args:
        label, sep, opts = x.partition("=")
        if not sep or label not in {lb for lb, _ in builds}:
            sys.exit(f"launch_phases.py: --args {x!r}: expected LABEL=OPTIONS for a --build label")
        per[label] = opts
    work = Path(tempfile.mkdtemp(prefix="mt-phases-"))
    (work / "hello.c").write_text(HELLO)
    subprocess.run([mpicc, "-O2", "-o", str(work / "hello"), str(work / "hello.c")], check=True)
    env = dict(os.environ, MPITEMPO_PHASES="1")
    launch = [mpiexec, "-n", "2", "-bind-to", "core"]
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    res: dict[str, list] = {"true": [], "hello": []}
    for label, _ in builds:
        res[label] = []
    for i in range(a.runs):
        t0, t1, _ = timed(launch + ["/bin/true"], env)
        res["true"].append({"total": t1 - t0})
        t0, t1, _ = timed(launch + [str(work / "hello")], env)
        res["hello"].append({"total": t1 - t0})
        for label, exe in builds:
            out = work / f"{label}-{i}"
            out.mkdir()
            argv = launch + [str(exe), "--outdir", str(out), "--ops", "allreduce,bcast,alltoall,reduce",
                             "--msizes", "8-256", "--nrep", "200", "--sync", "none", "--expect-np", "2",
                             "--seed", str(i + 1), "--quiet", *a.extra.split(),
                             *per.get(label, "").replace("{work}", str(work)).split()]
            t0, t1, err = timed(argv, env)
            st = {}
            for line in err.splitlines():
                if line.startswith("mpitempo-phase "):
                    _, name, t = line.split()
                    st.setdefault(name, float(t))  # "main": the first process to get there
            missing = [s for s in STEPS if s not in st]
            if missing:
                sys.exit(f"launch_phases.py: {exe} printed no phase {missing} (built without MPITEMPO_PHASES?)")
            row = {"total": t1 - t0, "spawn": st["main"] - t0}
            prev = "main"
            for s in STEPS[1:]:
                row[s] = st[s] - st[prev]
                prev = s
            row["exit"] = t1 - st["mpi_finalize"]
            res[label].append(row)
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    shutil.rmtree(work, ignore_errors=True)
    med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in res.items()}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(a.out) if a.out else HERE / "results" / f"launch-phases-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": a.runs,
                               "loadavg_before": load0, "loadavg_after": load1, "extra": a.extra,
                               "builds": {lb: str(e) for lb, e in builds}, "args": per, "median_s": med, "all_s": res},
                              indent=1) + "\n")
    print(f"{out} (load average before {' '.join(load0)}, after {' '.join(load1)}); medians in ms")
    print(f"mpiexec /bin/true {med['true']['total'] * 1e3:7.1f}   MPI hello {med['hello']['total'] * 1e3:7.1f}")
    fields = ["spawn"] + STEPS[1:] + ["exit", "total"]
    print(f"{'step':16}" + "".join(f"{lb:>10}" for lb, _ in builds))
    for f in fields:
        print(f"{f:16}" + "".join(f"{med[lb][f] * 1e3:10.1f}" for lb, _ in builds))
    for lb, _ in builds:
        m = med[lb]
        outside = m["total"] - m["app_run"]
        print(f"{lb}: outside the measuring (app_run) {outside * 1e3:.1f} ms per mpirun")
    return 0


if __name__ == "__main__":
    sys.exit(main())
