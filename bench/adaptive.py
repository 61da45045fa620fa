#!/usr/bin/env python3
"""Benchmark: adaptive repetitions and the estimate (docs/methods.md, "Adaptive repetitions";
docs/campaigns.md, "Budget and estimate").

  speed     the same campaign with a fixed nrep (--precision off: nrep 100, as `run` measured
            before adaptive repetitions) and with the default adaptive rule (--precision 1%,
            --exp-time 1s), interleaved ROUNDS times: wall time of each campaign, measurements
            taken, the per-experiment stop reasons, and the ratio of the row medians (adaptive /
            fixed: the answer must not move).
  estimate  for each examples/ campaign given: `run FILE --estimate` then the campaign itself;
            the estimate against the wall time of the campaign's mpiruns and of the whole command.

Every campaign runs under the CPU lock (flock) and the load average is recorded before and after.

  python3 bench/adaptive.py speed --ops bw --msizes 1M-4M --mpiruns 3 --rounds 2 --out bench/results/adaptive-speed.json
  python3 bench/adaptive.py estimate examples/demo.toml examples/pinning-compiler.toml --out bench/results/estimate.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOCK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock")


def load() -> float:
    return os.getloadavg()[0]


def mt(args: list[str], timeout: float = 7200) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    r = subprocess.run(["flock", LOCK, "mpitempo", *args], capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def summary(d: Path) -> list[dict]:
    r = subprocess.run(["mpitempo", "summary", str(d), "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def stops(d: Path) -> tuple[int, dict]:
    n, by = 0, {}
    for m in d.glob("runs/*/meta.json"):
        for e in json.loads(m.read_text())["experiments"]:
            n += e["measurements"]
            by[e["stop"]] = by.get(e["stop"], 0) + 1
    return n, by


def mpirun_time(d: Path) -> float:
    tot = 0.0
    for line in (d / "runlog.jsonl").read_text().splitlines():
        e = json.loads(line)
        tot += e["duration_s"]
    return tot


def cmd_speed(a) -> dict:
    base = ["run", "--ops", a.ops, "--msizes", a.msizes, "--mpiruns", str(a.mpiruns), "--quiet", "--no-summary"]
    variants = {"fixed": ["--precision", "off"], "adaptive": []}
    out = {"command": " ".join(sys.argv), "ops": a.ops, "msizes": a.msizes, "mpiruns": a.mpiruns, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="mt-bench-adaptive-") as td:
        for i in range(a.rounds):
            rnd = {}
            for name, extra in variants.items():
                d = Path(td) / f"{name}-{i}"
                l0 = load()
                r, wall = mt([*base, *extra, "-o", str(d)])
                if r.returncode != 0:
                    raise SystemExit(f"{name}: {r.stderr[-2000:]}")
                n, by = stops(d)
                rows = summary(d)
                rnd[name] = {"wall_s": wall, "mpirun_s": mpirun_time(d), "measurements": n, "stops": by,
                             "load_before": l0, "load_after": load(),
                             "medians_s": {f"{x['op']} {x['msize']}": x["median_s"] for x in rows},
                             "ci_rel": {f"{x['op']} {x['msize']}": x.get("ci_rel") for x in rows}}
                print(f"round {i} {name}: {wall:.1f} s, {n} measurements, stops {by}, load {l0:.2f}", file=sys.stderr)
            rnd["wall_ratio"] = rnd["adaptive"]["wall_s"] / rnd["fixed"]["wall_s"]
            rnd["median_ratio"] = {k: rnd["adaptive"]["medians_s"][k] / v for k, v in rnd["fixed"]["medians_s"].items()
                                   if k in rnd["adaptive"]["medians_s"] and v}
            out["rounds"].append(rnd)
    return out


_EST = re.compile(r"estimate (?:about ([^:]+)|between (.+?) and ([^:]+)):")


def _secs(text: str) -> float:
    text = text.strip()
    m = re.fullmatch(r"(\d+) h (\d+) min", text)
    if m:
        return int(m[1]) * 3600 + int(m[2]) * 60
    m = re.fullmatch(r"(\d+) min (\d+) s", text)
    if m:
        return int(m[1]) * 60 + int(m[2])
    m = re.fullmatch(r"([\d.]+) (ms|s)", text)
    return float(m[1]) * (1e-3 if m[2] == "ms" else 1)


def cmd_estimate(a) -> dict:
    out = {"command": " ".join(sys.argv), "campaigns": []}
    with tempfile.TemporaryDirectory(prefix="mt-bench-estimate-") as td:
        for f in a.files:
            l0 = load()
            r, _ = mt(["run", f, "--estimate"])
            if r.returncode != 0:
                raise SystemExit(f"{f}: {r.stderr[-2000:]}")
            m = _EST.search(r.stderr)
            lo, hi = (_secs(m[1]), _secs(m[1])) if m[1] else (_secs(m[2]), _secs(m[3]))
            d = Path(td) / Path(f).stem
            r, wall = mt(["run", f, "-o", str(d), "--quiet", "--no-summary"])
            if r.returncode != 0:
                raise SystemExit(f"{f}: {r.stderr[-2000:]}")
            runs = mpirun_time(d)
            e = {"file": f, "estimate_lo_s": lo, "estimate_hi_s": hi, "wall_s": wall, "mpiruns_s": runs,
                 "error_vs_wall": (hi + lo) / 2 / wall - 1, "load_before": l0, "load_after": load()}
            out["campaigns"].append(e)
            print(f"{f}: estimate {lo:.1f}-{hi:.1f} s, actual {wall:.1f} s (mpiruns {runs:.1f} s): "
                  f"{e['error_vs_wall']:+.1%}, load {l0:.2f}", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--ops", default="bw")
    s.add_argument("--msizes", default="1M-4M")
    s.add_argument("--mpiruns", type=int, default=3)
    s.add_argument("--rounds", type=int, default=2)
    s.add_argument("--out")
    e = sub.add_parser("estimate")
    e.add_argument("files", nargs="+")
    e.add_argument("--out")
    a = ap.parse_args()
    res = cmd_speed(a) if a.cmd == "speed" else cmd_estimate(a)
    res["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
