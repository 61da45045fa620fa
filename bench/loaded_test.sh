#!/usr/bin/env bash
# `make test` on a busy machine (issue 35): LOAD_PROCS CPU-bound processes (default 2 per CPU) run
# for the whole of `make test`; the pytest summaries (passed, skipped, failed), the skip reasons,
# the wall time and the load average are recorded in bench/results/loaded-test-DATE.{log,json}.
#   bench/loaded_test.sh [make arguments...]     (make test-loaded runs it)
# TARGET=test-py limits it to the Python and MPI tests. Exits with make's status.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${LOAD_PROCS:-$(( 2 * $(nproc) ))}
target=${TARGET:-test}
stamp=$(date -u +%Y%m%d-%H%M%S)
log=bench/results/loaded-test-$stamp.log
pids=()
for _ in $(seq "$n"); do
  python3 -c 'while True: pass' &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
${MAKE:-make} "$target" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
wall=$(( $(date +%s) - t0 ))
load1=$(cut -d' ' -f1-3 /proc/loadavg)
kill "${pids[@]}" 2>/dev/null
python3 - "$log" "$n" "$target" "$wall" "$rc" "$load0" "$load1" "$stamp" <<'PY'
import json, re, sys
log, n, target, wall, rc, load0, load1, stamp = sys.argv[1:]
text = open(log, errors="replace").read()
sums = []
for line in text.splitlines():
    m = re.match(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s", line.strip("= "))
    if m:
        sums.append({k: int(v) for v, k in re.findall(r"(\d+) (\w+)", m.group(1))} | {"seconds": float(m.group(2))})
skips = [l for l in text.splitlines() if l.startswith("SKIPPED")]
rec = {"date": stamp, "target": f"make {target}", "busy_processes": int(n), "wall_s": int(wall),
       "exit": int(rc), "loadavg_start": load0, "loadavg_end": load1, "pytest_summaries": sums,
       "load_skips": [l for l in skips if "failed under load" in l], "skips": len(skips), "log": log}
out = log[:-4] + ".json"
json.dump(rec, open(out, "w"), indent=1)
print(f"loaded_test: {n} busy processes, make {target}: exit {rc}, {wall} s; pytest: {sums}; "
      f"{len(rec['load_skips'])} skipped under measured load -> {out}")
PY
exit "$rc"
