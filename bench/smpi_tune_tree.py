#!/usr/bin/env python3
"""SimGrid/SMPI at 64 and 256 ranks: `mpitempo tune` with SMPI's MPICH and Open MPI selectors, and the tree
event analysis against an injected slow node and slow link (docs/simulation.md, "Tune, trees, ping-pong and
imbalance on a simulated platform").

1. tune: allreduce and bcast (256 ranks: allreduce) at 8 B, 1 KiB, 64 KiB on the 256-node fat tree (platforms/fattree256.xml), one
   rank per node, at 64 and 256 ranks, under --smpi-selector mpich and ompi (the default measured is that
   selector's choice); the rows (default vs chosen per size and np), the smpirun arguments written
   (smpi-coll-selection.txt) and the host seconds of each tune;
2. tree: the node-aware allreduce tree (--tree node, 4 ranks per node) at 64 and 256 ranks on
   platforms/cluster64-fast-slownode.xml (node fast-2 computes 4x slower; every rank computes --work 1 Mflop
   before each call) and cluster64-fast-slowlink.xml (fast-3's link: 20 us, 1.25 GB/s): what the analysis
   names (slow_hosts, slow_links), the allreduce time per call, host seconds.

Every part holds the CPU lock exclusively (each hold under 10 minutes) after waiting up to 4 minutes for the
1-minute load average to drop below 0.5, and records the load it saw: the host seconds are the only timing
here (the simulated times are deterministic) and are upper bounds when the load was above 0.5.

    PYTHONPATH=python python3 bench/smpi_tune_tree.py [--parts tune64,tune256-mpich,tune256-ompi,tree]
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
# 64 ranks: allreduce and bcast with these algorithms; 256 ranks (a simulated mpirun there costs about a
# minute of host time here): allreduce with the first five
ALGS = ("allreduce:rdb+lr+rab_rdb+redbcast+mvapich2_rs+rab2+ompi_ring_segmented+smp_binomial,"
        "bcast:binomial_tree+flattree+scatter_rdb_allgather+scatter_LR_allgather+ompi_pipeline+ompi_split_bintree")
ALGS_256 = "allreduce:rdb+lr+rab_rdb+redbcast+mvapich2_rs"


def mpitempo(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "mpitempo.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


SHARED = False   # --shared: hold the lock shared (the host seconds are then not those of an idle machine)


def locked(fn):
    """fn() under the exclusive CPU lock, after waiting (<= 4 min) for a load average below 0.5;
    (result, host seconds, load before, load after waiting)."""
    with open(os.environ.get("TMPDIR", "/tmp") + "/mpitempo-cpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH if SHARED else fcntl.LOCK_EX)
        t_wait = time.monotonic()
        while not SHARED and os.getloadavg()[0] >= 0.5 and time.monotonic() - t_wait < 240:
            time.sleep(10)
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        out = fn()
        return out, time.monotonic() - t0, load


def tune(n: int, selector: str, tmp: Path) -> dict:
    out = tmp / f"tune-{selector}-{n}"
    ops, algs = ("allreduce,bcast", ALGS) if n <= 64 else ("allreduce", ALGS_256)
    r, dt, load = locked(lambda: mpitempo("tune", "--platform", FATTREE, "--platform-ppn", "1", "-n", n,
                                          "--ops", ops, "--msizes", "8,1K,64K", "--algorithms", algs,
                                          "--smpi-selector", selector, "-o", out, "--quiet", "--json"))
    if r.returncode != 0:
        raise SystemExit(f"tune {selector} {n} failed: {r.stderr[-2000:]}")
    doc = json.loads(r.stdout)
    full = json.loads((out / "tune.json").read_text())
    per = {}
    for c in full["candidates"]:
        per.setdefault(f"{c['op']} {c['msize']}", {})[c["algorithm"]] = c["median_s"]
    rows = [{k: r.get(k) for k in ("op", "msize", "nprocs", "chosen", "median_default_s", "median_chosen_s",
                                   "gain_pct")} for r in doc["rows"]]
    for row in rows:
        alg = per.get(f"{row['op']} {row['msize']}", {})
        fastest = min((a for a in alg if alg[a] is not None), key=lambda a: alg[a], default=None)
        row["fastest_measured"] = fastest
    print(f"tune {selector} {n}: {dt:.0f} s host, load {load:.2f}", file=sys.stderr)
    return {"selector": selector, "nprocs": n, "host_s": round(dt, 1), "load_avg_1min": round(load, 2),
            "rows": rows, "candidates": per, "failed_algorithms": doc["failed_algorithms"],
            "smpi_coll_selection": (out / "smpi-coll-selection.txt").read_text()}


def tree(tmp: Path) -> list[dict]:
    def all_runs():
        res = []
        for name, extra in (("cluster64-fast-slownode.xml", ["--work", "1000000"]), ("cluster64-fast-slowlink.xml", [])):
            for n in (64, 256):
                t0 = time.monotonic()
                r = mpitempo("tree", "--platform", ROOT / "platforms" / name, "-n", n, "--tree", "node", *extra,
                             "--json")
                dt = time.monotonic() - t0
                if r.returncode != 0:
                    raise SystemExit(f"tree {name} {n} failed: {r.stderr[-2000:]}")
                d = json.loads(r.stdout)
                res.append({"platform": f"platforms/{name}", "nprocs": n, "args": ["--tree", "node", *extra],
                            "host_s": round(dt, 1), "call_median_s": d["call_median_s"],
                            "slow_hosts": d["slow_hosts"], "slow_links": d["slow_links"],
                            "imbalance": d["imbalance"]})
                print(f"tree {name} {n}: {dt:.0f} s host", file=sys.stderr)
        return res
    res, dt, load = locked(all_runs)
    for r in res:
        r["load_avg_1min"] = round(load, 2)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="tune64,tune256-mpich,tune256-ompi,tree")
    ap.add_argument("--shared", action="store_true",
                    help="hold the CPU lock shared, beside other jobs: the simulated results are the same (they are "
                         "deterministic), the host seconds are not an idle machine's (recorded as such)")
    a = ap.parse_args()
    global SHARED
    SHARED = a.shared
    parts = set(a.parts.split(","))
    v = subprocess.run(["smpirun", "-version"], capture_output=True, text=True)
    res = {"simgrid": (v.stdout + v.stderr).strip(), "machine_cpus": os.cpu_count(),
           "note": "SIMULATED (SimGrid/SMPI): the times are the platforms' model, not hardware; host seconds on a "
                   "shared 2-core machine (upper bounds where load_avg_1min > 0.5)", "tune": [], "tree": [],
           "lock": "shared: other jobs ran beside it, host seconds are upper bounds" if a.shared else "exclusive"}
    with tempfile.TemporaryDirectory(prefix="mpitempo-smpi-tune-") as d:
        tmp = Path(d)
        if "tune64" in parts:
            res["tune"] += [tune(64, "mpich", tmp), tune(64, "ompi", tmp)]
        if "tune256-mpich" in parts:
            res["tune"].append(tune(256, "mpich", tmp))
        if "tune256-ompi" in parts:
            res["tune"].append(tune(256, "ompi", tmp))
        if "tree" in parts:
            res["tree"] = tree(tmp)
    out = ROOT / "bench" / "results" / f"smpi-tune-tree-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(res, indent=1, default=float) + "\n")
    print(out)


if __name__ == "__main__":
    main()
