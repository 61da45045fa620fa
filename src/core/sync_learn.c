/* mpitempo: LEARN_CLOCK_MODEL (paper 000, Algorithm 2) and the slope decision.
 *
 * Two additions to the paper, both parameters:
 *  - window: the client spreads its fit points over at least `window` seconds
 *    (it sleeps between them), because a slope fitted over a few hundred
 *    microseconds fits noise: with offset noise sigma and n points over a
 *    span W the slope's standard error is about sigma * sqrt(12 / n) / W.
 *  - slope=auto: the slope is kept only when |slope| > z * SE(slope);
 *    otherwise the model is offset-only (slope 0, intercept = mean offset),
 *    which is what a drift-free pair of clocks (one host, one TSC) needs.
 *    What was decided is recorded (mt_sync_stats_t.slope_state). */
#define _GNU_SOURCE
#include "ctx.h"
#include "mt_common.h"
#include "sync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void mt_sync_measure(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, mt_offset_res_t *o)
{
    e->p->offset->measure(&e->pp, clk, ref, client, e->p->pp, o);
    e->st->offsets++;
}

void mt_fit_decide(const mt_sync_params_t *p, const double *x, const double *y, int n, mt_model_t *lm,
                   mt_sync_stats_t *st)
{
    mt_fit_t f;
    double mean = 0;
    for (int i = 0; i < n; i++) mean += y[i];
    mean /= n;
    int ok = mt_fit_linear(x, y, n, &f) == MT_OK;
    int keep;
    if (p->slope == MT_SLOPE_ZERO || !ok) keep = 0;
    else if (p->slope == MT_SLOPE_FIT) keep = 1;
    else keep = f.slope_se > 0 && fabs(f.slope) > p->z * f.slope_se;
    if (st) {
        st->fit_slope = ok ? f.slope : 0;
        st->fit_slope_se = ok ? f.slope_se : 0;
        st->fit_window_s = n > 0 ? x[n - 1] - x[0] : 0;
        st->slope_state = keep ? MT_SLOPE_KEPT : MT_SLOPE_DROPPED;
    }
    if (keep) {
        lm->kind = MT_MODEL_LINEAR;
        lm->slope = f.slope;
        lm->intercept = f.intercept;
    } else {
        lm->kind = MT_MODEL_OFFSET;
        lm->slope = 0;
        lm->intercept = mean;
    }
}

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

void mt_learn_clock_model(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, mt_model_t *lm)
{
    const mt_sync_params_t *p = e->p;
    int n = p->fitpts;
    mt_offset_res_t o;
    memset(lm, 0, sizeof *lm);
    lm->kind = MT_MODEL_OFFSET;
    if (e->pp.rank == ref) {
        e->st->learn_ref++;
        for (int i = 0; i < n; i++) mt_sync_measure(e, clk, ref, client, &o);
        if (p->recompute) mt_sync_measure(e, clk, ref, client, &o);
    } else if (e->pp.rank == client) {
        e->st->learn_client++;
        double *x = malloc(sizeof(double) * 2 * (size_t)n);
        if (!x) mt_check_mpi(MPI_ERR_NO_MEM, "fit-point buffer");
        double *y = x + n;
        double t0 = mt_clock_now(clk);
        for (int i = 0; i < n; i++) {
            if (i > 0 && p->window_s > 0) sleep_s(t0 + p->window_s * i / (n - 1) - mt_clock_now(clk));
            mt_sync_measure(e, clk, ref, client, &o);
            x[i] = o.timestamp;
            y[i] = o.offset;
        }
        mt_fit_decide(p, x, y, n, lm, e->st);
        if (p->recompute) {
            /* COMPUTE_AND_SET_INTERCEPT: a fresh offset sets the intercept */
            mt_sync_measure(e, clk, ref, client, &o);
            if (lm->kind == MT_MODEL_LINEAR) lm->intercept = o.offset - lm->slope * o.timestamp;
            else lm->intercept = (lm->intercept * n + o.offset) / (n + 1);
        }
        free(x);
    }
}

int mt_sync_one(const mt_sync_alg_t *alg, const mt_sync_params_t *p, MPI_Comm comm, const mt_clock_t *in,
                mt_clock_t *out, mt_sync_stats_t *st, char *err)
{
    mt_sync_env_t e;
    int rc = mt_pp_open(&e.pp, comm, err);
    if (rc != MT_OK) return rc;
    e.p = p;
    e.st = st;
    if (e.pp.size == 1) {
        *out = *in;
        rc = MT_OK;
    } else {
        rc = alg->sync(&e, in, out, err);
    }
    st->msgs_sent += e.pp.msgs_sent;
    mt_pp_close(&e.pp);
    return rc;
}
