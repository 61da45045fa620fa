/* mpitempo: warm-up before the measurements of an experiment: a fixed number of
 * untimed calls (--warmup N), or as many as it takes to reach a steady state
 * (--warmup auto, docs/methods.md#warm-up). The steady-state test is pure
 * (mt_steady_*); the loop times each warm-up call on every rank, reduces each
 * window to the largest per-rank median (MPI_Allreduce), so every rank feeds
 * the same numbers to the same test and stops after the same call. */
#include "scheme/scheme.h"
#include "base/mt_common.h"
#include "base/mt_mpi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mt_steady_init(mt_steady_t *s)
{
    memset(s, 0, sizeof *s);
    s->prev = NAN;
}

int mt_steady_feed(mt_steady_t *s, double window_median)
{
    if (s->done) return 1;
    s->windows++;
    s->calls += MT_WARMUP_WINDOW;
    if (s->windows > 1) {
        double ref = fabs(s->prev);
        double rel = ref > 0 ? fabs(window_median - s->prev) / ref : (window_median == s->prev ? 0 : INFINITY);
        s->last_rel = rel;
        int same = rel < MT_WARMUP_REL_TOL || fabs(window_median - s->prev) < MT_WARMUP_ABS_TOL_S;
        s->agree = same ? s->agree + 1 : 0;
    }
    s->prev = window_median;
    if (s->agree >= MT_WARMUP_AGREE) {
        s->done = 1;
    } else if (s->calls >= MT_WARMUP_CAP) {
        s->done = 1;
        s->capped = 1;
    }
    return s->done;
}

int mt_steady_detect(const double *t, int n, int *capped)
{
    mt_steady_t s;
    mt_steady_init(&s);
    double w[MT_WARMUP_WINDOW];
    for (int i = 0; i + MT_WARMUP_WINDOW <= n && !s.done; i += MT_WARMUP_WINDOW) {
        memcpy(w, t + i, sizeof w);
        mt_steady_feed(&s, mt_median_inplace(w, MT_WARMUP_WINDOW));
    }
    if (capped) *capped = s.capped;
    return s.done ? s.calls : -1;
}

int mt_warmup_fit(int warmup, double max_s, double call_s)
{
    if (warmup <= 2 || !(max_s > 0) || !(call_s > 0)) return warmup;
    double fit = floor(max_s / call_s);
    return fit >= warmup ? warmup : (fit < 2 ? 2 : (int)fit);
}

void mt_warmup(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a)
{
    if (ctx->warmup != MT_WARMUP_AUTO && ctx->warmup_max_s > 0 && ctx->warmup > 2) {
        /* --warmup-max-time: the first two calls are timed on every rank, each rank's faster one (the
         * first pays connections and page faults); the slowest rank's decides how many calls fit, the
         * same number on every rank (collectives must match), at least these two */
        double mine = INFINITY, worst = 0;
        for (int i = 0; i < 2; i++) {
            int64_t t0 = ctx->timer.t->now();
            mt_check_mpi(op->call(a), op->mpi_name);
            double t = mt_ticks_to_s(&ctx->timer, ctx->timer.t->now() - t0);
            if (t < mine) mine = t;
        }
        mt_check_mpi(MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
        int n = mt_warmup_fit(ctx->warmup, ctx->warmup_max_s, worst);
        for (int i = 2; i < n; i++) mt_check_mpi(op->call(a), op->mpi_name);
        ctx->warmup_calls += n;
    } else if (ctx->warmup != MT_WARMUP_AUTO) {
        for (int i = 0; i < ctx->warmup; i++) mt_check_mpi(op->call(a), op->mpi_name);
        ctx->warmup_calls += ctx->warmup;
    } else {
        mt_steady_t s;
        mt_steady_init(&s);
        double w[MT_WARMUP_WINDOW];
        int64_t (*now)(void) = ctx->timer.t->now;
        while (!s.done) {
            for (int i = 0; i < MT_WARMUP_WINDOW; i++) {
                int64_t t0 = now();
                mt_check_mpi(op->call(a), op->mpi_name);
                w[i] = mt_ticks_to_s(&ctx->timer, now() - t0);
            }
            double mine = mt_median_inplace(w, MT_WARMUP_WINDOW), worst = 0;
            mt_check_mpi(MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
            mt_steady_feed(&s, worst);
        }
        ctx->warmup_calls += s.calls;
        ctx->warmup_capped |= s.capped;
    }
    mt_check_mpi(MPI_Barrier(ctx->comm), "MPI_Barrier");
}
