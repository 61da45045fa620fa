#!/bin/sh
# Clock-sync benchmark (2 ranks, one host): writes bench/results/clocks-{nodrift,sim}-STAMP.json
# (plots beside them, not committed) and prints a summary table. Run on a quiet machine:
# timings on a shared 2-core host vary; quote medians over the mpiruns.
#   sh bench/clocks.sh [MPIRUNS]
set -eu
RUNS=${1:-5}
OUT=$(dirname "$0")/results
mkdir -p "$OUT"
stamp=$(date +%Y%m%d-%H%M%S)
# 1. no drift (true offset 0): right after sync and 10 s later
mpitempo clocks -n 2 --mpiruns "$RUNS" --wait 0,10 \
  --algorithms skampi,hoefler,jk,hca,hca2,hca3 --plot "$OUT/clocks-nodrift-$stamp.png" --json \
  > "$OUT/clocks-nodrift-$stamp.json"
# 2. simulated clocks: per-rank random offset up to 1 s and drift up to 50 ppm
mpitempo clocks -n 2 --mpiruns "$RUNS" --wait 0,10 --sim 11:1:50 \
  --algorithms skampi,hoefler,jk,hca3 --plot "$OUT/clocks-sim-$stamp.png" --json \
  > "$OUT/clocks-sim-$stamp.json"
python3 - "$OUT/clocks-nodrift-$stamp.json" "$OUT/clocks-sim-$stamp.json" <<'PY'
import json, statistics, sys
for path in sys.argv[1:]:
    rows = json.load(open(path))
    print(path)
    print(f"{'algorithm':10} {'wait':>5} {'sync ms':>9} {'max|off| ns (median, worst)':>28} {'drift err ppm (max)':>20}")
    keys = sorted({(r['algorithm'], r['wait_s']) for r in rows}, key=lambda k: (k[0], k[1]))
    for a, w in keys:
        rs = [r for r in rows if r['algorithm'] == a and r['wait_s'] == w]
        mx = [r['max_abs_offset_s'] * 1e9 for r in rs]
        de = [abs(p['drift_ppm'] - p.get('true_drift_ppm', 0)) for r in rs for p in r['per_rank'][1:]]
        print(f"{a:10} {w:5g} {statistics.median(r['sync_duration_s'] for r in rs) * 1e3:9.1f} "
              f"{statistics.median(mx):14.0f} {max(mx):13.0f} {max(de):20.3f}")
PY
