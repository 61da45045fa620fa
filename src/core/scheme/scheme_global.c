#define _GNU_SOURCE
/* mpitempo: building blocks of the schemes that time on the global clock
 * (window, Round-Time): Bcast latency estimate, waiting for a start time, and
 * turning per-rank start/end times into runtimes (Hunold and Carpen-Amarie
 * 2018, section V-A). */
#include "op/cache.h"
#include "base/mt_common.h"
#include "scheme/scheme.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_cache_next_any(mt_ctx_t *ctx, mt_op_args_t *a) { mt_cache_next(ctx->cache, a); }

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The latency of MPI_Bcast as the schemes need it: the time from rank 0 reading
 * the global clock to a rank having the broadcast value, measured on the global
 * clock, so that a remaining clock offset is included (a rank whose clock is
 * ahead sees a longer latency). Per rank the median over N broadcasts; the
 * maximum over ranks, and at least the loop-averaged Bcast time. */
double mt_bcast_latency(mt_ctx_t *ctx)
{
    enum { WARM = 5, N = 31 };
    double d[N], t0 = 0, lat = 0;
    for (int i = 0; i < WARM + N; i++) {
        if (i == WARM) {
            mt_check_mpi(MPI_Barrier(ctx->comm), "MPI_Barrier");
            t0 = mt_clock_now(ctx->gclock);
        }
        double sent = ctx->rank == 0 ? mt_clock_now(ctx->gclock) : 0;
        mt_check_mpi(MPI_Bcast(&sent, 1, MPI_DOUBLE, 0, ctx->comm), "MPI_Bcast");
        if (i >= WARM) d[i - WARM] = mt_clock_now(ctx->gclock) - sent;
    }
    double avg = (mt_clock_now(ctx->gclock) - t0) / N;
    qsort(d, N, sizeof(double), cmp_d);
    double mine = d[N / 2] > avg ? d[N / 2] : avg;
    mt_check_mpi(MPI_Allreduce(&mine, &lat, 1, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
    return lat;
}

double mt_wait_until_late(const mt_clock_t *g, double t, int yield)
{
    double now = mt_clock_now(g);
    if (now >= t) return now - t > 0 ? now - t : 1e-12;
    mt_sim_skip(t - now);
    if (yield)
        while (t - mt_clock_now(g) > 50e-6) sched_yield();
    while (mt_clock_now(g) < t) {
    }
    return 0;
}

int mt_wait_until(const mt_clock_t *g, double t, int yield)
{
    double now = mt_clock_now(g);
    if (now >= t) return 1;
    mt_sim_skip(t - now);
    if (yield)
        while (t - mt_clock_now(g) > 50e-6) sched_yield();
    while (mt_clock_now(g) < t) {
    }
    return 0;
}

int mt_global_finish(mt_ctx_t *ctx, const double *ls, const double *le, const int *late, int n, mt_meas_t *m,
                     char *err)
{
    if (mt_meas_realloc(m, n) != MT_OK) return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", n);
    if (n == 0) return MT_OK;
    double *dur = malloc(sizeof(double) * (size_t)n), *minst = malloc(sizeof(double) * (size_t)n),
           *maxen = malloc(sizeof(double) * (size_t)n);
    int *anylate = malloc(sizeof(int) * (size_t)n);
    if (!dur || !minst || !maxen || !anylate) {
        free(dur);
        free(minst);
        free(maxen);
        free(anylate);
        return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", n);
    }
    for (int i = 0; i < n; i++) dur[i] = le[i] - ls[i];
    mt_check_mpi(MPI_Reduce(ls, minst, n, MPI_DOUBLE, MPI_MIN, 0, ctx->comm), "MPI_Reduce");
    mt_check_mpi(MPI_Reduce(le, maxen, n, MPI_DOUBLE, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
    mt_check_mpi(MPI_Reduce(dur, m->local_max_s, n, MPI_DOUBLE, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
    mt_check_mpi(MPI_Reduce(late, anylate, n, MPI_INT, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
    if (ctx->rank == 0)
        for (int i = 0; i < n; i++) {
            m->runtime_s[i] = maxen[i] - minst[i];
            m->valid[i] = !anylate[i];
        }
    mt_gather_times(ctx, ls, le, n, m);
    free(dur);
    free(minst);
    free(maxen);
    free(anylate);
    return MT_OK;
}

void mt_global_write_exp_meta(mt_json_t *j, const mt_meas_info_t *m)
{
    mt_json_knum(j, "bcast_latency_s", m->lat_s);
    mt_json_knum(j, "elapsed_s", m->elapsed_s);
}
