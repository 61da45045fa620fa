#!/usr/bin/env python3
"""What a simulated study costs and what it shows (docs/simulation.md, docs/benchmarks.md).

1. cost: host seconds per simulated mpirun of `mpitempo run --platform platforms/fattree256.xml`, a
   short campaign (MPI_Barrier, MPI_Allreduce 8 B and barrier:dissemination, --nrep 20, 1 mpirun) at
   64, 256 and 1024 ranks (4 per node), and the host seconds of a whole 1024-rank barrier study
   (`--study1024`: LogP and every algorithm at P = 1024 on platforms/fattree1024.xml);
2. the barrier model at scale: every algorithm (Round-Time) against its LogP prediction, the closed
   formulas and the extended model (each algorithm's message schedule, L per pair from the
   platform's routes), and the fastest algorithm at each P, on each `--barrier` platform
   (PLATFORM:PPN:P,P,...);
3. clock sync vs P: the --sync-algs specs with injected offsets (up to 1 ms) and drifts (up to
   50 ppm) on the fat tree: sync duration (simulated s) and max |offset| after sync and 10 s later,
   at the --sync-procs counts.

Timed steps (cost, study1024) hold the machine's CPU lock exclusively (flock /tmp/mpitempo-cpu.lock),
wait up to 4 minutes for the load average to fall below 0.5 and record the load they saw; the
others (simulated times only: they do not depend on the load) hold it shared. Writes
bench/results/smpi-scale-<date>.json.

    python bench/smpi_scale.py [--skip cost,barrier,sync,study1024] [--ranks 64,256,1024]
                               [--barrier platforms/fattree256.xml:1:2,3,4,...] [--sync-procs 64,256,512,1024]
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FATTREE = ROOT / "platforms" / "fattree256.xml"
FATTREE1024 = ROOT / "platforms" / "fattree1024.xml"
W = "fitpts=20,pp=5,window=0.05,ci=0"   # the fixed window (docs/simulation.md)
SYNC_ALGS = (f"hca3:fitpts=20,pp=5,ci=0,hca3:{W},hca3:fitpts=20,pp=5,window=0.1,slope=fit,hca2:{W},jk:{W},"
             f"h3:hca3:{W}/hca3:{W}/hca3:{W}")
BARRIER = ["platforms/cluster64-fast.xml:1:2,3,4,6,8,12,16,32,64",
           "platforms/fattree256.xml:1:2,3,4,6,8,12,16,32,64,100,128,256",
           "platforms/torus1024.xml:1:2,3,6,12,16,64,100,256,384"]


def mpitempo(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "mpitempo.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


def locked(fn, exclusive: bool = True):
    """Run fn() holding the CPU lock (exclusive: after waiting up to 4 minutes for the 1-minute load
    average to fall below 0.5); (result, host seconds, load average when it started)."""
    with open("/tmp/mpitempo-cpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if exclusive:
            t_end = time.monotonic() + 240
            while os.getloadavg()[0] >= 0.5 and time.monotonic() < t_end:
                time.sleep(5)
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        out = fn()
        return out, time.monotonic() - t0, load


def cost(ranks: list[int], tmp: Path) -> list[dict]:
    """All sizes in one exclusive hold of the lock (one wait for the load)."""
    def runs():
        rows = []
        for n in ranks:
            out = tmp / f"cost-{n}"
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            r = mpitempo("run", "--platform", FATTREE, "-n", n, "--ops", "barrier,allreduce,barrier:dissemination",
                         "--msizes", "8", "--nrep", "20", "--mpiruns", "1", "-o", out, "--quiet", "--no-summary")
            dt = time.monotonic() - t0
            if r.returncode != 0:
                raise SystemExit(f"run at {n} ranks failed: {r.stderr.strip()[-500:]}")
            log = [json.loads(x) for x in (out / "runlog.jsonl").read_text().splitlines()]
            s = json.loads(mpitempo("summary", out, "--json").stdout)
            rows.append({"ranks": n, "host_s_command": round(dt, 2), "host_s_mpirun": round(log[0]["duration_s"], 2),
                         "load_avg_1min": load,
                         "simulated_median_us": {f"{x['op']}:{x['msize']}": round(x["median_s"] * 1e6, 3) for x in s}})
            print(f"cost: {n} ranks: {dt:.1f} s host (mpirun {log[0]['duration_s']:.1f} s), load {load:.2f}",
                  file=sys.stderr)
        return rows
    rows, _, _ = locked(runs)
    return rows


def barrier(spec: str, tmp: Path, n: int | None = None, exclusive: bool = False) -> dict:
    """One barrier study: spec = PLATFORM:PPN:P,P,..."""
    plat, ppn, procs = spec.split(":")
    procs_l = ints(procs)
    out = tmp / ("barrier-" + Path(plat).stem)
    r, dt, load = locked(lambda: mpitempo("barrier", "--platform", ROOT / plat, "--platform-ppn", ppn, "-n",
                                          n or max(procs_l), "--procs", procs, "--mpiruns", "1", "--nrep", "5",
                                          "--logp-nrep", "10", "-o", out, "--json", "--quiet"), exclusive)
    if r.returncode != 0:
        raise SystemExit(f"barrier study on {plat} failed: {r.stderr.strip()[-500:]}")
    doc = json.loads(r.stdout)
    f = lambda x, k: None if x[k] is None else round(x[k] * 1e6, 3)   # noqa: E731
    rows = [{"algorithm": x["algorithm"], "P": x["nprocs"], "measured_us": f(x, "median_s"),
             "predicted_us": f(x, "predicted_s"), "ratio": None if x["ratio"] is None else round(x["ratio"], 3),
             "predicted_ext_us": f(x, "predicted_ext_s"),
             "ratio_ext": None if x["ratio_ext"] is None else round(x["ratio_ext"], 4)} for x in doc["results"]]
    ext = [x["ratio_ext"] for x in rows if x["ratio_ext"] is not None]
    old = [x["ratio"] for x in rows if x["ratio"] is not None]
    print(f"barrier {plat}: {dt:.1f} s host, load {load:.2f}; measured/predicted {min(old):.2f}-{max(old):.2f}, "
          f"extended {min(ext):.3f}-{max(ext):.3f}", file=sys.stderr)
    return {"platform": plat, "ppn": int(ppn), "host_s": round(dt, 1), "load_avg_1min": load,
            "lock": "exclusive" if exclusive else "shared (host seconds not a timing)", "logp": doc["logp"],
            "model_ext": doc.get("model_ext"), "rows": rows,
            "ratio_range": [min(old), max(old)], "ratio_ext_range": [min(ext), max(ext)],
            "choice_by_p": doc.get("choice_by_p")}


def sync(procs: list[int], algs: str) -> list[dict]:
    rows = []
    for n in procs:
        r, dt, load = locked(lambda: mpitempo("clocks", "--platform", FATTREE, "-n", n, "--algorithms", algs,
                                              "--sim-random", "7:0.001:50", "--wait", "0,10", "--check-pp", "10",
                                              "--quiet", "--json"), exclusive=False)
        if r.returncode != 0:
            raise SystemExit(f"clocks at {n} ranks failed: {r.stderr.strip()[-500:]}")
        for x in json.loads(r.stdout):
            rows.append({"P": n, "algorithm": x["algorithm"], "wait_s": x["wait_s"],
                         "sync_duration_s": x["sync_duration_s"], "max_abs_offset_s": x["max_abs_offset_s"]})
        print(f"sync: {n} ranks: {dt:.1f} s host, load {load:.2f}", file=sys.stderr)
        rows.append({"P": n, "host_s": round(dt, 1), "load_avg_1min": load, "lock": "shared"})
    return rows


def ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="64,256,1024", help="ranks of the cost campaign")
    ap.add_argument("--barrier", action="append", default=None, metavar="PLATFORM:PPN:P,P,...",
                    help="a barrier study (repeatable; default: " + "; ".join(BARRIER) + ")")
    ap.add_argument("--sync-procs", default="64,256,512,1024", help="P of the clock-sync study")
    ap.add_argument("--sync-algs", default=SYNC_ALGS, help="clock-sync specs")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: cost, barrier, sync, study1024")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    res = {"platform": str(FATTREE.relative_to(ROOT)), "argv": sys.argv[1:], "simgrid": "SMPI (smpirun -version)", "machine_cpus": os.cpu_count(),
           "note": "host seconds on a shared 2-core machine; simulated times are SimGrid's model, not hardware"}
    v = subprocess.run(["smpirun", "-version"], capture_output=True, text=True)
    res["simgrid"] = (v.stdout + v.stderr).strip()
    with tempfile.TemporaryDirectory(prefix="mpitempo-smpi-bench-") as d:
        tmp = Path(d)
        if "cost" not in skip:
            res["cost"] = cost(ints(a.ranks), tmp)
        if "barrier" not in skip:
            res["barrier"] = [barrier(b, tmp) for b in (a.barrier or BARRIER)]
        if "study1024" not in skip:
            res["study1024"] = barrier(f"{FATTREE1024.relative_to(ROOT)}:1:1024", tmp, exclusive=True)
        if "sync" not in skip:
            res["sync"] = sync(ints(a.sync_procs), a.sync_algs)
    out = ROOT / "bench" / "results" / f"smpi-scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
