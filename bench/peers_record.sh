#!/bin/sh
# Record the printed output of OSU Micro-Benchmarks 7.4 and IMB (built by bench/peers_build.sh) on
# 2 ranks, small message ranges, one file per benchmark run, plus commands.txt (command, load, MPI).
# tests/data/peers/ holds one such recording: the tests compare the layout of `mpitempo export
# --osu/--imb` with it line by line (the numbers are not compared).
#
#   sh bench/peers_record.sh PEERS_DIR OUTDIR       (PEERS_DIR as given to peers_build.sh)
#
# Holds the CPU lock of timing runs (flock ${TMPDIR:-/tmp}/mpitempo-cpu.lock) while it runs.
set -eu
PEERS=${1:?usage: sh bench/peers_record.sh PEERS_DIR OUTDIR}
OUT=${2:?usage: sh bench/peers_record.sh PEERS_DIR OUTDIR}
HERE=$(cd "$(dirname "$0")/.." && pwd)
MPIRUN=${MPIRUN:-$HERE/.venv/bin/mpirun}
OSU=$PEERS/osu-7.4/src/c/mpi
IMB=$PEERS/imb
LOCK=${TMPDIR:-/tmp}/mpitempo-cpu.lock
mkdir -p "$OUT"
LOG=$OUT/commands.txt
{
    echo "# recorded by bench/peers_record.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs"
    echo "# MPI: $("$HERE/.venv/bin/mpichversion" 2>/dev/null | head -1 || echo unknown), mpirun $MPIRUN"
    echo "# OSU Micro-Benchmarks 7.4 configure-built (FIELD_WIDTH 18), IMB $(git -C "$IMB" describe --tags 2>/dev/null || echo '?')"
} >"$LOG"

run() {   # run FILE ARGS...: one benchmark run, its stdout to OUT/FILE, the command and load to the log
    f=$1
    shift
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    flock "$LOCK" "$MPIRUN" -n 2 "$@" >"$OUT/$f" 2>"$OUT/$f.err" || { echo "failed: $*" >&2; cat "$OUT/$f.err" >&2; exit 1; }
    [ -s "$OUT/$f.err" ] || rm -f "$OUT/$f.err"
    echo "$f: mpirun -n 2 $(echo "$*" | sed "s|$PEERS/||g")  (load $load)" >>"$LOG"
}

S="-m 8:1024 -i 200 -x 20"
run osu_latency.txt "$OSU/pt2pt/standard/osu_latency" $S
run osu_latency_z.txt "$OSU/pt2pt/standard/osu_latency" $S -z
run osu_bw.txt "$OSU/pt2pt/standard/osu_bw" $S
run osu_bibw.txt "$OSU/pt2pt/standard/osu_bibw" $S
run osu_mbw_mr.txt "$OSU/pt2pt/standard/osu_mbw_mr" $S
run osu_multi_lat.txt "$OSU/pt2pt/standard/osu_multi_lat" $S
run osu_latency_persistent.txt "$OSU/pt2pt/persistent/osu_latency_persistent" $S
run osu_bw_persistent.txt "$OSU/pt2pt/persistent/osu_bw_persistent" $S
run osu_bibw_persistent.txt "$OSU/pt2pt/persistent/osu_bibw_persistent" $S
run osu_allreduce.txt "$OSU/collective/blocking/osu_allreduce" $S
run osu_allreduce_f.txt "$OSU/collective/blocking/osu_allreduce" $S -f
run osu_barrier_f.txt "$OSU/collective/blocking/osu_barrier" -i 200 -x 20 -f
run osu_bcast_f.txt "$OSU/collective/blocking/osu_bcast" $S -f
run osu_allreduce_persistent_f.txt "$OSU/collective/persistent/osu_allreduce_persistent" $S -f
run osu_barrier_persistent_f.txt "$OSU/collective/persistent/osu_barrier_persistent" -i 200 -x 20 -f
run osu_iallreduce.txt "$OSU/collective/non_blocking/osu_iallreduce" $S
run osu_ibarrier.txt "$OSU/collective/non_blocking/osu_ibarrier" -i 200 -x 20
run osu_ibcast.txt "$OSU/collective/non_blocking/osu_ibcast" $S
for s in flush lock fence; do
    run "osu_put_latency_$s.txt" "$OSU/one-sided/osu_put_latency" $S -s $s
done
run osu_put_latency_flush_local.txt "$OSU/one-sided/osu_put_latency" $S -s flush_local
run osu_put_bw_flush.txt "$OSU/one-sided/osu_put_bw" $S -s flush
run osu_put_bibw_pscw.txt "$OSU/one-sided/osu_put_bibw" $S
run osu_put_bw_lock.txt "$OSU/one-sided/osu_put_bw" $S -s lock
run osu_get_latency_flush.txt "$OSU/one-sided/osu_get_latency" $S -s flush
run osu_get_latency_lock.txt "$OSU/one-sided/osu_get_latency" $S -s lock
run osu_get_bw_flush.txt "$OSU/one-sided/osu_get_bw" $S -s flush
run osu_acc_latency_flush.txt "$OSU/one-sided/osu_acc_latency" $S -s flush
run osu_fop_latency_flush.txt "$OSU/one-sided/osu_fop_latency" -i 200 -x 20 -s flush

# -z (per-iteration percentiles): the layouts of `mpitempo export --osu --tail`
run osu_bw_z.txt "$OSU/pt2pt/standard/osu_bw" $S -z
run osu_bibw_z.txt "$OSU/pt2pt/standard/osu_bibw" $S -z
run osu_mbw_mr_z.txt "$OSU/pt2pt/standard/osu_mbw_mr" $S -z
run osu_allreduce_z.txt "$OSU/collective/blocking/osu_allreduce" $S -z
run osu_iallreduce_z.txt "$OSU/collective/non_blocking/osu_iallreduce" $S -z
for s in lock fence; do
    run "osu_put_latency_${s}_z.txt" "$OSU/one-sided/osu_put_latency" $S -s $s -z
done
run osu_put_bw_lock_z.txt "$OSU/one-sided/osu_put_bw" $S -s lock -z

I="-msglog 3:10 -iter 200 -npmin 2"
run IMB-MPI1.txt "$IMB/IMB-MPI1" PingPong PingPing Uniband Biband Sendrecv Exchange Allreduce Barrier $I
run IMB-NBC.txt "$IMB/IMB-NBC" Iallreduce Ibarrier $I
run IMB-RMA.txt "$IMB/IMB-RMA" Unidir_put Unidir_get $I
run IMB-MPI4.txt "$IMB/IMB-MPI4" Allreduce_persist_pure Barrier_persist_pure $I
echo "recorded into $OUT"
