#!/usr/bin/env python3
"""Benchmark of the analysis side: `mpitempo summary` and `mpitempo compare` on 10 million and 100
million synthetic measurements.

    flock /tmp/mpitempo-cpu.lock python bench/stats_10m.py [--case 10m|100m|both] [--dir-10m D] [--dir-100m D]
        [--keep [--reuse-copies]] [--before-src PYTHON_DIR] [--repeat 3] [--out bench/results/stats_10m.json]

Campaigns (io.synthetic.make_campaign): 2 configurations x 20 mpiruns (40 runs) x 5 ops x 10 sizes,
right-skewed runtimes with a second mode, 0.5% large outliers, a per-mpirun effect, B 3% slower;
nrep 5000 (10 M measurements, 740 MiB of CSV) or 50000 (100 M, 7.4 GiB).

Each command runs as `python -m mpitempo.cli ...` in a fresh child (wall time includes the
interpreter's start and the imports; peak RSS and CPU time (user + system, all threads) are the
child's own, from getrusage):

* 10m: `summary DIR --json` and `compare DIR --json`, first the run that writes the columnar copies
  (once per run), then --repeat runs reading them (median and all values); with --before-src, the same
  two commands with the mpitempo package of that directory (e.g. the tree before the columnar copy,
  extracted with `git archive`), which reads the CSV;
* 100m: the copies written once, then `summary DIR --json` out of core (--repeat runs).

Targets (issue 26): 10 M summary < 2 s and compare < 2 s; 100 M summary < 30 s within 2 GiB.
The 1-minute load average is recorded before and after each case: on a shared machine (load > 0.5)
the figures are upper bounds.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN = ("import sys, resource; from mpitempo.cli import main; c = main(sys.argv[1:]); "
       "u = resource.getrusage(resource.RUSAGE_SELF); "
       "print('MAXRSS', u.ru_maxrss / 1024, u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(c)")


def make(root: Path, nrep: int) -> float:
    from mpitempo.io.synthetic import make_campaign

    t = time.perf_counter()
    make_campaign(root, {"A": 1.0, "B": 1.03}, runs=20, ops=("allreduce", "bcast", "alltoall", "reduce", "barrier"),
                  msizes=tuple(8 * 4 ** i for i in range(10)), nrep=nrep, seed=42)
    return time.perf_counter() - t


def cli(args: list[str], src: str | None = None) -> dict:
    """Run `mpitempo ARGS` in a child; wall seconds, peak RSS MiB, stdout size."""
    env = dict(os.environ)
    env["PYTHONPATH"] = src or str(HERE.parent / "python")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: mpitempo {' '.join(args)} failed: {r.stderr.strip()[-2000:]}")
    _, rss, cpu = [ln for ln in r.stderr.splitlines() if ln.startswith("MAXRSS")][-1].split()
    return {"wall_s": round(wall, 3), "cpu_s": round(float(cpu), 3), "peak_rss_mib": round(float(rss), 1),
            "stdout": r.stdout}


def repeated(args: list[str], n: int, src: str | None = None) -> dict:
    runs = [cli(args, src) for _ in range(n)]
    walls = [r["wall_s"] for r in runs]
    return {"wall_s_median": round(statistics.median(walls), 3), "wall_s_all": walls,
            "cpu_s_all": [r["cpu_s"] for r in runs],
            "peak_rss_mib_max": max(r["peak_rss_mib"] for r in runs), "stdout": runs[-1]["stdout"]}


def drop_copies(root: Path) -> None:
    for p in (root / "runs").glob("*/measurements.parquet*"):
        p.unlink()


def load() -> float:
    return round(os.getloadavg()[0], 2)


def case(root: Path, nrep: int, keep: bool, repeat: int, before_src: str | None, with_compare: bool,
         reuse_copies: bool = False) -> dict:
    res: dict = {"dir": str(root)}
    if not (keep and root.exists()):
        shutil.rmtree(root, ignore_errors=True)
        res["generate_s"] = round(make(root, nrep), 1)
    res["csv_mib"] = round(sum(f.stat().st_size for f in root.rglob("measurements.csv")) / 2 ** 20, 1)
    res["load_1m_before"] = load()
    if before_src:
        b = {"summary": repeated(["summary", str(root), "--json"], repeat, before_src)}
        if with_compare:
            b["compare"] = repeated(["compare", str(root), "--json"], repeat, before_src)
        res["before_csv"] = b
    if not reuse_copies:
        drop_copies(root)
        first = cli(["summary", str(root), "--json"])
        res["first_summary_writes_copies"] = {k: v for k, v in first.items() if k != "stdout"}
    res["copies_mib"] = round(sum(f.stat().st_size for f in root.rglob("measurements.parquet")) / 2 ** 20, 1)
    cli(["summary", str(root), "--json"])          # second read records the digests' times (io.columnar)
    after = {"summary": repeated(["summary", str(root), "--json"], repeat)}
    if with_compare:
        after["compare"] = repeated(["compare", str(root), "--json"], repeat)
    res["after_columnar"] = after
    rows = json.loads(after["summary"]["stdout"])
    res["groups"] = len(rows)
    res["measurements"] = sum(r["measurements"] for r in rows)
    if before_src:   # the same numbers both ways (means to rounding: the sums are taken in another order)
        old = json.loads(res["before_csv"]["summary"]["stdout"])
        res["same_medians_as_before"] = [(r["median_s"], r["runs"], r["outliers"]) for r in rows] == \
                                        [(r["median_s"], r["runs"], r["outliers"]) for r in old]
        if with_compare:
            res["same_compare_as_before"] = res["before_csv"]["compare"]["stdout"] == after["compare"]["stdout"]
    for d in (res.get("before_csv", {}), after):
        for v in d.values():
            v.pop("stdout", None)
    res["load_1m_after"] = load()
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=("10m", "100m", "both"), default="both")
    ap.add_argument("--dir-10m", default="/tmp/mt-bench-10m")
    ap.add_argument("--dir-100m", default="/tmp/mt-bench-100m")
    ap.add_argument("--keep", action="store_true", help="reuse existing campaign directories and keep them")
    ap.add_argument("--before-src", help="python/ directory of the mpitempo to compare against (10m case)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse-copies", action="store_true",
                    help="with --keep: keep the columnar copies already there (the first, writing summary is not timed)")
    ap.add_argument("--out", default=str(HERE / "results" / "stats_10m.json"))
    args = ap.parse_args()
    res = {"benchmark": "stats_10m", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": " ".join(["python", "bench/stats_10m.py", *sys.argv[1:]]),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "targets": {"10m_summary_s": 2, "10m_compare_s": 2, "100m_summary_s": 30, "100m_peak_rss_mib": 2048}}
    if args.case in ("10m", "both"):
        res["10m"] = case(Path(args.dir_10m), 5000, args.keep, args.repeat, args.before_src, True, args.reuse_copies)
    if args.case in ("100m", "both"):
        res["100m"] = case(Path(args.dir_100m), 50000, args.keep, args.repeat, None, False, args.reuse_copies)
    c10, c100 = res.get("10m"), res.get("100m")
    res["pass"] = {}
    if c10:
        a = c10["after_columnar"]
        res["pass"]["10m_summary"] = a["summary"]["wall_s_median"] < 2
        res["pass"]["10m_compare"] = a["compare"]["wall_s_median"] < 2
    if c100:
        a = c100["after_columnar"]["summary"]
        res["pass"]["100m_summary"] = a["wall_s_median"] < 30 and a["peak_rss_mib_max"] < 2048
    loads = [c[k] for c in (c10, c100) if c for k in ("load_1m_before", "load_1m_after")]
    res["shared_machine"] = max(loads) > 0.5
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
