/* mpitempo: MS4, window-based (SKaMPI/NBCBench style; Hunold and Carpen-Amarie
 * 2016, Table 3).
 * After clock sync, rank 0 decides a start time and a window size (given, or
 * 3 x the median of a 20-call pilot + 2 x the Bcast latency, at least 2 us);
 * measurement i starts at start + i x window on the global clock. A rank that
 * reaches a window start late marks that measurement invalid. So that one long
 * outlier cannot invalidate everything after it, the grid is re-anchored every
 * `window_chunk` measurements after the latest end over all ranks: a miss
 * pollutes at most the rest of its chunk. runtime = max(end) - min(start). */
#include "base/mt_common.h"
#include "scheme/scheme.h"

#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median over 20 calls of max-over-ranks local runtime, barrier before each */
typedef struct win_cfg {
    double window_s; /* 0: from a pilot */
    int chunk;       /* measurements per grid anchor (a miss pollutes at most its chunk) */
} win_cfg_t;

static const int win_params[] = {MTP_window, MTP_window_chunk, -1};

static int win_configure(const mt_params_t *p, void *cfg, char *err)
{
    win_cfg_t *c = cfg;
    c->window_s = mt_p_set(p, MTP_window) ? mt_p_num(p, MTP_window) : 0;
    if (mt_p_set(p, MTP_window) && !(c->window_s > 0))
        return mt_fail(err, MT_EINVAL, "invalid --window '%s': the window size must be > 0", mt_p_raw(p, MTP_window));
    c->chunk = (int)mt_p_int(p, MTP_window_chunk);
    return MT_OK;
}

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

static int win_measure(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    const win_cfg_t *c = cfg;
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
    double win = c->window_s;
    m->info.pilot_s = 0;
    if (win <= 0) {
        m->info.pilot_s = pilot(ctx, op, a);
        win = 3.0 * m->info.pilot_s + 2.0 * lat;
        if (win < 2e-6) win = 2e-6;
    }
    /* enough lead time for the broadcast to arrive everywhere */
    double lead = 20.0 * lat + 50e-6;
    double t_begin = mt_clock_now(g);
    int chunk = c->chunk > 0 ? c->chunk : n;
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
    m->info.elapsed_s = mt_clock_now(g) - t_begin;
    m->info.lat_s = lat;
    m->info.window_s = win;
    int rc = mt_global_finish(ctx, ls, le, late, n, m, err);
    free(ls);
    free(le);
    free(late);
    return rc;
}

static void win_write_meta(mt_json_t *j, const void *cfg, const mt_ctx_t *ctx)
{
    const win_cfg_t *c = cfg;
    (void)ctx;
    mt_json_knum(j, "window_s", c->window_s);
    mt_json_kstr(j, "window_source", c->window_s > 0 ? "given" : "pilot: 3 x median + 2 x Bcast latency");
    mt_json_kint(j, "window_chunk", c->chunk);
}

static void win_write_exp_meta(mt_json_t *j, const mt_meas_info_t *m)
{
    mt_global_write_exp_meta(j, m);
    mt_json_knum(j, "window_s", m->window_s);
    mt_json_knum(j, "pilot_s", m->pilot_s);
}

/* a window that lost more than a tenth of the measurements: say what would lose fewer */
static int win_note(const void *cfg, const mt_meas_info_t *m, int nvalid, int n, char *buf, size_t len)
{
    (void)cfg;
    if (!(nvalid < 0.9 * n)) return 0;
    snprintf(buf, len, "window %.3f us kept %d of %d measurements; a window of %.3f us would lose fewer",
             m->window_s * 1e6, nvalid, n, 2e6 * m->window_s);
    return 1;
}

const mt_scheme_t mt_scheme_window = {
    .name = "window",
    .desc = "MS4 window: start times on a grid of the global clock (window given or from a pilot); late starts are "
            "invalid; runtime = max(end) - min(start)",
    .needs_global_clock = 1,
    .waits_outside_mpi = 1,
    .params = win_params,
    .cfg_size = sizeof(win_cfg_t),
    .configure = win_configure,
    .measure = win_measure,
    .write_meta = win_write_meta,
    .write_exp_meta = win_write_exp_meta,
    .few_valid_advice = "; try a larger --window",
    .exp_note = win_note,
};
