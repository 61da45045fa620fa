/* mpitempo: LEARN_CLOCK_MODEL (Hunold and Carpen-Amarie 2018, Algorithm 2) and the slope decision.
 *
 * Additions to the paper, all parameters or documented defaults:
 *  - warm-up: one offset measurement before the fit points (not used); the
 *    window starts after it, so a client whose reference is still busy with
 *    another client does not lose its window while waiting.
 *  - window: the client spreads its fit points over at least `window` seconds
 *    (it waits between them), because a slope fitted over a few hundred
 *    microseconds fits noise: with offset noise sigma and n points over a
 *    span W the slope's standard error is about sigma * sqrt(12 / n) / W.
 *  - fit=ts (default): fit points whose fastest round trip was slow are
 *    dropped (select_fast), and the slope is the Theil-Sen estimate (median
 *    of pairwise slopes), intercept the median; fit=ols is the paper's
 *    least-squares fit over all points.
 *  - slope=auto: the slope is kept only when |slope| > z * SE(slope) (OLS
 *    standard error) and the distribution-free Theil-Sen interval at the
 *    same z excludes 0 and holds the fitted slope; otherwise the model is
 *    offset-only (slope 0, intercept = median offset), which is what a
 *    drift-free pair of clocks (one host, one TSC) needs. What was decided
 *    is recorded (mt_sync_stats_t.slope_state).
 *  - robust fit: points more than 5 MADs off the first fit are dropped before
 *    the final fit.
 * fit=paper turns every addition off: no warm-up, no window, least squares
 * over all fit points, no refit, the slope always kept, recompute as given. */
#define _GNU_SOURCE
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_CONFIRM 711
/* the adaptive window fits after every point up to this many, then after 25% more each time */
#define ADAPT_EVERY_UNTIL 64
#define TAG_MORE 712
#define TAG_REFIT 713

/* may a model measure more windows when its drift is not known well enough for MT_HORIZON_PLAN_S?
 * slope=auto with spread fit points only (slope=fit/zero and fit=paper are what the user asked for) */
static int refit_allowed(const mt_sync_params_t *p)
{
    return p->slope == MT_SLOPE_AUTO && p->fit != MT_FIT_PAPER && p->window_s > 0 && p->fitpts >= 2;
}

void mt_sync_measure(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, mt_offset_res_t *o)
{
    memset(o, 0, sizeof *o);
    e->p->offset->measure(&e->pp, clk, ref, client, e->p->pp, o);
    e->st->offsets++;
    if (e->pp.rank == client && e->p->offset == &mt_offset_meanrtt) {
        e->st->rtt_measured++;
        e->st->rtt_preempted += o->preempted;
        e->st->spread_sum_s += o->spread;
        if (o->spread > e->st->spread_max_s) e->st->spread_max_s = o->spread;
    }
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

/* Theil-Sen estimator and its confidence interval (Kendall's tau ranks,
 * normal approximation with z): the slopes of all pairs sorted, the estimate
 * is their median, the bounds are at ranks (N -+ C) / 2 with
 * C = z sqrt(n (n - 1) (2n + 5) / 18). Distribution-free, so heavy-tailed
 * offset noise (a loaded machine) neither fakes nor bends a drift. */
int mt_theil_sen_ci(const double *x, const double *y, int n, double z, double *lo, double *hi, double *est)
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
    if (est) *est = k % 2 ? sl[k / 2] : 0.5 * (sl[k / 2 - 1] + sl[k / 2]);
    free(sl);
    return MT_OK;
}

/* fit=ts, step 1: which fit points had a fast round trip. A SKaMPI offset is
 * only as good as its fastest ping-pong: on a shared machine the two ranks
 * sometimes share one core for tens of ms, every round trip then takes ~10 us
 * instead of ~2.5 us, and the two legs are asymmetric, so those offsets are
 * biased by ~1.5 us. A run of such points at one end of the window is a step
 * that the fit turns into a false slope. Returns the number selected (flags in
 * use[]), or n (all) when fewer than max(6, n/4) are fast. */
static int select_fast(const double *rtt, int n, int *use)
{
    double rmin = INFINITY;
    for (int i = 0; i < n; i++)
        if (rtt[i] > 0 && rtt[i] < rmin) rmin = rtt[i];
    double thr = MT_RTT_FILTER_F * rmin + MT_RTT_FILTER_ADD_S;
    int k = 0;
    for (int i = 0; i < n; i++) k += use[i] = rtt[i] <= thr;
    if (isfinite(rmin) && k >= 6 && 4 * k >= n) return k;
    for (int i = 0; i < n; i++) use[i] = 1;
    return n;
}

/* a slope and intercept through (x, y): OLS, or Theil-Sen with the median
 * intercept; se is always the OLS standard error of the slope */
static int fit_line(int ts, const double *x, const double *y, int n, double *tmp, mt_fit_t *f)
{
    int rc = mt_fit_linear(x, y, n, f);
    if (rc != MT_OK || !ts || n < 3) return rc;
    double lo, hi, s;
    if (mt_theil_sen_ci(x, y, n, 1.0, &lo, &hi, &s) != MT_OK) return MT_OK;
    for (int i = 0; i < n; i++) tmp[i] = y[i] - s * (x[i] - f->xmean);
    f->slope = s;
    f->intercept = mt_median(tmp, n) - s * f->xmean;
    return MT_OK;
}

/* mt_fit_decide, returning for slope=auto how clear the decision was:
 * FIT_KEEP, FIT_UNSURE (|slope| > z/2 SE but not kept), FIT_DROP */
enum { FIT_DROP = 0, FIT_UNSURE = 1, FIT_KEEP = 2 };
/* halves_ok (may be NULL): 1 when the two halves of the points in use (in
 * time order) agree on the slope: both with the sign of the whole fit, and
 * their difference within z times its standard error or within 2 ci (a
 * difference that small does not matter at the target precision). A step in
 * the offsets (the machine's load changed) gives a large slope in one half
 * and none in the other; a real drift gives the same slope in both.
 * st->fit_ci_ppm: the interval's half-width z * max(SE, |s1 - s2| / 4). */
static int fit_decide_x(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt, int n,
                        mt_model_t *lm, mt_sync_stats_t *st, double *slope_out, int *halves_ok)
{
    int cls;
    int ts = p->fit == MT_FIT_TS;
    double *buf = malloc(sizeof(double) * 4 * (size_t)(n > 0 ? n : 1));
    int *use = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!buf || !use) mt_check_mpi(MPI_ERR_NO_MEM, "fit buffer");
    double *xx = buf, *yy = buf + n, *r = buf + 2 * n, *tmp = buf + 3 * n;
    /* 1. fit=ts: only the points with fast round trips */
    int m = 0;
    if (ts && rtt && n >= 6) select_fast(rtt, n, use);
    else
        for (int i = 0; i < n; i++) use[i] = 1;
    for (int i = 0; i < n; i++)
        if (use[i]) {
            xx[m] = x[i];
            yy[m++] = y[i];
        }
    /* 2. robust: fit, drop points whose residual is more than 5 MADs
     * (scaled to sigma) from the median residual -- a point whose ping-pongs
     * were all delayed -- and fit again */
    mt_fit_t f;
    int ok = fit_line(ts, xx, yy, m, tmp, &f) == MT_OK;
    if (ok && m >= 6 && p->fit != MT_FIT_PAPER) {
        for (int i = 0; i < m; i++) r[i] = yy[i] - (f.slope * xx[i] + f.intercept);
        double med = mt_median(r, m);
        for (int i = 0; i < m; i++) tmp[i] = fabs(r[i] - med);
        double mad = 1.4826 * mt_median(tmp, m);
        int k = 0;
        for (int i = 0; i < m; i++)
            if (mad <= 0 || fabs(r[i] - med) <= 5 * mad) {
                xx[k] = xx[i];
                yy[k++] = yy[i];
            }
        if (k >= 3 && k >= m / 2 && k < m) {
            m = k;
            ok = fit_line(ts, xx, yy, m, tmp, &f) == MT_OK;
        }
    }
    /* 3. decide */
    int keep;
    double lo = 0, hi = 0;
    if (p->slope == MT_SLOPE_ZERO || !ok) keep = 0;
    else if (p->slope == MT_SLOPE_FIT) keep = 1;
    else keep = f.slope_se > 0 && fabs(f.slope) > p->z * f.slope_se &&
                mt_theil_sen_ci(xx, yy, m, p->z, &lo, &hi, NULL) == MT_OK && (lo > 0 || hi < 0) && f.slope >= lo &&
                f.slope <= hi;
    /* the halves of the points in use (time order): their slopes agree, and
     * their difference estimates the slope's error where the offsets wander
     * (correlated noise, which the OLS standard error does not see): for
     * independent noise |s1 - s2| / 4 is about SE(slope) of all points */
    double se_ci = ok ? f.slope_se : 0;
    int hok = 0, h = m / 2;
    mt_fit_t f1, f2;
    if (ok && h >= 4 && fit_line(ts, xx, yy, h, tmp, &f1) == MT_OK &&
        fit_line(ts, xx + h, yy + h, m - h, tmp, &f2) == MT_OK) {
        double d = fabs(f1.slope - f2.slope), se = sqrt(f1.slope_se * f1.slope_se + f2.slope_se * f2.slope_se);
        hok = f1.slope * f.slope > 0 && f2.slope * f.slope > 0 && (d <= p->z * se || d <= 2e-6 * p->ci_ppm);
        if (d / 4 > se_ci) se_ci = d / 4;
    }
    if (halves_ok) *halves_ok = hok;
    if (st) {
        st->fit_points = m;
        st->fit_ci_ppm = p->z * se_ci * 1e6;
        st->fit_slope = ok ? f.slope : 0;
        st->fit_slope_se = ok ? f.slope_se : 0;
        st->fit_window_s = m > 0 ? xx[m - 1] - xx[0] : 0;
        st->fit_dropped = n - m;
        st->slope_state = keep ? MT_SLOPE_KEPT : MT_SLOPE_DROPPED;
    }
    cls = keep ? FIT_KEEP : ok && f.slope_se > 0 && fabs(f.slope) > 0.5 * p->z * f.slope_se ? FIT_UNSURE : FIT_DROP;
    if (slope_out) *slope_out = ok ? f.slope : 0;
    if (keep) {
        lm->kind = MT_MODEL_LINEAR;
        lm->slope = f.slope;
        lm->intercept = f.intercept;
    } else {
        lm->kind = MT_MODEL_OFFSET;
        lm->slope = 0;
        lm->intercept = mt_median(yy, m);
    }
    free(buf);
    free(use);
    return cls;
}

double mt_window_disagreement(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt,
                              const int *wstart, const int *wlen, int nw, double slope)
{
    double dis = 0;
    if (nw < 2) return 0;
    for (int i = 0; i < nw; i++) {
        if (wlen[i] < 4) continue;
        mt_model_t m;
        double s = 0;
        fit_decide_x(p, x + wstart[i], y + wstart[i], rtt ? rtt + wstart[i] : NULL, wlen[i], &m, NULL, &s, NULL);
        if (fabs(s - slope) > dis) dis = fabs(s - slope);
    }
    return dis;
}

/* the drift uncertainty of a model whose final fit had the interval ci_half and whose windows are ws/wl:
 * the fit's interval (random error) plus the windows' disagreement (wander across windows). On synthetic
 * offsets whose level wanders from window to window (tests/c/test_clock.c) the sum holds the error in
 * 299 of 300 fits where the interval alone held it in 78 (the larger of the two: 236); without wander it
 * is 1.7 times the interval on average */
static double model_unc(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt,
                        const int *ws, const int *wl, int nw, int kept, double slope, double ci_half)
{
    return mt_drift_unc(kept, slope, ci_half + mt_window_disagreement(p, x, y, rtt, ws, wl, nw, slope));
}

double mt_drift_unc(int kept, double slope, double ci_half)
{
    return kept ? ci_half : fabs(slope) + ci_half;
}

double mt_drift_bound(double horizon_s)
{
    return MT_SYNC_ACCURACY_S / (horizon_s > MT_HORIZON_MIN_S ? horizon_s : MT_HORIZON_MIN_S);
}

int mt_slope_unresolved(int kept, double slope, double ci_half, double horizon_s)
{
    return mt_drift_unc(kept, slope, ci_half) > mt_drift_bound(horizon_s);
}

void mt_sync_at_horizon(mt_sync_stats_t *st, double horizon_s)
{
    /* the clock may drift from the reference by up to drift_unc + drift_unc_ref per second: past the
     * stated accuracy within the horizon, the rank is below it: slope_unresolved for its own model's
     * part, ref_below for the inherited part, each beyond the bound; beyond it only together, the
     * larger part is blamed */
    double b = mt_drift_bound(horizon_s), own = st->drift_unc, ref = st->drift_unc_ref;
    if (own > b) st->slope_unresolved = 1;
    if (ref > b) st->ref_below = 1;
    if (own <= b && ref <= b && own + ref > b) { /* together only: the larger part is blamed */
        if (own >= ref) st->slope_unresolved = 1;
        else st->ref_below = 1;
    }
}

int mt_sync_below_accuracy(const mt_sync_stats_t *st)
{
    return mt_meanrtt_below_accuracy(st->rtt_measured, st->rtt_preempted, st->spread_sum_s) || st->slope_unresolved ||
           st->ref_below || st->prior_below;
}

void mt_fit_decide(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt, int n,
                   mt_model_t *lm, mt_sync_stats_t *st)
{
    fit_decide_x(p, x, y, rtt, n, lm, st, NULL, NULL);
}

/* wait between fit points: busy by default (a sleeping CPU answers the next
 * ping-pongs late and skews them); lazy (oversubscribed runs) sleeps instead,
 * so that the ranks sharing the CPU can measure */
static void wait_s(const mt_clock_t *clk, double target, int lazy)
{
    if (!lazy) {
        mt_sim_skip(target - mt_clock_now(clk));
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

/* fit points i0 .. i1-1 of a window that started at t1 on the client: point
 * i is taken at t1 + window * i / (fitpts - 1) */
static void measure_points(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, int i0, int i1, double t1,
                           double *x, double *y, double *rtt)
{
    const mt_sync_params_t *p = e->p;
    mt_offset_res_t o;
    const char *tr = getenv("MPITEMPO_CLOCK_TRACE");
    int n = p->fitpts;
    for (int i = i0; i < i1; i++) {
        if (i > 0 && p->window_s > 0) wait_s(clk, t1 + p->window_s * i / (n - 1), e->pp.lazy);
        mt_sync_measure(e, clk, ref, client, &o);
        x[i] = o.timestamp;
        y[i] = o.offset;
        rtt[i] = o.rtt_min;
        if (tr && tr[0] == '1')
            fprintf(stderr, "trace learn ref=%d client=%d i=%d t=%.9f off=%.9e rtt=%.9e\n", ref, client, i, o.timestamp,
                    o.offset, o.rtt_min);
    }
}

/* one whole window of n fit points on the client, spread over the window */
static void measure_window(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, int n, double *x, double *y,
                           double *rtt)
{
    measure_points(e, clk, ref, client, 0, n, mt_clock_now(clk), x, y, rtt);
}

/* adaptive fit window: the first point after which the stopping rule is
 * looked at; fitpts when the window is fixed (ci=0, slope=fit/zero,
 * fit=paper, window=0, or too few points to stop early) */
static int adaptive_min(const mt_sync_params_t *p)
{
    int n = p->fitpts;
    if (!(p->ci_ppm > 0) || p->slope != MT_SLOPE_AUTO || p->fit == MT_FIT_PAPER || !(p->window_s > 0)) return n;
    int k = (int)ceil(MT_ADAPT_MIN_FRAC * (n - 1)) + 1;
    if (k < MT_ADAPT_MIN_PTS) k = MT_ADAPT_MIN_PTS;
    return k < n ? k : n;
}

/* adaptive fit window: at most this many points (twice the window's span).
 * Past the fixed window's fitpts points it goes on only where ci=0 would
 * measure a second window (its slope was not dropped there), and when it
 * reaches 2 x fitpts - 1 without stopping, the points past fitpts are that
 * second window: never more points than ci=0 takes */
static int adaptive_max(const mt_sync_params_t *p)
{
    int n = p->fitpts;
    return adaptive_min(p) < n ? 2 * n - 1 : n;
}

/* adaptive: may the first window end here with no second window? (slope=auto's
 * decision, with the two halves standing in for the second window) */
static int adaptive_done(const mt_sync_params_t *p, int cls, int reached, int halves, double s1)
{
    if (cls == FIT_KEEP) return reached && halves && fabs(s1) >= MT_ADAPT_KEEP_CI * p->ci_ppm * 1e-6;
    return cls == FIT_DROP || (reached && fabs(s1) <= p->ci_ppm * 1e-6);
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
        int first = p->fit == MT_FIT_PAPER; /* fit=paper: no warm-up */
        int nmin = adaptive_min(p), nmax = adaptive_max(p);
        for (int i = first; i <= nmin; i++) mt_sync_measure(e, clk, ref, client, &o); /* warm-up + nmin */
        for (int i = nmin; i < nmax; i++) { /* adaptive: one flag from the client before each further point */
            double more = 0;
            mt_pp_recv_lazy(&e->pp, &more, 1, client, TAG_MORE);
            if (more == 0) break;
            mt_sync_measure(e, clk, ref, client, &o);
        }
        if (p->slope == MT_SLOPE_AUTO) /* one more window per nonzero flag of the client */
            for (int w = 0; w < 2; w++) {
                double again = 0;
                mt_pp_recv_lazy(&e->pp, &again, 1, client, TAG_CONFIRM);
                if (again == 0) break;
                for (int i = 0; i < n; i++) mt_sync_measure(e, clk, ref, client, &o);
            }
        if (refit_allowed(p)) /* more windows while the drift is not known well enough (client decides) */
            for (int w = 0; w < MT_REFIT_MAX; w++) {
                double more = 0;
                mt_pp_recv_lazy(&e->pp, &more, 1, client, TAG_REFIT);
                if (more == 0) break;
                for (int i = 0; i < n; i++) mt_sync_measure(e, clk, ref, client, &o);
            }
        if (p->recompute) mt_sync_measure(e, clk, ref, client, &o);
    } else if (e->pp.rank == client) {
        e->st->learn_client++;
        /* the first window, two more + the recompute point */
        size_t cap = (size_t)adaptive_max(p) + (2 + MT_REFIT_MAX) * (size_t)n + 1;
        double *x = malloc(sizeof(double) * 3 * cap);
        if (!x) mt_check_mpi(MPI_ERR_NO_MEM, "fit-point buffer");
        double *y = x + cap, *rtt = y + cap;
        /* warm-up: the first measurement waits for the reference to arrive
         * (it may still serve another client) and runs on cold caches; it
         * is not a fit point, and the window starts when it is done */
        if (p->fit != MT_FIT_PAPER) mt_sync_measure(e, clk, ref, client, &o);
        int n1 = n, ntot, cls, halves = 0, reached = 0;
        double s1 = 0, s2 = 0;
        int nmin = adaptive_min(p), nmax = adaptive_max(p);
        /* the first window's decision at its fitpts points (the adaptive window
         * may go on past them), and whether its points past fitpts, up to nmax,
         * are the second window */
        int cls_w1 = FIT_DROP, w2_measured = 0;
        /* the windows of the final fit (their first point and length in x, y, rtt) */
        int ws[MT_WINDOWS_MAX], wl[MT_WINDOWS_MAX], nw = 0;
        double s_w1 = 0;
        e->st->fit_stop = MT_STOP_FIXED;
        if (nmin < n) {
            /* adaptive fit window: after each point from nmin on, fit; stop
             * when the slope's interval z * SE is within ci; at the fixed
             * window's last point also when its slope is dropped (as ci=0
             * decides there); past it only when the interval is reached and
             * no second window is needed (adaptive_done). Else tell the
             * reference that one more point follows */
            double t1 = mt_clock_now(clk);
            measure_points(e, clk, ref, client, 0, nmin, t1, x, y, rtt);
            /* the rule is looked at after every point up to ADAPT_EVERY_UNTIL points, then
             * after 25% more points each time (and always at fitpts and at nmax): a fit (its
             * Theil-Sen check is O(points^2)) after every one of thousands of points made a
             * sync of fitpts=6000 take minutes; geometric steps cost about 3 final fits */
            int next_fit = nmin;
            for (n1 = nmin;; n1++) {
                if (n1 != next_fit && n1 != n && n1 != nmax) {
                    double more = 1;
                    mt_pp_send(&e->pp, &more, 1, ref, TAG_MORE);
                    measure_points(e, clk, ref, client, n1, n1 + 1, t1, x, y, rtt);
                    continue;
                }
                next_fit = n1 + (n1 < ADAPT_EVERY_UNTIL ? 1 : n1 / 4);
                cls = fit_decide_x(p, x, y, rtt, n1, lm, e->st, &s1, &halves);
                reached = e->st->fit_slope_se > 0 && e->st->fit_ci_ppm <= p->ci_ppm;
                if (n1 == n) {
                    cls_w1 = cls;
                    s_w1 = s1;
                }
                int one_window = reached && adaptive_done(p, cls, reached, halves, s1);
                int stop = n1 < n ? reached : n1 == n ? reached || cls == FIT_DROP : one_window || n1 == nmax;
                if (stop) {
                    e->st->fit_stop = reached ? MT_STOP_CI : MT_STOP_MAX;
                    w2_measured = n1 > n && !one_window;
                    if (n1 < nmax) {
                        double more = 0;
                        mt_pp_send(&e->pp, &more, 1, ref, TAG_MORE);
                    }
                    break;
                }
                double more = 1;
                mt_pp_send(&e->pp, &more, 1, ref, TAG_MORE);
                measure_points(e, clk, ref, client, n1, n1 + 1, t1, x, y, rtt);
            }
        } else {
            measure_window(e, clk, ref, client, n, x, y, rtt);
            cls = fit_decide_x(p, x, y, rtt, n, lm, e->st, &s1, NULL);
        }
        ntot = n1;
        if (w2_measured) { /* the fixed window and the adaptive window's points past it */
            ws[0] = 0, wl[0] = n, ws[1] = n, wl[1] = n1 - n, nw = 2;
        } else {
            ws[0] = 0, wl[0] = n1, nw = 1;
        }
        double unres_slope = NAN;
        if (p->slope == MT_SLOPE_AUTO) {
            /* slope=auto keeps a slope only when a second, independent
             * window confirms it: its own slope is significant with the
             * same sign; the model is then fitted over both windows. A
             * step in the offsets (the machine's load changed) looks like a
             * slope in one window but not in the next. When the first
             * window's slope was significant and the second does not
             * confirm it (a noisy window, or a step in the first), a third
             * window decides: a real drift shows again, a step does not;
             * the model is then fitted over the first and the third.
             * An adaptive window that reached its interval needs no second
             * window when its slope is dropped and |slope| <= ci (an unsure
             * slope larger than that goes to the second window), or kept
             * with both halves agreeing (the halves stand in for the second
             * window) and at least MT_ADAPT_KEEP_CI x ci: a small slope may
             * be a slow wander of the offsets within the window, which only
             * an independent window tells from a drift. */
            /* w2_measured: the adaptive window ran to nmax past the fixed
             * window, whose slope was not dropped: points n .. nmax-1 are the
             * second window, and the first window is the fixed one (n points) */
            int done = !w2_measured && nmin < n && adaptive_done(p, cls, reached, halves, s1);
            double again = w2_measured || (!done && cls != FIT_DROP);
            if (!w2_measured) mt_pp_send(&e->pp, &again, 1, ref, TAG_CONFIRM);
            if (again != 0) {
                int nw1 = w2_measured ? n : n1, nw2 = w2_measured ? n1 - n : n;
                if (w2_measured) {
                    cls = cls_w1;
                    s1 = s_w1;
                }
                double *x2 = x + nw1, *y2 = y + nw1, *r2 = rtt + nw1;
                if (!w2_measured) measure_window(e, clk, ref, client, n, x2, y2, r2);
                mt_model_t m2;
                mt_sync_stats_t st2 = *e->st;
                int cls2 = fit_decide_x(p, x2, y2, r2, nw2, &m2, &st2, &s2, NULL);
                int confirmed = cls2 == FIT_KEEP && s1 * s2 > 0, ntie = 0;
                double third = cls == FIT_KEEP && !confirmed;
                mt_pp_send(&e->pp, &third, 1, ref, TAG_CONFIRM);
                if (third != 0) {
                    measure_window(e, clk, ref, client, n, x2 + nw2, y2 + nw2, r2 + nw2);
                    double s3 = 0;
                    mt_sync_stats_t st3 = *e->st;
                    int cls3 = fit_decide_x(p, x2 + nw2, y2 + nw2, r2 + nw2, n, &m2, &st3, &s3, NULL);
                    ntie = 1;
                    if (w2_measured) { /* the reference asks once more (its second window was ours) */
                        double none = 0;
                        mt_pp_send(&e->pp, &none, 1, ref, TAG_CONFIRM);
                    }
                    if (cls3 == FIT_KEEP && s1 * s3 > 0) {
                        /* the first and the third agree: window 2 is left out of the fit */
                        memmove(x2, x2 + nw2, sizeof(double) * (size_t)n);
                        memmove(y2, y2 + nw2, sizeof(double) * (size_t)n);
                        memmove(r2, r2 + nw2, sizeof(double) * (size_t)n);
                        nw2 = n;
                        confirmed = 1;
                    }
                }
                ntot = confirmed ? nw1 + nw2 : nw1 + nw2 + ntie * n;
                ws[0] = 0, wl[0] = nw1, ws[1] = nw1, wl[1] = nw2, nw = 2;
                if (ntot > nw1 + nw2) ws[2] = nw1 + nw2, wl[2] = n, nw = 3;
                e->st->slope_windows = 2 + ntie;
                if (confirmed) {
                    fit_decide_x(p, x, y, rtt, ntot, lm, e->st, NULL, NULL);
                } else {
                    mt_sync_params_t pz = *p;
                    pz.slope = MT_SLOPE_ZERO;
                    double fs = e->st->fit_slope, fse = e->st->fit_slope_se;
                    fit_decide_x(&pz, x, y, rtt, ntot, lm, e->st, NULL, NULL);
                    unres_slope = e->st->fit_slope; /* the fit over every window measured */
                    e->st->fit_slope = fs; /* report the first window's fit */
                    e->st->fit_slope_se = fse;
                }
            } else {
                e->st->slope_windows = 1;
            }
        }
        if (refit_allowed(p)) {
            /* the drift is not known well enough for the planned horizon (drift_unc x
             * MT_HORIZON_PLAN_S beyond the stated accuracy; on a loaded machine a 0.5 ppm drift is
             * often not significant in one or two 0.25 s windows and would be dropped): one more
             * window, and the decision again over every window measured (the span, and with it the
             * slope's precision, grows), at most MT_REFIT_MAX times */
            for (;;) {
                double us = isnan(unres_slope) ? e->st->fit_slope : unres_slope;
                double unc = model_unc(p, x, y, rtt, ws, wl, nw, lm->kind == MT_MODEL_LINEAR, us,
                                       e->st->fit_ci_ppm * 1e-6);
                double more = unc * MT_HORIZON_PLAN_S > MT_SYNC_ACCURACY_S && e->st->refits < MT_REFIT_MAX;
                if (e->st->refits < MT_REFIT_MAX) mt_pp_send(&e->pp, &more, 1, ref, TAG_REFIT);
                if (more == 0) break;
                measure_window(e, clk, ref, client, n, x + ntot, y + ntot, rtt + ntot);
                ws[nw] = ntot, wl[nw++] = n;
                ntot += n;
                e->st->refits++;
                fit_decide_x(p, x, y, rtt, ntot, lm, e->st, NULL, NULL);
                unres_slope = NAN;
            }
        }
        {
            /* how well is the drift known? A kept slope (slope=auto kept it, or
             * slope=fit, which always keeps it): its interval z x SE (the last fit: one window, or
             * all), plus the disagreement of its windows (mt_window_disagreement: under
             * load the offsets wander across windows, and one fit's interval does not see it: HCA2
             * kept 0.398 ppm for a true 0.5 with 0.069 ppm stated); an offset-only model (slope=auto
             * dropped the slope, or slope=zero): |slope| + the same. Otherwise this clock can drift away unseen (a real drift of 18-50 ppm
             * dropped, or kept 3-8 ppm off, under preemption; fit=paper's back-to-back fit points
             * keep slopes of +-4-41 ppm on two bound ranks) and says so (docs/clocks.md, "The flag") */
            if (isnan(unres_slope)) unres_slope = e->st->fit_slope;
            /* the verdict needs the horizon (sync -> last measurement): mt_sync_at_horizon */
            e->st->drift_unc = model_unc(p, x, y, rtt, ws, wl, nw, lm->kind == MT_MODEL_LINEAR, unres_slope,
                                         e->st->fit_ci_ppm * 1e-6);
        }
        if (p->recompute) {
            /* COMPUTE_AND_SET_INTERCEPT (Alg. 2): a fresh offset sets the
             * intercept. fit=ts uses it only when its round trip was fast
             * (see select_fast); a slow one is biased and the fitted
             * intercept stays. */
            mt_sync_measure(e, clk, ref, client, &o);
            x[ntot] = o.timestamp;
            y[ntot] = o.offset;
            rtt[ntot] = o.rtt_min;
            int fresh_ok = 1;
            if (p->fit == MT_FIT_TS) {
                double rmin = INFINITY;
                for (int i = 0; i < ntot; i++)
                    if (rtt[i] > 0 && rtt[i] < rmin) rmin = rtt[i];
                fresh_ok = o.rtt_min <= MT_RTT_FILTER_F * rmin + MT_RTT_FILTER_ADD_S;
            }
            if (lm->kind == MT_MODEL_LINEAR) {
                if (fresh_ok) lm->intercept = o.offset - lm->slope * o.timestamp;
            } else if (p->fit == MT_FIT_OLS) {
                lm->intercept = mt_median(y, ntot + 1); /* one more sample of the constant offset */
            } /* fit=ts, offset-only: the median of the fast points stays */
        }
        free(x);
    }
}

int mt_sync_one(const mt_sync_alg_t *alg, const mt_sync_params_t *p, MPI_Comm comm, const mt_clock_t *in, int lazy,
                mt_clock_t *out, mt_sync_stats_t *st, char *err)
{
    mt_sync_env_t e;
    int rc = mt_pp_open(&e.pp, comm, lazy, err);
    if (rc != MT_OK) return rc;
    mt_sync_params_t q = *p; /* ci=auto resolved for this communicator */
    q.ci_ppm = mt_sync_ci_for(alg, p, e.pp.size);
    e.p = &q;
    e.st = st;
    e.pp.rtt_mode = p->rtt;
    if (e.pp.size == 1) {
        *out = *in;
        rc = MT_OK;
    } else {
        rc = alg->sync(&e, in, out, err);
        mt_pp_lazy_barrier(&e.pp); /* oversubscribed: finished ranks sleep while others measure */
    }
    st->msgs_sent += e.pp.msgs_sent;
    mt_pp_close(&e.pp);
    return rc;
}
