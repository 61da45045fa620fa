#!/usr/bin/env python3
"""Benchmark of `mpitempo history` (docs/history.md) on synthetic histories (not real runs):

  false   the false-alarm rate: SERIES histories of 60 identical nights (5 run medians each, run noise
          1%, night-to-night noise 0.5%): the share of series with any change point (goal <= 5%);
  detect  a slowdown of 3% from night 40 of 60 (same noise): the share of series in which a change is
          found within 1 night of night 40, and the error of its size;
  query   a DuckDB store of 1000 campaigns x 200 series x 5 runs (1,000,000 points, written straight into
          the history tables): the time of store.load() of everything, of one op, of --since (goal < 1 s),
          and of load + analyze.build_series (the per-entry medians and CIs of every series); each the
          best of 3, with its CPU time (user+sys of this process: load inflates it far less than wall
          time) and the 1-minute load average just before.

The rates come with their Wilson 95% interval. Only the query part times anything: run it under the CPU lock, the others without (each part is added to
the --out file):
  python bench/history_rates.py --parts false,detect --out bench/results/history_rates.json
  flock /tmp/mpitempo-cpu.lock python bench/history_rates.py --parts query --out bench/results/history_rates.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from mpitempo.history.analyze import analyse


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [max(0.0, c - h), min(1.0, c + h)]


def synthetic(rng, n_series: int, nights: int, at: int | None, rel: float, runs=5, night_sd=0.005, run_sd=0.01):
    entries, points = [], []
    for i in range(nights):
        dig = f"e{i:04d}"
        entries.append({"digest": dig, "name": f"night{i:02d}", "started_at": f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T02:00:00Z",
                        "factors": {"library": "L2" if at is not None and i >= at else "L1"}})
    for s in range(n_series):
        for i in range(nights):
            f = (1 + rel) if at is not None and i >= at else 1.0
            lvl = math.log(1e-6 * f) + rng.normal(0, night_sd)
            for j, v in enumerate(np.exp(lvl + rng.normal(0, run_sd, runs))):
                points.append({"digest": f"e{i:04d}", "machine": "m", "config": "c", "op": "allreduce", "msize": s,
                               "nprocs": 2, "run_id": f"r{j}", "run_index": j, "started_at": "", "median_s": float(v),
                               "n": 100, "flags": ""})
    return entries, points


def part_false(n_series: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    e, p = synthetic(rng, n_series, 60, None, 0.0)
    t0 = time.perf_counter()
    res = analyse(e, p, 0.05, 199, 2, 5.0, 5, seed)
    alarms = sum(1 for s in res["series"] if s["changes"])
    return {"series": n_series, "nights": 60, "with_change": alarms, "rate": alarms / n_series,
            "rate_ci95": wilson(alarms, n_series), "seconds": time.perf_counter() - t0}


def part_detect(n_series: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    e, p = synthetic(rng, n_series, 60, 40, 0.03)
    res = analyse(e, p, 0.05, 199, 2, 2.0, 20, seed)
    hits, sizes, extra = 0, [], 0
    for s in res["series"]:
        near = [c for c in s["changes"] if abs(c["entry_index"] - 40) <= 1]
        hits += bool(near)
        extra += len(s["changes"]) - len(near[:1])
        if near:
            sizes.append(near[0]["size_pct"])
    return {"series": n_series, "nights": 60, "change_at": 40, "slowdown_pct": 3.0, "found_within_1": hits,
            "rate": hits / n_series, "rate_ci95": wilson(hits, n_series),
            "size_pct_median": float(np.median(sizes)) if sizes else None,
            "size_pct_iqr": [float(x) for x in np.quantile(sizes, [0.25, 0.75])] if sizes else None,
            "other_changes": extra}


def part_query(campaigns: int, series: int, runs: int) -> dict:
    import duckdb

    from mpitempo.history import store

    d = Path(tempfile.mkdtemp(prefix="mt-histq-"))
    db = d / "h.duckdb"
    con = duckdb.connect(str(db))
    for ddl in store.DDL:
        con.execute(ddl)
    con.execute("INSERT INTO hist_schema VALUES (1)")
    con.execute(f"""INSERT INTO hist_entries SELECT 'd' || i, 'night' || i, '/x', 'm',
        strftime(TIMESTAMP '2024-01-01' + INTERVAL (i) DAY, '%Y-%m-%dT%H:%M:%S.000000Z'), '', 'h', {runs}, 0, '{{}}'
        FROM range({campaigns}) t(i)""")
    con.execute(f"""INSERT INTO hist_points SELECT 'd' || c, 'm', 'cfg', CASE WHEN s % 4 = 0 THEN 'bcast' ELSE 'allreduce' END,
        s, 2, 'r' || r, r, '', 1e-6 * (1 + random() * 0.01), 100, ''
        FROM range({campaigns}) a(c), range({series}) b(s), range({runs}) x(r)""")
    con.close()
    from mpitempo.history.analyze import build_series

    times = {}
    cases = (("all", {}, False), ("one_op", {"ops": ["bcast"]}, False), ("since", {"since": "2026-01-01"}, False),
             ("all_with_series", {}, True))
    for name, kw, with_series in cases:
        best = None
        for _ in range(3):
            la = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            ents, pts = store.load(str(db), **kw)
            if with_series:
                build_series(ents, pts)
            t, c = time.perf_counter() - t0, time.process_time() - c0
            if best is None or t < best["seconds"]:
                best = {"seconds": t, "cpu_seconds": c, "load1": la}
        times[name] = {**best, "points": len(pts), "entries": len(ents)}
    size = db.stat().st_size
    for f in d.iterdir():
        f.unlink()
    d.rmdir()
    return {"campaigns": campaigns, "series": series, "runs": runs, "points": campaigns * series * runs,
            "db_bytes": size, "load": times}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parts", default="false,detect,query")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    prev = json.loads(Path(a.out).read_text()) if a.out and Path(a.out).exists() else {}
    out = {**prev, "ncpu": os.cpu_count()}
    for part in a.parts.split(","):
        out.setdefault("load_avg", {})[part] = os.getloadavg()
        if part == "false":
            out["false_alarm"] = part_false(a.series, a.seed)
        elif part == "detect":
            out["detection"] = part_detect(a.series, a.seed + 1)
        elif part == "query":
            out["query"] = part_query(1000, 200, 5)
        print(json.dumps({k: v for k, v in out.items() if k not in ("load_avg", "ncpu")}, indent=1), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
