#!/usr/bin/env python3
"""Benchmark: a node-aware allreduce tree vs a tree that ignores the hosts, on 4 fake hosts x 2
ranks (network namespaces, TCP between hosts, tests/netns/cluster.py). Not a pass/fail test.

Configurations (8 ranks, ranks 2k and 2k+1 on host k):
  node-aware   node:binomial:flat: a binomial tree over the hosts' first ranks, the second rank of
               each host under it (3 edges cross hosts)
  oblivious    binomial over nodes placed round-robin over the hosts (--tree-map 0,2,4,6,1,3,5,7:
               6 of 7 edges cross hosts)
--mpiruns mpiruns of each, interleaved; per mpirun the median over calls of the allreduce time
(max exit - min enter on one CLOCK_MONOTONIC, all fake hosts share the kernel); then the
Wilcoxon rank-sum (Mann-Whitney) test on the run medians. 8 ranks share 2 CPUs here, so the times
include scheduling: the run is oversubscribed and says so.

With --link-rate each host's outgoing link is limited by a token bucket (tc tbf; this kernel has
no netem for delays), so that a message between hosts costs more than one within a host, as on a
real cluster; with a large --msize the transfers between hosts then dominate the CPU scheduling of
the 8 oversubscribed ranks.

usage: PYTHONPATH=python:tests flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" python3 bench/tree_netns.py \
           [--mpiruns 8] [--ncalls 400] [--msize 64K --link-rate 100mbit --intra tcp]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from netns import cluster as nc  # noqa: E402

from mpitempo.analysis import tree as analysis  # noqa: E402
from mpitempo.build import ensure_build  # noqa: E402
from mpitempo.stats.compare import compare_samples  # noqa: E402

CONFIGS = {"node-aware": ["--tree", "node:binomial:flat"],
           "oblivious": ["--tree", "binomial", "--tree-map", "0,2,4,6,1,3,5,7"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiruns", type=int, default=8)
    ap.add_argument("--ncalls", type=int, default=400)
    ap.add_argument("--msize", default=None)
    ap.add_argument("--link-rate", default=None,
                    help="limit each fake host's outgoing link (tc tbf), e.g. 500mbit: links between hosts slower "
                         "than within a host, as on a real cluster (the ranks of one host talk over its loopback)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "tree_netns.json"))
    ap.add_argument("--intra", choices=("shm", "tcp"), default="shm",
                    help="how the two ranks of a host talk: the MPI library's shared memory (default) or TCP over "
                         "the host's loopback (MPICH: MPIR_CVAR_NOLOCAL=1; with 8 ranks on 2 CPUs MPICH's "
                         "shared-memory path was slower than TCP, which hides the tree's shape)")
    a = ap.parse_args()
    why = nc.unavailable(time_namespaces=False)
    if why:
        print(f"fake hosts unavailable: {why}", file=sys.stderr)
        return 1
    build = ensure_build()
    load = os.getloadavg()
    env = dict(os.environ)
    env.update({"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1", "MPITEMPO_CLOCK_SLEEP": "1"})
    if a.intra == "tcp":
        env["MPIR_CVAR_NOLOCAL"] = "1"
    runs: dict[str, list[dict]] = {c: [] for c in CONFIGS}
    with nc.Cluster(4, subnet="10.81.0") as c, tempfile.TemporaryDirectory() as tmp:
        if a.link_rate:
            for h in c.hosts:
                subprocess.run(["ip", "netns", "exec", h, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate",
                                a.link_rate, "burst", "256kb", "latency", "50ms"], check=True)
        for i in range(a.mpiruns):
            for name, args in (CONFIGS.items() if i % 2 == 0 else reversed(CONFIGS.items())):
                d = Path(tmp) / f"{name}-{i}"
                d.mkdir()
                cmd = [build.binary("mpitempo-tree"), "--expect-np", "8", "--sync", "none", "--overhead-reps", "0",
                       "--ncalls", str(a.ncalls), "--warmup", "50", "--config", name, "--run-index", str(i),
                       "--outdir", str(d), *args] + (["--msize", a.msize] if a.msize else [])
                p = subprocess.run(c.mpiexec_argv(build.mpiexec, 2, cmd), capture_output=True, text=True, env=env,
                                   timeout=1800)
                if p.returncode != 0:
                    print(p.stderr, file=sys.stderr)
                    return 1
                r = analysis.analyse_run(d)
                runs[name].append({"call_median_s": r["call_median_s"], "oversubscribed": r["oversubscribed"],
                                   "inter_host_edges": sum(1 for x in r["paths"] if x["hops"] > 0 and
                                                           r["hosts"][x["rank"]] != r["hosts"][r["parent"][x["rank"]]])})
                print(f"{name} run {i}: median allreduce {r['call_median_s'] * 1e6:.1f} us", flush=True)
    cmp = compare_samples([x["call_median_s"] for x in runs["oblivious"]],
                          [x["call_median_s"] for x in runs["node-aware"]], alternative="greater")
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "hosts": 4, "ranks_per_host": 2,
           "ncalls": a.ncalls, "mpiruns": a.mpiruns, "msize": a.msize, "link_rate": a.link_rate,
           "intra": a.intra, "loadavg_at_start": load, "loadavg_at_end": os.getloadavg(),
           "runs": runs, "comparison": {k: v for k, v in cmp.items()}}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(f"oblivious {cmp['median_a_s'] * 1e6:.1f} us vs node-aware {cmp['median_b_s'] * 1e6:.1f} us per call: "
          f"{cmp['delta_pct']:+.1f}%, p = {cmp['p_value']:.3g} {cmp['stars']} (one-sided, {a.mpiruns} mpiruns each; "
          f"8 ranks on 2 CPUs: oversubscribed; load average at start {load[0]:.1f})")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
