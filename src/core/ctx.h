/* mpitempo: the measurement context: everything a scheme needs, no globals. */
#ifndef MT_CTX_H
#define MT_CTX_H

#include <mpi.h>
#include <stdint.h>

#include "clock.h"
#include "timer.h"

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
} mt_ctx_t;

/* The measurements of one experiment (op, msize), valid on the root (rank 0). */
typedef struct mt_meas {
    int n;
    double *runtime_s;   /* the scheme's runtime of each measurement */
    double *local_max_s; /* max over ranks of local runtimes (same as runtime_s for barrier schemes) */
    int *valid;          /* 1 valid, 0 invalid (e.g. a missed window) */
} mt_meas_t;

int mt_meas_alloc(mt_meas_t *m, int n);
void mt_meas_free(mt_meas_t *m);

/* Abort the whole job with a message if an MPI call failed. */
void mt_check_mpi(int rc, const char *what);

#endif
