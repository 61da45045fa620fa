#!/usr/bin/env python3
"""Benchmark: the LogP prediction gap of 2-rank barriers, term by term.

On 2 ranks every algorithm is one exchange, or one message up and one down; the model charges
o_s + L + o_r per message (= RTT/2 of the ping-pong). This script measures, interleaved over
REPEAT repetitions (each: one mpirun per item), what a Round-Time barrier adds to that:

  logp-probe / logp-wait   mpitempo-logp --o-r-method probe | wait: RTT/2, o_s, o_r, L, g
  roundtime                mpitempo-bench --scheme roundtime --per-rank on the null op (delay 0:
                           the scheme's own floor: start skew of the global clock + timer), and the
                           barriers; per measurement from perrank.bin: the entry skew
                           max(start) - min(start) and the exit imbalance max(end) - min(end)
  loop                     mpitempo-bench --scheme loop --inner 100: the same barriers back to back
                           (steady state: no common start)
  gap                      bench/barrier_gap.c: ping-pong RTT/2, back-to-back exchange and an exchange
                           or a message started by both ranks at one instant of CLOCK_MONOTONIC (one
                           clock on one host: Round-Time with a perfect clock), on MPI_COMM_WORLD and
                           a duplicate, 0- and 4-byte messages
Every value is the median over repetitions of the per-mpirun median. Holds the CPU lock during
each mpirun and records the load average at the start and the end.

usage: bench/barrier_gap.py [--repeat 7] [--nrep 1000] [--mpicc PATH] [--out FILE]
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from mpitempo.build import ensure_build  # noqa: E402
from mpitempo.io.perrank import read_perrank  # noqa: E402
from mpitempo.runner.launch import make_launch  # noqa: E402

OPS = ["delay", "barrier:dissemination", "barrier:pairwise", "barrier:butterfly", "barrier:central", "barrier:mcs",
       "barrier:tournament", "barrier"]


def mpirun(b, argv, lockf):
    launch = make_launch(b, 2, argv)
    fcntl.flock(lockf, fcntl.LOCK_EX)
    try:
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=dict(os.environ, **launch.env),
                           timeout=600)
    finally:
        fcntl.flock(lockf, fcntl.LOCK_UN)
    if r.returncode not in (0, 3):
        raise SystemExit(f"mpirun failed ({argv[0]}): {r.stderr.strip()[-500:]}")
    return r.stdout


def bench(b, scheme_args, nrep, tmp, lockf):
    d = Path(tempfile.mkdtemp(dir=tmp))
    mpirun(b, [b.binary(), "--outdir", str(d), "--ops", ",".join(OPS), "--delay", "0us", "--nrep", str(nrep),
               "--quiet", "--per-rank", *scheme_args], lockf)
    meta = json.loads((d / "meta.json").read_text())
    out = {e["op"]: {"median_s": e["median_s"]} for e in meta["experiments"]}
    pr = read_perrank(d / "perrank.bin")
    for e in meta["experiments"]:
        start, end = pr.experiment(e["exp"])
        if start.shape[1]:
            out[e["op"]]["entry_skew_s"] = float(np.median(start.max(0) - start.min(0)))
            out[e["op"]]["exit_imbalance_s"] = float(np.median(end.max(0) - end.min(0)))
    return out


def logp(b, method, nrep, lockf):
    doc = json.loads(mpirun(b, [b.binary("mpitempo-logp"), "--nrep", str(nrep), "--o-r-method", method, "--quiet"],
                            lockf))
    lp = doc["logp"]
    return {"rtt_half_s": lp["rtt_s"] / 2, "o_s_s": lp["o_s_s"], "o_r_s": lp["o_r_s"], "L_s": lp["L_s"],
            "g_s": lp["g_s"]}


def flat(prefix, d, out):
    for k, v in d.items():
        if isinstance(v, dict):
            flat(f"{prefix}{k}.", v, out)
        else:
            out[prefix + k] = v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--nrep", type=int, default=1000)
    ap.add_argument("--mpicc", default=None)
    ap.add_argument("--out", default=str(HERE / "results" / "barrier_gap.json"))
    a = ap.parse_args()
    b = ensure_build(a.mpicc)
    tmp = Path(tempfile.mkdtemp(prefix="mt-barrier-gap-"))
    gap_exe = tmp / "barrier_gap"
    subprocess.run([b.mpicc, "-O2", "-o", str(gap_exe), str(HERE / "barrier_gap.c")], check=True)
    lockf = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock"), "w")
    load0 = os.getloadavg()
    reps = []
    for i in range(a.repeat):
        rec = {}
        flat("logp-probe.", logp(b, "probe", a.nrep, lockf), rec)
        flat("logp-wait.", logp(b, "wait", a.nrep, lockf), rec)
        flat("roundtime.", bench(b, ["--scheme", "roundtime", "--time-slice", "2s"], a.nrep, tmp, lockf), rec)
        flat("loop.", bench(b, ["--scheme", "loop", "--inner", "100"], max(a.nrep // 10, 20), tmp, lockf), rec)
        flat("gap.", json.loads(mpirun(b, [str(gap_exe), "2000", "5"], lockf)), rec)
        reps.append(rec)
        print(f"repetition {i + 1}/{a.repeat} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    keys = [k for k in reps[0] if isinstance(reps[0][k], float)]
    med = {k: statistics.median(r[k] for r in reps if k in r) for k in keys}
    doc = {"repeat": a.repeat, "nrep": a.nrep, "load_start": load0, "load_end": load1,
           "mpi": b.mpiexec_version, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "median": med, "repetitions": reps}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end; {a.repeat} repetitions; "
          f"{b.mpiexec_version}")
    print("| quantity | median over repetitions |\n|---|---|")
    for k in keys:
        print(f"| {k} | {med[k] * 1e6:.3f} us |")
    print(f"results: {a.out}")
    subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
