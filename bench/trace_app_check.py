#!/usr/bin/env python3
"""A real application traced by `mpitempo trace run` and its OTF2 archive checked by an
independent reader (bench/trace_otf2_check.py, on `otf2-print` output; issue 33).

The application is HPCG (https://github.com/hpcg-benchmark/hpcg; halo exchanges with MPI_Irecv /
MPI_Send / MPI_Wait in every SpMV and symmetric Gauss-Seidel sweep of its multigrid, 8-byte
MPI_Allreduce in every dot product), built from a source tree given with --src, outside this
repository, with the mpicxx of the MPI the core is built with:

  git clone https://github.com/hpcg-benchmark/hpcg /tmp/hpcg-src    # or any copy of it
  python bench/trace_app_check.py --src /tmp/hpcg-src [--ranks 2,4] [--nx 16] [--rt 1]

(--xhpcg PATH uses a binary already built.) Traced on each rank count (more ranks than cores:
oversubscribed, for correctness only), the archive read by otf2-print: every message matched,
every collective instance complete with consistent volumes, clock-condition violations counted.
Writes bench/results/trace_app_check.json and prints a table; exits 1 if a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from trace_otf2_check import check  # noqa: E402

# 4 ranks on 2 cores: MPICH's progress throttle keeps the waiting ranks from starving the others
THROTTLE = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"}


def build_hpcg(src: Path, work: Path, bindir: Path) -> Path:
    """HPCG's own build (configure Linux_MPI; make) in work/, with bindir's mpicxx first in PATH."""
    b = work / "hpcg-build"
    b.mkdir()
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    subprocess.run([str(src / "configure"), "Linux_MPI"], cwd=b, env=env, check=True, capture_output=True)
    subprocess.run(["make", "-j2"], cwd=b, env=env, check=True, capture_output=True)
    return b / "bin" / "xhpcg"


def src_commit(src: Path) -> str | None:
    r = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or None if r.returncode == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--src", type=Path, help="an HPCG source tree (built here, in a temporary directory)")
    g.add_argument("--xhpcg", type=Path, help="an xhpcg built with the core's MPI")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--nx", type=int, default=16, help="local grid edge (HPCG --nx=--ny=--nz)")
    ap.add_argument("--rt", type=int, default=1, help="HPCG's benchmark time (s; its minimum run)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/trace_app_check.json")
    a = ap.parse_args()
    if shutil.which("otf2-print") is None:
        print("otf2-print not found (Debian package otf2-tools)", file=sys.stderr)
        return 2
    bindir = Path(sys.executable).parent
    cli = bindir / "mpitempo"
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        t0 = time.monotonic()
        exe = build_hpcg(a.src, work, bindir) if a.src else a.xhpcg.resolve()
        build_s = time.monotonic() - t0 if a.src else None
        for np_ in [int(x) for x in a.ranks.split(",")]:
            out = work / f"trace-{np_}"
            run_dir = work / f"run-{np_}"   # HPCG writes its reports into its working directory
            run_dir.mkdir()
            env = dict(os.environ, **(THROTTLE if np_ > (os.cpu_count() or 1) else {}))
            t0 = time.monotonic()
            r = subprocess.run([str(cli), "trace", "run", "--json", "-n", str(np_), "-o", str(out), "--", str(exe),
                                f"--nx={a.nx}", f"--ny={a.nx}", f"--nz={a.nx}", f"--rt={a.rt}"],
                               capture_output=True, text=True, env=env, cwd=run_dir)
            wall = time.monotonic() - t0
            if r.returncode != 0:
                rows.append({"ranks": np_, "error": r.stderr.strip()[-400:]})
                ok = False
                continue
            res = json.loads(r.stdout)
            chk = check(str(out / "otf2" / "traces.otf2"))
            row = {"ranks": np_, "wall_s": round(wall, 2), "events": res["events"],
                   "mpitempo_violations_global": res["violations_global"],
                   "mpitempo_messages": res["violations"]["global"]["messages"],
                   "mpitempo_collective_instances": res["violations"]["global"]["collective_instances"],
                   **{k: chk[k] for k in ("messages_matched", "sends_unmatched", "receives_unmatched",
                                          "length_mismatches", "collective_instances", "violations_p2p",
                                          "violations_collective", "records", "problems", "ok")}}
            # the two readers agree on what there is to check
            row["readers_agree"] = (row["messages_matched"] == row["mpitempo_messages"]
                                    and row["collective_instances"] == row["mpitempo_collective_instances"])
            ok = ok and chk["ok"] and row["readers_agree"]
            rows.append(row)
    res = {"application": "HPCG", "source": str(a.src or a.xhpcg), "commit": src_commit(a.src) if a.src else None,
           "args": f"--nx={a.nx} --ny={a.nx} --nz={a.nx} --rt={a.rt}", "build_s": build_s,
           "load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "rows": rows, "ok": ok}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"HPCG {res['args']} ({res['commit'] or res['source']}), load average {res['load_average']:.1f}\n")
    print("| ranks | events | messages matched | unmatched s/r | collective instances | violations (msg/coll) "
          "| mpitempo's own count | ok |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['ranks']} | failed: {r['error'][-120:]} |")
            continue
        print(f"| {r['ranks']} | {r['events']} | {r['messages_matched']} | {r['sends_unmatched']}/"
              f"{r['receives_unmatched']} | {r['collective_instances']} | {r['violations_p2p']}/"
              f"{r['violations_collective']} | {r['mpitempo_messages']} msgs, {r['mpitempo_collective_instances']} "
              f"coll, {r['mpitempo_violations_global']} viol | {'yes' if r['ok'] and r['readers_agree'] else 'NO'} |")
        for p in r["problems"][:5]:
            print(f"    {p}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
