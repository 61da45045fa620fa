/* mpitempo: MS4, window-based (SKaMPI/NBCBench style, paper 001 Table 3).
 * After clock sync, rank 0 decides a start time and a window size (given, or
 * 3 x the median of a 20-call pilot + 2 x the Bcast latency, at least 2 us);
 * measurement i starts at start + i x window on the global clock. A rank that
 * reaches a window start late marks that measurement invalid. So that one long
 * outlier cannot invalidate everything after it, the grid is re-anchored every
 * `window_chunk` measurements after the latest end over all ranks: a miss
 * pollutes at most the rest of its chunk. runtime = max(end) - min(start). */
#include "base/mt_common.h"
#include "scheme/scheme.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median over 20 calls of max-over-ranks local runtime, barrier before each */
static double pilot(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a)
{
    enum { N = 20 };
    double loc[N], mx[N];
    for (int i = 0; i < N; i++) {
        mt_check_mpi(MPI_Barrier(ctx->comm), "MPI_Barrier");
        double t0 = mt_clock_now(ctx->gclock);
        mt_check_mpi(op->call(a), op->mpi_name);
        loc[i] = mt_clock_now(ctx->gclock) - t0;
    }
    mt_check_mpi(MPI_Allreduce(loc, mx, N, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
    qsort(mx, N, sizeof(double), cmp_double);
    return 0.5 * (mx[N / 2 - 1] + mx[N / 2]);
}

static int win_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    const mt_clock_t *g = ctx->gclock;
    int n = ctx->nrep;
    double *ls = malloc(sizeof(double) * (size_t)n), *le = malloc(sizeof(double) * (size_t)n);
    int *late = malloc(sizeof(int) * (size_t)n);
    if (!ls || !le || !late) {
        free(ls);
        free(le);
        free(late);
        return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", n);
    }
    int (*call)(mt_op_args_t *) = op->call;
    mt_warmup(ctx, op, a);
    double lat = mt_bcast_latency(ctx);
    double win = ctx->window_s;
    m->pilot_s = 0;
    if (win <= 0) {
        m->pilot_s = pilot(ctx, op, a);
        win = 3.0 * m->pilot_s + 2.0 * lat;
        if (win < 2e-6) win = 2e-6;
    }
    /* enough lead time for the broadcast to arrive everywhere */
    double lead = 20.0 * lat + 50e-6;
    double t_begin = mt_clock_now(g);
    int chunk = ctx->window_chunk > 0 ? ctx->window_chunk : n;
    for (int c0 = 0; c0 < n; c0 += chunk) {
        double start = 0;
        if (c0 == 0) {
            if (ctx->rank == 0) start = mt_clock_now(g) + lead;
        } else {
            /* re-anchor: once every rank has finished the previous chunk (the
             * allreduce of the latest end), rank 0 picks a new start */
            double last = le[c0 - 1], maxend = 0;
            mt_check_mpi(MPI_Allreduce(&last, &maxend, 1, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
            if (ctx->rank == 0) {
                double now = mt_clock_now(g);
                start = (now > maxend ? now : maxend) + lead;
            }
        }
        mt_check_mpi(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, ctx->comm), "MPI_Bcast");
        int c1 = c0 + chunk < n ? c0 + chunk : n;
        for (int i = c0; i < c1; i++) {
            late[i] = mt_wait_until(g, start + (double)(i - c0) * win, ctx->oversubscribed);
            double t0 = mt_clock_now(g);
            int rc = call(a);
            double t1 = mt_clock_now(g);
            if (rc != MPI_SUCCESS) mt_check_mpi(rc, op->mpi_name);
            ls[i] = t0;
            le[i] = t1;
            mt_cache_next_any(ctx, a);
        }
    }
    m->elapsed_s = mt_clock_now(g) - t_begin;
    m->lat_s = lat;
    m->window_s = win;
    int rc = mt_global_finish(ctx, ls, le, late, n, m, err);
    free(ls);
    free(le);
    free(late);
    return rc;
}

const mt_scheme_t mt_scheme_window = {
    "window",
    "MS4 window: start times on a grid of the global clock (window given or from a pilot); late starts are "
    "invalid; runtime = max(end) - min(start)",
    1, win_measure};
