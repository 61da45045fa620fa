/* mpitempo: LEARN_CLOCK_MODEL (paper 000, Algorithm 2) and the slope decision.
 *
 * Two additions to the paper, both parameters:
 *  - window: the client spreads its fit points over at least `window` seconds
 *    (it sleeps between them), because a slope fitted over a few hundred
 *    microseconds fits noise: with offset noise sigma and n points over a
 *    span W the slope's standard error is about sigma * sqrt(12 / n) / W.
 *  - slope=auto: the slope is kept only when |slope| > z * SE(slope) and the
 *    distribution-free Theil-Sen interval at the same z excludes 0 (and
 *    holds the fitted slope);
 *    otherwise the model is offset-only (slope 0, intercept = mean offset),
 *    which is what a drift-free pair of clocks (one host, one TSC) needs.
 *    What was decided is recorded (mt_sync_stats_t.slope_state).
 *  - robust fit: points more than 5 MADs off the first fit are dropped before
 *    the final least-squares fit; the offset-only intercept is a median. */
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mt_median(const double *v, int n)
{
    if (n <= 0) return 0;
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return v[n / 2];
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

/* Theil-Sen confidence interval of the slope (Kendall's tau ranks, normal
 * approximation with z): the slopes of all pairs sorted, bounds at ranks
 * (N -+ C) / 2 with C = z sqrt(n (n - 1) (2n + 5) / 18). Distribution-free, so
 * heavy-tailed offset noise (a loaded machine) does not fake a drift. */
int mt_theil_sen_ci(const double *x, const double *y, int n, double z, double *lo, double *hi)
{
    long long np = (long long)n * (n - 1) / 2, k = 0;
    if (n < 3 || np > 50000000) return MT_EINVAL;
    double *sl = malloc(sizeof(double) * (size_t)np);
    if (!sl) return MT_ENOMEM;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (x[j] != x[i]) sl[k++] = (y[j] - y[i]) / (x[j] - x[i]);
    if (k < 3) {
        free(sl);
        return MT_EINVAL;
    }
    qsort(sl, (size_t)k, sizeof(double), cmp_double);
    double c = z * sqrt((double)n * (n - 1) * (2.0 * n + 5) / 18.0);
    long long a = (long long)floor((k - c) / 2), b = (long long)ceil((k + c) / 2);
    if (a < 0) a = 0;
    if (b > k - 1) b = k - 1;
    *lo = sl[a];
    *hi = sl[b];
    free(sl);
    return MT_OK;
}

void mt_fit_decide(const mt_sync_params_t *p, const double *x, const double *y, int n, mt_model_t *lm,
                   mt_sync_stats_t *st)
{
    /* Robust first: fit, then drop points whose residual is more than 5
     * MADs (scaled to sigma) from the median residual -- a fit point whose
     * ping-pongs were all delayed (preemption, wake-up after the sleep)
     * would otherwise bend the slope -- and fit again (OLS, Alg. 2). */
    mt_fit_t f;
    int ok = mt_fit_linear(x, y, n, &f) == MT_OK, m = n;
    double *buf = malloc(sizeof(double) * 3 * (size_t)n);
    if (ok && buf && n >= 6) {
        double *r = buf, *xx = buf + n, *yy = buf + 2 * n;
        for (int i = 0; i < n; i++) r[i] = y[i] - (f.slope * x[i] + f.intercept);
        double med = mt_median(r, n);
        for (int i = 0; i < n; i++) xx[i] = fabs(r[i] - med);
        double mad = 1.4826 * mt_median(xx, n);
        m = 0;
        for (int i = 0; i < n; i++)
            if (mad <= 0 || fabs(r[i] - med) <= 5 * mad) {
                xx[m] = x[i];
                yy[m++] = y[i];
            }
        if (m >= 3 && m >= n / 2 && m < n) ok = mt_fit_linear(xx, yy, m, &f) == MT_OK;
        else m = n;
    }
    free(buf);
    int keep;
    double lo = 0, hi = 0;
    if (p->slope == MT_SLOPE_ZERO || !ok) keep = 0;
    else if (p->slope == MT_SLOPE_FIT) keep = 1;
    else keep = f.slope_se > 0 && fabs(f.slope) > p->z * f.slope_se && mt_theil_sen_ci(x, y, n, p->z, &lo, &hi) == MT_OK &&
                (lo > 0 || hi < 0) && f.slope >= lo && f.slope <= hi;
    if (st) {
        st->fit_slope = ok ? f.slope : 0;
        st->fit_slope_se = ok ? f.slope_se : 0;
        st->fit_window_s = n > 0 ? x[n - 1] - x[0] : 0;
        st->fit_dropped = n - m;
        st->slope_state = keep ? MT_SLOPE_KEPT : MT_SLOPE_DROPPED;
    }
    if (keep) {
        lm->kind = MT_MODEL_LINEAR;
        lm->slope = f.slope;
        lm->intercept = f.intercept;
    } else {
        lm->kind = MT_MODEL_OFFSET;
        lm->slope = 0;
        lm->intercept = mt_median(y, n);
    }
}

/* wait between fit points: busy by default (a sleeping CPU answers the next
 * ping-pongs late and skews them); MPITEMPO_CLOCK_SLEEP=1 sleeps instead,
 * which oversubscribed runs need */
static void wait_s(const mt_clock_t *clk, double target)
{
    const char *sl = getenv("MPITEMPO_CLOCK_SLEEP");
    if (!(sl && sl[0] == '1')) {
        while (mt_clock_now(clk) < target) {
        }
        return;
    }
    double s = target - mt_clock_now(clk);
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
        double *x = malloc(sizeof(double) * (2 * (size_t)n + 1));
        if (!x) mt_check_mpi(MPI_ERR_NO_MEM, "fit-point buffer");
        double *y = x + n;
        double t0 = mt_clock_now(clk);
        for (int i = 0; i < n; i++) {
            if (i > 0 && p->window_s > 0) wait_s(clk, t0 + p->window_s * i / (n - 1));
            mt_sync_measure(e, clk, ref, client, &o);
            x[i] = o.timestamp;
            y[i] = o.offset;
        }
        mt_fit_decide(p, x, y, n, lm, e->st);
        if (p->recompute) {
            /* COMPUTE_AND_SET_INTERCEPT: a fresh offset sets the intercept */
            mt_sync_measure(e, clk, ref, client, &o);
            if (lm->kind == MT_MODEL_LINEAR) lm->intercept = o.offset - lm->slope * o.timestamp;
            else {
                y[n] = o.offset;
                lm->intercept = mt_median(y, n + 1);
            }
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
