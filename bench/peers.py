#!/usr/bin/env python3
"""Benchmark: mpitempo `--like osu` side by side with the OSU Micro-Benchmarks 7.4 binaries (and IMB
when given), interleaved, on 2 ranks (docs/methods.md, "Compared with OSU and IMB").

For every benchmark of the OSU day-one set (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_allreduce,
osu_iallreduce, osu_put_latency with lock and with fence) and every round: the OSU binary
(`-m MIN:MAX -z`: its per-iteration percentiles) and then mpitempo's equivalent (`run --ops osu_X
--like osu --per-rank --precision P`, exported with `export --osu --tail`: OSU's layout, statistic
and -z columns), each under the CPU lock, for the same powers-of-two sizes. Recorded per benchmark
and size: both P50 values (OSU's of one run; mpitempo's the median over its mpiruns of each run's
P50), the ratio mpitempo / OSU, both wall times (the whole OSU run and the whole mpitempo campaign),
the load before each. Means are not comparable on a shared VM: P50 is compared with P50; a column
missing on either side is recorded as missing, never replaced by another. With `--imb DIR` (DIR/IMB-MPI1), IMB's PingPong, Uniband, Biband and
Allreduce the same way against `run --ops IMB:X --like imb` exported with `export --imb`: IMB prints
means over its n_sample repetitions only (t[usec], Mbytes/sec, t_avg[usec]), compared with mpitempo's
export of the same column.

Build the peers first, outside the repository: sh bench/peers_build.sh /work/peers

  python3 bench/peers.py --osu /work/peers/osu-7.4 --imb /work/peers/imb --sizes 8-4M --rounds 2 \
      --out bench/results/peers.json
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

LOCK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock")
KEEP = (8, 1024, 65536, 1 << 20, 4 << 20)   # the sizes recorded (the day-one set)

# benchmark label -> (OSU binary, its extra flags, mpitempo ops, extra mpitempo flags, the OSU column compared)
SET = {
    "osu_latency": ("pt2pt/standard/osu_latency", [], "osu_latency", [], "P50 Tail Lat(us)"),
    "osu_bw": ("pt2pt/standard/osu_bw", [], "osu_bw", [], "P50 Tail BW(MB/s)"),
    "osu_bibw": ("pt2pt/standard/osu_bibw", [], "osu_bibw", [], "P50 Tail BW(MB/s)"),
    "osu_mbw_mr": ("pt2pt/standard/osu_mbw_mr", [], "osu_mbw_mr", [], "P50 Tail BW(MB/s)"),
    "osu_allreduce": ("collective/blocking/osu_allreduce", [], "osu_allreduce", [], "P50 Tail Lat(us)"),
    "osu_iallreduce": ("collective/non_blocking/osu_iallreduce", [], "osu_iallreduce", [], "P50 Tail Lat(us)"),
    "osu_put_latency lock": ("one-sided/osu_put_latency", ["-s", "lock"], "osu_put_latency",
                             ["--rma-sync", "lock"], "P50 Tail Lat(us)"),
    "osu_put_latency fence": ("one-sided/osu_put_latency", ["-s", "fence"], "osu_put_latency",
                              ["--rma-sync", "fence", "--rma-epochs", "2"], "P50 Tail Lat(us)"),
}

# with --together FILE (examples/osu-day-one.toml): label -> the export file of that campaign
TOGETHER_FILE = {
    "osu_latency": "osu_multi_lat.loop.np2.txt", "osu_bw": "osu_bw.loop.np2.txt", "osu_bibw": "osu_bibw.loop.np2.txt",
    "osu_mbw_mr": "osu_mbw_mr.barrier.np2.txt", "osu_allreduce": "osu_allreduce.barrier.np2.txt",
    "osu_iallreduce": "osu_iallreduce.barrier.np2.txt", "osu_put_latency lock": "osu_put_latency.loop.np2.txt",
    "osu_put_latency fence": "osu_put_latency.fence.np2.txt",
}

# IMB label -> (IMB binary, its benchmark name, mpitempo ops, extra mpitempo flags, the IMB column compared)
SET_IMB = {
    "IMB PingPong": ("IMB-MPI1", "PingPong", "IMB:PingPong", [], "t[usec]"),
    "IMB Uniband": ("IMB-MPI1", "Uniband", "IMB:Uniband", [], "Mbytes/sec"),
    "IMB Biband": ("IMB-MPI1", "Biband", "IMB:Biband", [], "Mbytes/sec"),
    "IMB Allreduce": ("IMB-MPI1", "Allreduce", "IMB:Allreduce", [], "t_avg[usec]"),
}


def size_range(text: str) -> tuple[int, int]:
    mult = {"": 1, "K": 1024, "M": 1 << 20}
    m = re.fullmatch(r"(\d+)([KM]?)-(\d+)([KM]?)", text)
    if not m:
        raise SystemExit(f"--sizes: expected MIN-MAX such as 8-4M, not '{text}'")
    return int(m[1]) * mult[m[2]], int(m[3]) * mult[m[4]]


def table(text: str) -> dict[int, dict[str, float]]:
    """size -> {column: value} of an OSU-layout text (OSU's own output or mpitempo's export)."""
    cols, rows = None, {}
    for line in text.splitlines():
        if line.startswith("# Size"):   # fields of 18 after a 10-wide size (FIELD_WIDTH of a configure-built OSU):
            # headers may touch ("Messages/s P50 Tail BW(MB/s)"), so cut by width, not by blanks
            cols = ["Size"] + [line[k:k + 18].strip() for k in range(10, len(line), 18)]
        elif cols and re.match(r"^\d+\s", line):
            vals = line.split()
            try:
                rows[int(vals[0])] = {c: float(v) for c, v in zip(cols[1:], vals[1:])}
            except ValueError:
                continue
    return rows


def imb_table(text: str) -> dict[int, dict[str, float]]:
    """size -> {column: value} of the first benchmark block of an IMB-layout text (IMB's own output for
    one benchmark, or mpitempo's export)."""
    cols, rows = None, {}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#bytes"):
            if rows:
                break
            cols = s.split()
        elif cols and re.match(r"^\d+\s", s):
            vals = s.split()
            try:
                rows[int(vals[0])] = {c: float(v) for c, v in zip(cols[1:], vals[1:])}
            except ValueError:
                continue
        elif cols and rows and s.startswith("#---"):
            break
    return rows


def locked(argv: list[str], env=None, timeout=3600) -> tuple[subprocess.CompletedProcess, float, float]:
    l0 = os.getloadavg()[0]
    t0 = time.monotonic()
    r = subprocess.run(["flock", LOCK, *argv], capture_output=True, text=True, env=env, timeout=timeout)
    return r, time.monotonic() - t0, l0


def run_osu(osu: Path, mpiexec: str, label: str, lo: int, hi: int) -> dict:
    binary, extra, *_ = SET[label]
    exe = osu / "src/c/mpi" / binary
    if not exe.exists():
        exe = osu / "c/mpi" / binary
    argv = [mpiexec, "-n", "2", "-bind-to", "core", str(exe), "-m", f"{lo}:{hi}", "-z", *extra]
    r, wall, l0 = locked(argv)
    if r.returncode != 0 or "-z" in r.stderr and "invalid" in r.stderr:   # a test without -z
        argv.remove("-z")
        r, wall, l0 = locked(argv)
    if r.returncode != 0:
        raise SystemExit(f"{label}: {' '.join(argv)} failed: {r.stderr[-800:]}")
    return {"argv": argv, "wall_s": wall, "load": l0, "rows": table(r.stdout)}


def run_imb(imb: Path, mpiexec: str, label: str, lo: int, hi: int) -> dict:
    binary, name, *_ = SET_IMB[label]
    argv = [mpiexec, "-n", "2", "-bind-to", "core", str(imb / binary), name, "-msglog",
            f"{lo.bit_length() - 1}:{hi.bit_length() - 1}", "-npmin", "2"]
    r, wall, l0 = locked(argv)
    if r.returncode != 0:
        raise SystemExit(f"{label}: {' '.join(argv)} failed: {r.stderr[-800:]}")
    return {"argv": argv, "wall_s": wall, "load": l0, "rows": imb_table(r.stdout)}


def run_mpitempo(label: str, lo: int, hi: int, precision: str, mpiruns: int | None, td: Path, i: int) -> dict:
    imb = label in SET_IMB
    _, _, ops, extra, _ = (SET_IMB if imb else SET)[label]
    d = td / f"{label.replace(' ', '-')}-{i}"
    argv = ["mpitempo", "run", "--ops", ops, "--like", "imb" if imb else "osu", "--per-rank", "--msizes", f"{lo}-{hi}",
            "--precision", precision, *extra, "-o", str(d), "--quiet", "--no-summary"]
    if mpiruns:
        argv += ["--mpiruns", str(mpiruns)]
    r, wall, l0 = locked(argv)
    if r.returncode != 0:
        raise SystemExit(f"{label}: {' '.join(argv)} failed: {r.stderr[-1500:]}")
    exp = td / f"export-{d.name}"
    e = subprocess.run(["mpitempo", "export", str(d), *(["--imb", str(exp)] if imb else ["--osu", str(exp), "--tail"])],
                       capture_output=True, text=True)
    if e.returncode != 0:
        raise SystemExit(f"{label}: export failed: {e.stderr[-800:]}")
    files = sorted(exp.glob("*.txt"))
    want = ops.replace("osu_", "").replace("IMB:", "")
    pick = ([f for f in files if f.name.startswith(ops)] or [f for f in files if f"_{want}." in f.name]
            or [f for f in files if want in f.name] or files)
    summ = json.loads(subprocess.run(["mpitempo", "summary", str(d), "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    stops = {f"{x['op']} {x['msize']}": x.get("stop") for x in summ}
    return {"argv": argv, "wall_s": wall, "load": l0, "rows": (imb_table if imb else table)(pick[0].read_text()),
            "export": pick[0].name,
            "stops": stops, "runs": max((x["runs"] for x in summ), default=0)}


def run_together(path: str, lo: int, hi: int, precision: str, mpiruns: int | None, td: Path, i: int) -> dict:
    """The whole OSU set as one campaign (every mpirun of a configuration measures all of its
    benchmarks), exported with --tail; {label: rows} for TOGETHER_FILE's labels."""
    d = td / f"together-{i}"
    argv = ["mpitempo", "run", path, "--msizes", f"{lo}-{hi}", "--precision", precision, "-o", str(d), "--quiet",
            "--no-summary"]
    if mpiruns:
        argv += ["--mpiruns", str(mpiruns)]
    r, wall, l0 = locked(argv)
    if r.returncode != 0:
        raise SystemExit(f"{path}: {' '.join(argv)} failed: {r.stderr[-1500:]}")
    exp = td / f"export-together-{i}"
    e = subprocess.run(["mpitempo", "export", str(d), "--osu", str(exp), "--tail"], capture_output=True, text=True)
    if e.returncode != 0:
        raise SystemExit(f"{path}: export failed: {e.stderr[-800:]}")
    summ = json.loads(subprocess.run(["mpitempo", "summary", str(d), "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    return {"argv": argv, "wall_s": wall, "load": l0, "runs": max((x["runs"] for x in summ), default=0),
            "stops": {f"{x['config']} {x['op']} {x['msize']}": x.get("stop") for x in summ},
            "rows": {label: table((exp / f).read_text()) for label, f in TOGETHER_FILE.items() if (exp / f).exists()}}


def compare(o_rows: dict, m_rows: dict, col: str, lo: int, hi: int) -> dict:
    """Per recorded size: both values of `col` (missing on either side: None, never another column)."""
    per = {}
    for s in KEEP:
        if lo <= s <= hi and s in o_rows and s in m_rows:
            ov, mv = o_rows[s].get(col), m_rows[s].get(col)
            per[s] = {"peer": ov, "mpitempo": mv, "ratio": mv / ov if ov and mv is not None else None}
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--osu", required=True, help="the OSU 7.4 build directory (bench/peers_build.sh DIR: DIR/osu-7.4)")
    ap.add_argument("--imb", help="the IMB build directory holding IMB-MPI1 (bench/peers_build.sh DIR: DIR/imb)")
    ap.add_argument("--sizes", default="8-4M")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--precision", default="2%")
    ap.add_argument("--mpiruns", type=int, default=None, help="mpitempo's mpiruns (default: run's own)")
    ap.add_argument("--only", help="comma-separated labels of SET to run")
    ap.add_argument("--together", metavar="FILE",
                    help="run mpitempo's side as this one campaign per round (examples/osu-day-one.toml: the whole OSU "
                         "set, one launch per configuration and mpirun) instead of one campaign per benchmark")
    ap.add_argument("--out")
    a = ap.parse_args()
    lo, hi = size_range(a.sizes)
    mpiexec = shutil.which("mpiexec")
    labels = [x for x in [*SET, *(SET_IMB if a.imb else ())] if not a.only or x in a.only.split(",")]
    res = {"command": " ".join(sys.argv), "mpiexec": mpiexec, "sizes": [lo, hi], "precision": a.precision,
           "note": ("OSU's P50 (-z) against mpitempo's export --tail P50 (the median over its mpiruns of each run's "
                    "P50); IMB's means against mpitempo's export; means are not comparable on a shared VM"),
           "benchmarks": {}}
    res["benchmarks"] = {label: [] for label in labels}
    if a.together:
        res["together"] = {"file": a.together, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="mt-peers-") as td:
        for i in range(a.rounds):    # interleaved: every benchmark in every round, the peer then mpitempo
            peer = {}
            for label in labels:
                imb = label in SET_IMB
                o = (run_imb(Path(a.imb), mpiexec, label, lo, hi) if imb
                     else run_osu(Path(a.osu), mpiexec, label, lo, hi))
                if a.together and not imb:     # mpitempo's side after the whole OSU set, as one campaign
                    peer[label] = o
                    continue
                m = run_mpitempo(label, lo, hi, a.precision, a.mpiruns, Path(td), i)
                col = (SET_IMB if imb else SET)[label][4]
                per = compare(o["rows"], m["rows"], col, lo, hi)
                res["benchmarks"][label].append(
                    {"peer": "IMB 2021.11" if imb else "OSU 7.4", "peer_wall_s": o["wall_s"],
                     "mpitempo_wall_s": m["wall_s"], "wall_ratio": m["wall_s"] / o["wall_s"], "load_peer": o["load"],
                     "load_mpitempo": m["load"], "peer_column": col, "mpitempo_file": m["export"],
                     "mpitempo_mpiruns": m["runs"], "stops": m["stops"], "sizes": per,
                     "peer_argv": o["argv"], "mpitempo_argv": m["argv"]})
                print(f"{label} round {i}: peer {o['wall_s']:.1f} s, mpitempo {m['wall_s']:.1f} s; "
                      + ", ".join(f"{s}: {v['ratio']:.2f}" for s, v in per.items() if v["ratio"]), file=sys.stderr)
            if a.together and peer:
                m = run_together(a.together, lo, hi, a.precision, a.mpiruns, Path(td), i)
                tp = sum(o["wall_s"] for o in peer.values())
                res["together"]["rounds"].append({"peer_wall_s": tp, "mpitempo_wall_s": m["wall_s"],
                                                  "wall_ratio": m["wall_s"] / tp, "load_mpitempo": m["load"],
                                                  "mpitempo_mpiruns": m["runs"], "stops": m["stops"],
                                                  "mpitempo_argv": m["argv"]})
                for label, o in peer.items():
                    col = SET[label][4]
                    per = compare(o["rows"], m["rows"].get(label, {}), col, lo, hi)
                    res["benchmarks"][label].append(
                        {"peer": "OSU 7.4", "peer_wall_s": o["wall_s"], "load_peer": o["load"], "peer_column": col,
                         "mpitempo_file": TOGETHER_FILE[label], "sizes": per, "peer_argv": o["argv"]})
                    print(f"{label} round {i}: peer {o['wall_s']:.1f} s; "
                          + ", ".join(f"{s}: {v['ratio']:.2f}" for s, v in per.items() if v["ratio"]), file=sys.stderr)
                print(f"together round {i}: OSU set {tp:.1f} s, mpitempo campaign {m['wall_s']:.1f} s "
                      f"({m['wall_s'] / tp:.2f}x)", file=sys.stderr)
    # per benchmark and size: the median ratio over the rounds; totals per suite
    res["median_ratio"] = {
        label: {str(s): statistics.median(r["sizes"][s]["ratio"] for r in rs if s in r["sizes"] and r["sizes"][s]["ratio"])
                for s in KEEP if any(s in r["sizes"] and r["sizes"][s]["ratio"] for r in rs)}
        for label, rs in res["benchmarks"].items()}
    res["total"] = {}
    for suite, keys in (("osu", SET), ("imb", SET_IMB)):
        rs = [r for label, rr in res["benchmarks"].items() if label in keys for r in rr]
        if suite == "osu" and a.together:
            rr = res["together"]["rounds"]
            if rr:
                tp, tm = sum(r["peer_wall_s"] for r in rr), sum(r["mpitempo_wall_s"] for r in rr)
                res["total"][suite] = {"peer_wall_s": tp, "mpitempo_wall_s": tm, "wall_ratio": tm / tp,
                                       "mpitempo": "one campaign per round: " + a.together}
            continue
        if rs:
            tp, tm = sum(r["peer_wall_s"] for r in rs), sum(r["mpitempo_wall_s"] for r in rs)
            res["total"][suite] = {"peer_wall_s": tp, "mpitempo_wall_s": tm, "wall_ratio": tm / tp if tp else None}
    res["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
