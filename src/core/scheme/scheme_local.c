/* mpitempo: the local-timer schemes MS1-MS3 (Hunold and Carpen-Amarie 2016,
 * Table 3) share one measuring loop: barrier, t0, `calls` calls (each followed by a barrier in
 * MS3), t1; local runtime = (t1 - t0) / calls; runtime = max over ranks,
 * reduced to rank 0 after the experiment. The cache policy acts between
 * measurements, outside the timed region. */
#include <math.h>
#include "op/cache.h"
#include "base/mt_common.h"
#include "scheme/scheme.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_local_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, int calls, int barrier_each,
                     char *err)
{
    int n = ctx->nrep;
    int keep = ctx->want_timestamps; /* per-rank start/end kept (outside the timed region) */
    int64_t *ticks = malloc(sizeof(int64_t) * (size_t)n);
    double *local = malloc(sizeof(double) * (size_t)n);
    int64_t *starts = keep ? malloc(sizeof(int64_t) * (size_t)n) : NULL;
    if (!ticks || !local || (keep && !starts)) {
        free(ticks);
        free(local);
        free(starts);
        return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", n);
    }
    int64_t (*now)(void) = ctx->timer.t->now;
    int (*call)(mt_op_args_t *) = op->call;
    mt_warmup(ctx, op, a);
    int skewed = ctx->skew_rank == ctx->rank;
    int64_t skew_ticks = (int64_t)(ctx->skew_s * ctx->timer.ticks_per_s);
    for (int i = 0; i < n; i++) {
        int rc = MPI_Barrier(ctx->comm);
        int64_t t0, t1;
        if (skewed) { /* emulate a barrier that releases this rank late */
            int64_t w0 = now();
            mt_sim_skip(ctx->skew_s);
            while (now() - w0 < skew_ticks) {
            }
        }
        if (calls == 1 && !barrier_each) { /* MS1: nothing but the call between the reads */
            t0 = now();
            rc = call(a);
            t1 = now();
        } else if (!barrier_each) {
            t0 = now();
            for (int j = 0; j < calls && rc == MPI_SUCCESS; j++) rc = call(a);
            t1 = now();
        } else {
            t0 = now();
            for (int j = 0; j < calls && rc == MPI_SUCCESS; j++) {
                rc = call(a);
                if (rc == MPI_SUCCESS) rc = MPI_Barrier(ctx->comm);
            }
            t1 = now();
        }
        if (rc != MPI_SUCCESS) mt_check_mpi(rc, op->mpi_name);
        ticks[i] = t1 - t0;
        if (keep) starts[i] = t0;
        mt_cache_next(ctx->cache, a);
    }
    for (int i = 0; i < n; i++) local[i] = mt_ticks_to_s(&ctx->timer, ticks[i]) / (double)calls;
    mt_reduce_max(ctx, local, m->runtime_s, n);
    if (keep) {
        double *ls = malloc(sizeof(double) * (size_t)n), *le = malloc(sizeof(double) * (size_t)n);
        if (!ls || !le) {
            fprintf(stderr, "%s: error: out of memory for %d timestamps\n", mt_prog(), n);
            MPI_Abort(ctx->comm, 5);
        }
        for (int i = 0; i < n; i++) {
            if (ctx->gclock) { /* on the global clock: the model maps the base time of the reading */
                ls[i] = mt_clock_apply(ctx->gclock, mt_base_from_ticks(ctx->gclock->base, starts[i]));
                le[i] = mt_clock_apply(ctx->gclock, mt_base_from_ticks(ctx->gclock->base, starts[i] + ticks[i]));
            } else { /* the rank's own timer, relative to rank 0's reading at the start */
                ls[i] = mt_ticks_to_s(&ctx->timer, starts[i] - ctx->pr_epoch);
                le[i] = mt_ticks_to_s(&ctx->timer, starts[i] + ticks[i] - ctx->pr_epoch);
            }
        }
        mt_gather_times(ctx, ls, le, n, m);
        free(ls);
        free(le);
    }
    free(starts);
    if (ctx->rank == 0)
        for (int i = 0; i < n; i++) {
            m->local_max_s[i] = m->runtime_s[i];
            m->valid[i] = 1;
        }
    free(ticks);
    free(local);
    return MT_OK;
}

const int mt_inner_params[] = {MTP_inner, -1};
const int mt_loop_params[] = {MTP_inner, MTP_inner_min_time, -1};

int mt_inner_configure(const mt_params_t *p, void *cfg, char *err)
{
    (void)err;
    mt_inner_cfg_t *c = cfg;
    c->inner = (int)mt_p_int(p, MTP_inner);
    c->min_time_s = mt_p_set(p, MTP_inner_min_time) ? mt_p_num(p, MTP_inner_min_time) : 0;
    return MT_OK;
}

int mt_inner_decide(mt_ctx_t *ctx, const mt_inner_cfg_t *cfg, const mt_op_t *op, mt_op_args_t *a)
{
    if (ctx->inner_used > 0) return ctx->inner_used;
    if (!(cfg->min_time_s > 0) || cfg->inner <= 1) return ctx->inner_used = cfg->inner;
    mt_warmup(ctx, op, a);
    /* two untimed-for-the-results calls after the warm-up (counted as warm-up), each rank's faster one:
     * the warm-up's first calls (connections, page faults) would make every call look long */
    double mine = INFINITY, call;
    for (int i = 0; i < MT_INNER_PROBES; i++) {
        int64_t t0 = ctx->timer.t->now();
        mt_check_mpi(op->call(a), op->mpi_name);
        double t = mt_ticks_to_s(&ctx->timer, ctx->timer.t->now() - t0);
        if (t < mine) mine = t;
    }
    ctx->warmup_calls += MT_INNER_PROBES;
    mt_check_mpi(MPI_Allreduce(&mine, &call, 1, MPI_DOUBLE, MPI_MAX, ctx->comm), "MPI_Allreduce");
    double want = call > 0 ? ceil(cfg->min_time_s / call) : (double)cfg->inner;
    ctx->inner_used = want >= cfg->inner ? cfg->inner : (want < 1 ? 1 : (int)want);
    return ctx->inner_used;
}

void mt_inner_write_meta(mt_json_t *j, const void *cfg, const mt_ctx_t *ctx)
{
    (void)ctx;
    const mt_inner_cfg_t *c = cfg;
    mt_json_kint(j, "inner", c->inner);
    if (c->min_time_s > 0) mt_json_knum(j, "inner_min_time_s", c->min_time_s);
}

int mt_barrier_skew_parse(const char *s, int np, int *rank, double *t, char *err)
{
    const char *colon = strchr(s, ':');
    long long r;
    char rs[32];
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof rs)
        return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': expected RANK:TIME, e.g. 1:20us", s);
    memcpy(rs, s, (size_t)(colon - s));
    rs[colon - s] = '\0';
    if (mt_parse_int(rs, "--barrier-skew rank", 0, INT_MAX, &r, err) != MT_OK) return MT_EINVAL;
    if (mt_parse_duration(colon + 1, t, err) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': expected RANK:TIME, e.g. 1:20us", s);
    if (np > 0 && r >= np)
        return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': rank %lld is not in the job (0..%d)", s, r,
                       np - 1);
    *rank = (int)r;
    return MT_OK;
}
