/* mpitempo: the measurement context: everything a scheme needs, no globals. */
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
    /* scheme parameters */
    int nrep;        /* measurements per experiment */
    int warmup;      /* untimed calls before the first measurement of an experiment */
    int inner;       /* calls per measurement in loop-averaged schemes */
    struct mt_cache *cache; /* cache policy between measurements (never NULL) */
    /* global clock (--sync): NULL when not synchronised. Schemes read global
     * seconds with mt_clock_now(ctx->gclock) (clock.h). */
    const mt_clock_t *gclock;
    /* clock-based schemes (window, roundtime) */
    double rt_slack;     /* Round-Time: B, start = now + B x Bcast latency (>= 1) */
    int rt_adapt;        /* Round-Time: grow the slack after an invalid round */
    double time_slice_s; /* Round-Time: time per experiment */
    double window_s;     /* window: window size; 0 = estimate from a pilot */
    int window_chunk;    /* window: measurements per grid anchor (a miss pollutes at most its chunk) */
    int want_timestamps; /* keep per-rank start/end (global clock) of every measurement on rank 0 */
    /* emulated barrier imbalance (--barrier-skew R:T): after every MPI_Barrier of the
     * barrier-based schemes, rank skew_rank busy-waits skew_s (-1: off) */
    int skew_rank;
    double skew_s;
    int oversubscribed;  /* more ranks on this host than CPUs: waits yield the CPU */
} mt_ctx_t;

/* The measurements of one experiment (op, msize), valid on the root (rank 0). */
typedef struct mt_meas {
    int n;
    double *runtime_s;   /* the scheme's runtime of each measurement */
    double *local_max_s; /* max over ranks of local runtimes (same as runtime_s for barrier schemes) */
    int *valid;          /* 1 valid, 0 invalid (e.g. a missed window) */
    /* per-rank global timestamps, n x nprocs each, rank 0, when ctx->want_timestamps */
    double *ts_start, *ts_end;
    /* what a clock-based scheme decided or observed for this experiment */
    double lat_s;        /* Round-Time/window: estimated MPI_Bcast latency */
    double window_s;     /* window size used */
    double elapsed_s;    /* wall time of the measuring loop (global clock) */
    double pilot_s;      /* window: pilot runtime used for the estimate */
} mt_meas_t;

int mt_meas_alloc(mt_meas_t *m, int n);
/* reallocate for n measurements (contents are lost) */
int mt_meas_realloc(mt_meas_t *m, int n);
void mt_meas_free(mt_meas_t *m);

#endif
