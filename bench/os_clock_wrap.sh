#!/bin/sh
# mpitempo: put in front of every rank (--launcher "mpiexec -n {np} bench/os_clock_wrap.sh {cmd}")
# to give each rank a CLOCK_MONOTONIC that really differs at the OS level:
#   MT_OS_DRIFTS_PPM="0,30,-25,40"  per rank (the last value repeats): libfaketime's rate
#                                   (LD_PRELOAD; clock_gettime is interposed, so the core's
#                                   CLOCK_MONOTONIC reads run fast or slow by that much)
#   MT_OS_OFFSETS_S="0,0.002,..."   per rank: the fake clock starts at 7200 s + offset when the
#                                   rank starts (ranks start ms apart: the real offsets are these
#                                   plus the start skew; the accuracy check measures what is left)
# The rank comes from PMI_RANK (MPICH), OMPI_COMM_WORLD_RANK (Open MPI) or SLURM_PROCID.
set -e
rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}}
pick() { # pick LIST INDEX: the INDEX-th comma-separated value, the last one repeating
    echo "$1" | awk -F, -v i="$2" '{ n = NF; print (i + 1 <= n) ? $(i + 1) : $n }'
}
drift=$(pick "${MT_OS_DRIFTS_PPM:-0}" "$rank")
off=$(pick "${MT_OS_OFFSETS_S:-0}" "$rank")
lib=${MT_FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
if [ ! -e "$lib" ]; then
    echo "os_clock_wrap.sh: libfaketime not found at $lib (apt-get install -y faketime libfaketime)" >&2
    exit 2
fi
start=$(awk -v o="$off" 'BEGIN { printf "%.6f", 7200 + o }')
rate=$(awk -v d="$drift" 'BEGIN { printf "%.9f", 1 + d * 1e-6 }')
export FAKETIME="@$(date -u -d "@$start" '+%Y-%m-%d %H:%M:%S') x$rate" TZ=UTC
# sub-second part of the offset: libfaketime's absolute start has whole seconds only
export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" FAKETIME_NO_CACHE=1
exec "$@"
