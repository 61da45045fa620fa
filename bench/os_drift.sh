#!/bin/sh
# Clock sync against drift and offset injected at the OS level (not the simulated clock):
# every rank runs behind bench/os_clock_wrap.sh, which gives it a CLOCK_MONOTONIC that really
# runs fast or slow (libfaketime rate) and starts at its own offset. 2 ranks, bound to cores,
# MPIRUNS mpiruns of HCA3, HCA2 and JK, offsets checked right after sync and 10 s later.
# Holds the CPU lock; writes bench/results/os-drift-STAMP.json and prints the worst and typical
# |offset| and the drift error.
#   sh bench/os_drift.sh [MPIRUNS] [DRIFT_PPM] [OFFSET_S] [ALGORITHMS]
set -eu
RUNS=${1:-5}
DRIFT=${2:-30}
OFF=${3:-0.002}
ALGS=${4:-hca3,hca2,jk}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE/results
mkdir -p "$OUT"
stamp=$(date +%Y%m%d-%H%M%S)
json=$OUT/os-drift-$stamp.json
export MT_OS_DRIFTS_PPM="0,$DRIFT" MT_OS_OFFSETS_S="0,$OFF"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" mpitempo clocks -n 2 --mpiruns "$RUNS" --wait 0,10 --algorithms "$ALGS" \
  --launcher "{mpiexec} -n {np} -bind-to core $HERE/os_clock_wrap.sh {cmd}" --json > "$json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$json" "$DRIFT" <<'PY'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))
drift = float(sys.argv[2])
print(sys.argv[1], f"(rank 1 runs {drift:g} ppm fast at the OS level)")
print(f"{'algorithm':10} {'wait s':>6} {'max|off| us: median':>20} {'worst':>8} {'drift err ppm: max':>19} {'slopes':>8}")
for a in dict.fromkeys(r['algorithm'] for r in rows):
    for w in sorted({r['wait_s'] for r in rows if r['algorithm'] == a}):
        rs = [r for r in rows if r['algorithm'] == a and r['wait_s'] == w]
        mx = [r['max_abs_offset_s'] * 1e6 for r in rs]
        de = [abs(r['per_rank'][1]['drift_ppm'] - drift) for r in rs]
        sl = ",".join(sorted({r['per_rank'][1].get('slope', '?') for r in rs}))
        print(f"{a:10} {w:6g} {statistics.median(mx):20.3f} {max(mx):8.3f} {max(de):19.3f} {sl:>8}")
PY
