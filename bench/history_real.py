#!/usr/bin/env python3
"""A real nightly history (docs/history.md, "Measured"): NIGHTS short campaigns run here one after the
other, each ingested as one night (`ingest --date`, one day apart), then `mpitempo history` on them.

Every night measures allreduce and the synthetic op `delay` (a busy-wait of --delay per rank) at 8 B and
1 KiB, MPIRUNS mpiruns of --nrep measurements: the delay is 100us until night CHANGE_AT-1 and 103us from
night CHANGE_AT on (the injected slowdown, +3%); allreduce is unchanged (its series must show no change).
On the LOADED nights BUSY busy-looping processes run beside the campaign (started and stopped here): the
core's start-up check must flag those runs (shared CPU), and they must make no change point.

Every campaign runs under the CPU lock (flock $TMPDIR/mpitempo-cpu.lock) at raised priority: `nice -n NICE`
and, since the kernel groups processes by session (autogroup) and mpiexec starts each rank in a session of
its own, each rank raises its own autogroup to NICE before it execs the core (a launcher template with a
wrapper script); without that the ranks get an equal share with every other session on the machine,
whatever their nice value. The busy processes get the same priority (a job sharing the node). NICE is -20:
at -10 the unloaded nights were flagged at a load of 16-25 (docs/history.md, "A real nightly history").

  python bench/history_real.py --out bench/results/history_real-s37.json

Recorded: per night its date, delay, whether loaded, its runs' flags and the start-up check's CPU shares;
the change points of every series; whether the change of the delay series was found at CHANGE_AT +- 1 with
its size; whether the loaded nights were flagged and made no change point; the load average seen.
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
from datetime import date, timedelta
from pathlib import Path

WRAP = """#!/bin/sh
# raise this rank's autogroup (mpiexec starts each rank in a session of its own) to nice {nice}
echo {nice} > /proc/self/autogroup 2>/dev/null
exec "$@"
"""
BUSY = "import os\ntry:\n    open('/proc/self/autogroup', 'w').write('{nice}')\nexcept OSError:\n    pass\nwhile True:\n    pass\n"


def mt(*args, check=True, **kw):
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", *map(str, args)], capture_output=True, text=True, **kw)
    if check and r.returncode not in (0, 1):
        raise SystemExit(f"mpitempo {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def night_facts(camp: Path) -> list[dict]:
    out = []
    for m in sorted(camp.glob("runs/*/meta.json")):
        meta = json.loads(m.read_text())
        sc = meta.get("shared_cpu") or {}
        out.append({"run": m.parent.name, "shared": sc.get("shared"), "min_cpu_share": sc.get("min_cpu_share"),
                    "max_run_delay_share": sc.get("max_run_delay_share"), "reason": sc.get("reason")})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nights", type=int, default=60)
    ap.add_argument("--change-at", type=int, default=40)
    ap.add_argument("--delay-us", type=float, default=100.0)
    ap.add_argument("--slowdown", type=float, default=0.03)
    ap.add_argument("--loaded", default="20,50", help="nights run beside busy processes")
    ap.add_argument("--busy", type=int, default=4, help="busy processes on a loaded night")
    ap.add_argument("--nice", type=int, default=-20)
    ap.add_argument("--mpiruns", type=int, default=5)
    ap.add_argument("--nrep", type=int, default=200)
    ap.add_argument("--start", default="2026-09-01")
    ap.add_argument("--work", default=None, help="keep the campaigns and the store here (default: a temp dir, removed)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    loaded = {int(x) for x in a.loaded.split(",") if x.strip()}
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="mt-hreal-"))
    work.mkdir(parents=True, exist_ok=True)
    wrap = work / "prio.sh"
    wrap.write_text(WRAP.format(nice=a.nice))
    wrap.chmod(0o755)
    db = work / "history.duckdb"
    lock = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mpitempo-cpu.lock")
    d0 = date.fromisoformat(a.start)
    nights = []
    t_all = time.monotonic()
    for i in range(a.nights):
        camp = work / f"night{i:02d}"
        delay = a.delay_us * (1 + a.slowdown if i >= a.change_at else 1.0)
        busy = []
        if i in loaded:
            busy = [subprocess.Popen([sys.executable, "-c", BUSY.format(nice=a.nice)], start_new_session=True)
                    for _ in range(a.busy)]
            time.sleep(1.0)
        la = os.getloadavg()
        t0 = time.monotonic()
        try:
            r = subprocess.run(["flock", lock, "nice", "-n", str(a.nice), sys.executable, "-m", "mpitempo.cli", "run",
                                "--ops", "allreduce,delay", "--msizes", "8,1K", "--mpiruns", str(a.mpiruns),
                                "--nrep", str(a.nrep), "--delay", f"{delay:g}us", "-o", str(camp), "--quiet",
                                "--no-summary", "--launcher", f"{{mpiexec}} -n {{np}} -bind-to core {wrap} {{cmd}}"],
                               capture_output=True, text=True)
        finally:
            for p in busy:
                p.kill()
                p.wait()
        secs = time.monotonic() - t0
        if r.returncode != 0:
            raise SystemExit(f"night {i}: mpitempo run failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        day = (d0 + timedelta(days=i)).isoformat()
        ing = json.loads(mt("ingest", camp, "--db", db, "--machine", "bench-node", "--date", day, "--json").stdout)[0]
        facts = night_facts(camp)
        nights.append({"night": i, "date": day, "delay_us": delay, "loaded": i in loaded, "seconds": secs,
                       "load1_before": la[0], "flagged_runs": ing["flagged_runs"], "runs": ing["runs"],
                       "shared_runs": sum(1 for f in facts if f["shared"]), "runs_facts": facts})
        print(f"night {i:2d} {day} delay {delay:g}us{' LOADED' if i in loaded else ''}: {secs:.1f} s, "
              f"flagged runs {ing['flagged_runs']}/{ing['runs']}, load {la[0]:.1f}", flush=True)
    r = mt("history", "--db", db, "--json", "--threshold", "2", "--latest", a.nights)
    res = json.loads(r.stdout)
    series = []
    for s in res["series"]:
        ents = s["entries"]
        ch = [c for c in res["changes"] if all(c[k] == s[k] for k in ("machine", "config", "op", "msize", "nprocs"))]
        near = [c for c in ch if abs(c["entry_index"] - a.change_at) <= 1]
        loaded_idx = [j for j, e in enumerate(ents) if e["name"] in {f"night{n:02d}" for n in loaded}]
        series.append({
            "op": s["op"], "msize": s["msize"], "nprocs": s["nprocs"], "entries": len(ents),
            "entries_used": sum(1 for e in ents if e["used"]),
            "changes": [{k: c[k] for k in ("entry_index", "first_after_campaign", "first_after", "size_pct", "ci_pct",
                                           "p_value", "direction", "skipped_flagged")} for c in ch],
            "expected_change": s["op"] == "delay",
            "found_within_1": bool(near) if s["op"] == "delay" else None,
            "size_pct": near[0]["size_pct"] if near and s["op"] == "delay" else None,
            "changes_elsewhere": len(ch) - (1 if near and s["op"] == "delay" else 0),
            "loaded_entries_unused": all(not ents[j]["used"] for j in loaded_idx),
            "change_at_loaded_night": any(c["entry_index"] in loaded_idx or
                                          c["entry_index"] - 1 in loaded_idx for c in ch)})
    out = {"what": "real nightly history: allreduce + delay op, delay +3% from night change_at, loaded nights",
           "nights": a.nights, "change_at": a.change_at, "slowdown": a.slowdown, "delay_us": a.delay_us,
           "loaded": sorted(loaded), "busy_processes": a.busy, "nice": a.nice, "mpiruns": a.mpiruns, "nrep": a.nrep,
           "ncpu": os.cpu_count(), "load_avg_end": os.getloadavg(), "seconds_total": time.monotonic() - t_all,
           "unloaded_nights_with_flagged_runs": [n["night"] for n in nights if not n["loaded"] and n["flagged_runs"]],
           "loaded_nights_all_flagged": all(n["flagged_runs"] == n["runs"] for n in nights if n["loaded"]),
           "history_exit": r.returncode, "series": series, "nights_detail": nights}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "nights_detail"}, indent=1))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
