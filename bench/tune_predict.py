#!/usr/bin/env python3
"""Benchmark: how well `mpitempo tune`'s model predicts the best algorithm at sizes it did not measure.

Runs one real tune campaign (default + the named algorithms, --mpiruns interleaved mpiruns, sizes by
powers of two) and reads the leave-one-out error that tune computes (docs/tune.md, "Prediction"): every
measured size is held out in turn, the per-algorithm a + b*m models are refitted without it and
predict there. Reported per (op, np): how often the predicted best algorithm is the measured best
(hit rate), the regret (extra time of following the prediction, % of the best measured time) and the
error of the predicted time.

Hold the CPU lock: flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" python bench/tune_predict.py --out
Results: bench/results/tune_predict.json (with --out). The load average before and after is recorded.
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

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="allreduce,bcast")
    ap.add_argument("--algorithms", default="allreduce:recursive_doubling+ring+tree,"
                                            "bcast:binomial+scatter_ring_allgather+pipelined_tree")
    ap.add_argument("--msizes", default="8-64K")
    ap.add_argument("--mpiruns", type=int, default=4)
    ap.add_argument("--time-slice", default="30ms")
    ap.add_argument("--out", action="store_true", help="write bench/results/tune_predict.json")
    a = ap.parse_args()
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        cmd = [sys.executable, "-m", "mpitempo.cli", "tune", "--ops", a.ops, "--algorithms", a.algorithms,
               "--msizes", a.msizes, "--mpiruns", str(a.mpiruns), "--time-slice", a.time_slice, "--nrep", "100",
               "--quiet", "--seed", "1", "-o", str(Path(d) / "t")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        res = json.loads((Path(d) / "t" / "tune.json").read_text())
        wall = time.monotonic() - t0
    load1 = os.getloadavg()
    out = {"command": " ".join(cmd[2:]), "library": res["library"], "date": time.strftime("%Y-%m-%d"),
           "wall_s": round(wall, 1), "load_before": load0[0], "load_after": load1[0],
           "shared_machine": max(load0[0], load1[0]) > 0.5, "method": res["prediction"]["method"],
           "leave_one_out": res["prediction"]["leave_one_out"], "cliffs": res["cliffs"]}
    for g in out["leave_one_out"]:
        if g.get("points"):
            print(f"{g['op']} np={g['nprocs']}: {g['points']} held-out sizes, best right {100 * g['hit_rate']:.0f}%, "
                  f"regret median {g['regret_median_pct']:.1f}% max {g['regret_max_pct']:.1f}%, |time error| "
                  f"median {g['abs_time_err_median_pct']:.1f}% max {g['abs_time_err_max_pct']:.1f}%")
    print(f"load average {load0[0]:.2f} before, {load1[0]:.2f} after; {wall:.0f} s")
    if a.out:
        p = ROOT / "bench" / "results" / "tune_predict.json"
        p.write_text(json.dumps(out, indent=1, default=float) + "\n")
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
