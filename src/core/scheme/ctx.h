/* mpitempo: the measurement context: what every scheme needs, no globals.
 * A scheme's own options live in its private configuration (scheme.h). */
#ifndef MT_CTX_H
#define MT_CTX_H

#include <mpi.h>
#include <stdint.h>

#include "base/mt_mpi.h"
#include "clock/clock.h"
#include "timer/timer.h"

typedef struct mt_ctx {
    MPI_Comm comm;
    int rank, size;
    mt_timer_inst_t timer;
    /* ranks share CPUs: more ranks on a host than it has CPUs online (the run
     * driver detects it). Waits yield the CPU instead of spinning. */
    int oversubscribed;
    /* the clock code waits lazily (sleeps): oversubscribed, unless
     * MPITEMPO_CLOCK_SLEEP overrides it (run/run.c) */
    int lazy;
    /* measurement settings shared by the schemes */
    int nrep;        /* measurements per experiment */
    int warmup;      /* untimed calls before the first measurement of an experiment (MT_WARMUP_AUTO: until steady) */
    double warmup_max_s; /* --warmup-max-time: a fixed warm-up makes at most this long of calls (0: no limit) */
    int warmup_calls;  /* warm-up calls made in the current experiment (set to 0 before it) */
    int warmup_capped; /* --warmup auto reached its cap without a steady state in the current experiment */
    int inner_used;    /* loop scheme with --inner-min-time: calls per measurement decided for the current
                        * experiment (0: not decided yet; set to 0 before it) */
    struct mt_cache *cache; /* cache policy between measurements (never NULL while measuring) */
    /* global clock (--sync): NULL when not synchronised. Schemes read global
     * seconds with mt_clock_now(ctx->gclock) (clock.h). */
    const mt_clock_t *gclock;
    int want_timestamps; /* keep per-rank start/end of every measurement on rank 0 (global clock when
                          * synchronised; local schemes without a clock: the rank's timer minus pr_epoch) */
    int64_t pr_epoch;    /* rank 0's timer reading at the start, on every rank (local per-rank times) */
    /* emulated barrier imbalance (--barrier-skew R:T): after every MPI_Barrier of the
     * barrier-based schemes, rank skew_rank busy-waits skew_s (-1: off) */
    int skew_rank;
    double skew_s;
} mt_ctx_t;

/* What a scheme decided or observed for one experiment (its meta.json keys). */
typedef struct mt_meas_info {
    double lat_s;        /* Round-Time/window: estimated MPI_Bcast latency */
    double window_s;     /* window: window size used; Round-Time: the slack at the end */
    double elapsed_s;    /* wall time of the measuring loop (global clock) */
    double pilot_s;      /* window: pilot runtime used for the estimate */
} mt_meas_info_t;

/* The measurements of one experiment (op, msize), valid on the root (rank 0). */
typedef struct mt_meas {
    int n;
    double *runtime_s;   /* the scheme's runtime of each measurement */
    double *local_max_s; /* max over ranks of local runtimes (same as runtime_s for barrier schemes) */
    int *valid;          /* 1 valid, 0 invalid (e.g. a missed window) */
    /* per-rank timestamps, n x nprocs each (rank-major), rank 0, when ctx->want_timestamps */
    double *ts_start, *ts_end;
    mt_meas_info_t info;
} mt_meas_t;

int mt_meas_alloc(mt_meas_t *m, int n);
/* reallocate for n measurements (contents are lost, info kept) */
int mt_meas_realloc(mt_meas_t *m, int n);
void mt_meas_free(mt_meas_t *m);

#endif
