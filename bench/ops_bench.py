#!/usr/bin/env python3
"""Benchmark of the bandwidth and non-blocking ops (issue: OSU/IMB operations; numbers go to
docs/benchmarks.md; nothing here is a pass/fail test):

1. window   the overhead of the bw op's window loop: bench/window_loop.c runs, in one mpirun of 2
            ranks, blocks of the registry's "bw" call interleaved with the same window written
            inline; overhead = median over block pairs of op / inline - 1 (target <= 1% at 8 B, W = 64);
2. bw       bandwidth of bw at 1 MiB against the osu_bw demo of mpi4py (--mpi4py-demo DIR: the demo/
            folder of an mpi4py checkout; mpi4py importable in this Python), interleaved mpiruns:
            mpitempo-bench (scheme loop, --inner 20, as OSU times 20 back-to-back windows; and scheme
            barrier) and the demo, --rounds times each; medians over the rounds and their ratio;
3. overlap  the overlap of the calibrated compute: a campaign of idelay / idelay_overlap (a
            communication that progresses by itself: the known answer is 100%) and of iallreduce /
            iallreduce_overlap, overlap % from `mpitempo summary --json` (target 98-102% for idelay).

Run it on an idle machine under the CPU lock, from the top of the checkout:
  flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" .venv/bin/python bench/ops_bench.py --mpi4py-demo DIR --out bench/results/ops.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpitempo.build import ensure_build
from mpitempo.runner.launch import make_launch

ROOT = Path(__file__).resolve().parents[1]


def run(launch, timeout=1800) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(launch.env)
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"mpirun failed ({' '.join(launch.argv)}): {r.stderr.strip()[-2000:]}")
    return r


def window_overhead(b, tmp: Path, calls: int, blocks: int) -> dict:
    bdir = tmp / "bench-build"
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(bdir), f"-DMPI_C_COMPILER={b.mpicc}", "-DMPITEMPO_BENCH=ON",
                    "-DMPITEMPO_TESTS=OFF", "-DMPITEMPO_TRACE=OFF"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(bdir), "-j2", "--target", "bench_window_loop"], check=True,
                   capture_output=True)
    out = {}
    for msize in (8, 1 << 20):
        r = run(make_launch(b, 2, [str(bdir / "bench_window_loop"), str(msize), "64", str(calls if msize == 8 else 5),
                                   str(blocks)]))
        out[str(msize)] = json.loads(r.stdout.strip().splitlines()[-1])
        o = out[str(msize)]
        print(f"window loop {msize} B, W=64: op {o['op_window_median_s'] * 1e6:.2f} us, inline "
              f"{o['inline_window_median_s'] * 1e6:.2f} us per window; overhead {100 * o['overhead_median_ratio']:+.2f}%")
    return out


def bench_bw_mbps(b, tmp: Path, scheme: str, i: int, msize: int, rbuf: str = "window") -> float:
    d = tmp / f"bw-{scheme}-{rbuf}-{i}"
    d.mkdir()
    args = ["--ops", "bw", "--msizes", str(msize), "--nrep", "10", "--warmup", "2", "--scheme", scheme, "--outdir",
            str(d), "--quiet", "--bw-rbuf", rbuf]
    if scheme == "loop":
        args += ["--inner", "20"]
    run(make_launch(b, 2, [b.binary("mpitempo-bench")] + args))
    meta = json.loads((d / "meta.json").read_text())
    e = meta["experiments"][0]
    return e["bytes_per_call"] / e["median_s"] / 1e6


def demo_bw_mbps(b, demo: Path, msize: int) -> float:
    code = (f"import sys; sys.path.insert(0, {str(demo)!r}); import osu_bw; "
            f"osu_bw.osu_bw(MAX_MSG_SIZE={msize})")
    r = run(make_launch(b, 2, [sys.executable, "-c", code]))
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+)\s*$", line)
        if m and int(m.group(1)) == msize:
            return float(m.group(2))
    sys.exit(f"no {msize} B line in the osu_bw demo's output:\n{r.stdout}")


def bandwidth(b, tmp: Path, demo: Path | None, rounds: int, msize: int) -> dict:
    # loop: OSU's timing (windows back to back); rbuf single: OSU's one receive buffer
    variants = {"loop": ("loop", "window"), "barrier": ("barrier", "window"), "loop_single": ("loop", "single"),
                "barrier_single": ("barrier", "single")}
    res = {"msize": msize, "rounds": rounds, "mpi4py_osu_bw": [], **{k: [] for k in variants}}
    for i in range(rounds):
        for k, (scheme, rbuf) in variants.items():
            res[k].append(bench_bw_mbps(b, tmp, scheme, i, msize, rbuf))
        if demo:
            res["mpi4py_osu_bw"].append(demo_bw_mbps(b, demo, msize))
        print(f"round {i}: " + ", ".join(f"{k} {res[k][-1]:.0f}" for k in variants)
              + (f", mpi4py osu_bw {res['mpi4py_osu_bw'][-1]:.0f}" if demo else "") + " MB/s")
    for k in list(variants) + ["mpi4py_osu_bw"]:
        if res[k]:
            res[k + "_median_MBps"] = statistics.median(res[k])
    if demo:
        for k in variants:
            res[f"{k}_over_mpi4py"] = res[k + "_median_MBps"] / res["mpi4py_osu_bw_median_MBps"]
            print(f"median {k} / mpi4py osu_bw = {res[f'{k}_over_mpi4py']:.3f}")
    return res


def overlap(tmp: Path, mpiruns: int) -> dict:
    camp = tmp / "overlap"
    mt = [str(Path(sys.executable).with_name("mpitempo"))]
    subprocess.run(mt + ["run", "--ops", "idelay,idelay_overlap,idelay_blocking,idelay_blocking_overlap,iallreduce,"
                         "iallreduce_overlap", "--msizes", "8,64K", "--delay", "100us", "--nrep", "100",
                         "--mpiruns", str(mpiruns), "-o", str(camp), "--quiet", "--no-summary"], check=True)
    rows = json.loads(subprocess.run(mt + ["summary", str(camp), "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    out = {}
    for r in rows:
        ov = r.get("overlap_pct")
        if ov:
            out[f"{r['op']}@{r['msize']}"] = {k: ov.get(k) for k in ("median", "min", "max", "runs", "pure_source")}
            print(f"overlap {r['op']} {r['msize']} B: median {ov.get('median'):.1f}% "
                  f"(runs {ov.get('min'):.1f}-{ov.get('max'):.1f}%), flags {r.get('flags')}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="window,bw,overlap")
    ap.add_argument("--mpi4py-demo", type=Path, default=None, help="the demo/ folder of an mpi4py checkout")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=200)
    ap.add_argument("--mpiruns", type=int, default=6)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    b = ensure_build()
    load = os.getloadavg()[0]
    print(f"load average (1 min) at the start: {load:.2f}")
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "load_1min_at_start": load, "mpiexec": b.mpiexec,
           "flavour": b.flavour}
    tmp = Path(tempfile.mkdtemp(prefix="ops-bench-"))
    try:
        if "window" in parts:
            res["window_loop"] = window_overhead(b, tmp, a.calls, a.blocks)
        if "bw" in parts:
            res["bandwidth_1MiB"] = bandwidth(b, tmp, a.mpi4py_demo, a.rounds, 1 << 20)
        if "overlap" in parts:
            res["overlap"] = overlap(tmp, a.mpiruns)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["load_1min_at_end"] = os.getloadavg()[0]
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")
        print(f"results: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
