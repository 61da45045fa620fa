/* The stopping rule of adaptive repetitions (base/stoprule.c): the look schedule, the order-statistic
 * interval of the median against hand-computed binomial values, and the coverage of the interval at
 * the look where the rule stops, on synthetic samples with a known median. */
#include "base/mt_common.h"
#include "base/stoprule.h"
#include "mt_test.h"

#include <math.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double unif(mt_rng_t *r) { return ((double)(mt_rng_next(r) >> 11) + 0.5) / 9007199254740992.0; }

static double normal(mt_rng_t *r) { return sqrt(-2 * log(unif(r))) * cos(2 * M_PI * unif(r)); }

/* one sequential experiment: looks at sched[0..K), each with level 1 - alpha_look; returns 1 when the
 * interval at the stopping look holds the true median; *stopped_at the look's n */
static int run_once_early(mt_rng_t *r, double sigma, double precision, const int *sched, int K, double alpha_look,
                          int early, double time_limit, int *stopped_at);

static int run_once(mt_rng_t *r, double sigma, double precision, const int *sched, int K, double alpha_look,
                    int *stopped_at)
{
    return run_once_early(r, sigma, precision, sched, K, alpha_look, 0, 0, stopped_at);
}

/* with an early look (sched[0]) where the rule stops on "time" only: when the sum of the values so far,
 * projected to the floor sched[1], exceeds time_limit (as the core's elapsed time does: the decision
 * depends on the values themselves) */
static int run_once_early(mt_rng_t *r, double sigma, double precision, const int *sched, int K, double alpha_look,
                          int early, double time_limit, int *stopped_at)
{
    static double x[4096], s[4096];
    int n = 0;
    double lo = NAN, hi = NAN;
    for (int k = 0; k < K; k++) {
        while (n < sched[k]) x[n++] = exp(sigma * normal(r)); /* lognormal: median exp(0) = 1 */
        for (int i = 0; i < n; i++) s[i] = x[i];
        qsort(s, (size_t)n, sizeof(double), cmp);
        double rel = mt_median_ci_rel(s, n, alpha_look, &lo, &hi);
        *stopped_at = n;
        if (early && k == 0) {
            double sum = 0;
            for (int i = 0; i < n; i++) sum += x[i];
            if (sum * sched[1] / n >= time_limit) break;
            continue;
        }
        if (rel <= precision) break;
    }
    return lo <= 1.0 && 1.0 <= hi;
}

int main(void)
{
    int sched[MT_REPSTOP_MAXLOOKS];
    /* schedule: the floor, doubling, the cap last */
    int K = mt_stop_looks(20, 100, sched);
    CHECK(K == 4 && sched[0] == 20 && sched[1] == 40 && sched[2] == 80 && sched[3] == 100);
    K = mt_stop_looks(20, 20, sched);
    CHECK(K == 1 && sched[0] == 20);
    K = mt_stop_looks(50, 20, sched); /* a floor above the cap: the cap */
    CHECK(K == 1 && sched[0] == 20);
    K = mt_stop_looks(20, 160, sched);
    CHECK(K == 4 && sched[3] == 160);
    /* 1, 2, 4, ..., 2^30, then the cap */
    CHECK(mt_stop_looks(1, 2000000000, sched) == 32 && sched[30] == 1 << 30 && sched[31] == 2000000000);
    CHECK(!strcmp(mt_stop_name(MT_REPSTOP_PRECISION), "precision") && !strcmp(mt_stop_name(MT_REPSTOP_CAP), "cap") &&
          !strcmp(mt_stop_name(MT_REPSTOP_TIME), "time") && !strcmp(mt_stop_name(MT_REPSTOP_FIXED), "fixed"));

    /* order statistics by hand: n = 6: P(B <= 0) = 1/64 <= 0.025 < P(B <= 1) = 7/64: (x_1, x_6) */
    long long lo, hi;
    CHECK(mt_median_ci_idx(6, 0.05, &lo, &hi) == 1 && lo == 0 && hi == 5);
    /* n = 5: P(B = 0) = 1/32 > 0.025: no 95% interval */
    CHECK(mt_median_ci_idx(5, 0.05, &lo, &hi) == 0);
    /* n = 20: P(B <= 5) = 0.0207 <= 0.025 < P(B <= 6) = 0.0577: (x_6, x_15), 0-based 5 and 14 */
    CHECK(mt_median_ci_idx(20, 0.05, &lo, &hi) == 1 && lo == 5 && hi == 14);
    /* a stricter level needs more: n = 20 at 99%: P(B <= 3) = 0.00129 <= 0.005 < P(B <= 4) = 0.0059 */
    CHECK(mt_median_ci_idx(20, 0.01, &lo, &hi) == 1 && lo == 3 && hi == 16);
    /* large n (2^-n underflows): the normal approximation n/2 - 1.96 sqrt(n)/2 within 2 */
    CHECK(mt_median_ci_idx(20000, 0.05, &lo, &hi) == 1 && fabs((double)lo - (10000 - 1.959964 * sqrt(20000.0) / 2)) < 2);
    CHECK(hi == 20000 - 1 - lo);
    CHECK(mt_median_ci_idx(0, 0.05, &lo, &hi) == 0 && mt_median_ci_idx(10, 0, &lo, &hi) == 0);

    /* relative half-width of a sorted sample */
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = 100 + i; /* median 109.5, (x_6, x_15) = (105, 114) */
    double l, h;
    double rel = mt_median_ci_rel(v, 20, 0.05, &l, &h);
    CHECK(l == 105 && h == 114 && fabs(rel - 4.5 / 109.5) < 1e-12);
    CHECK(isinf(mt_median_ci_rel(v, 5, 0.05, &l, &h)) && isnan(l));
    double z[6] = {0, 0, 0, 0, 0, 0};
    CHECK(isinf(mt_median_ci_rel(z, 6, 0.05, NULL, NULL))); /* a median of 0 has no relative width */

    /* coverage at the stopping look, 4000 sequential experiments per case. With the level 1 - alpha/K
     * per look (what the core uses) it is at least 95% (3 standard errors of the simulation allowed);
     * the uncorrected rule (alpha at every look) is printed for comparison. */
    mt_rng_t r;
    mt_rng_seed(&r, 12345);
    K = mt_stop_looks(20, 2560, sched);
    const double sigmas[3] = {0.05, 0.3, 1.0}, precs[3] = {0.01, 0.05, 0.2};
    for (int c = 0; c < 3; c++) {
        int cover = 0, cover_naive = 0, trials = 4000, at, at_sum = 0;
        for (int t = 0; t < trials; t++) {
            cover += run_once(&r, sigmas[c], precs[c], sched, K, 0.05 / K, &at);
            at_sum += at;
            cover_naive += run_once(&r, sigmas[c], precs[c], sched, K, 0.05, &at);
        }
        double cv = (double)cover / trials, cn = (double)cover_naive / trials;
        printf("sigma %.2f precision %.2f: coverage %.4f (uncorrected %.4f), mean n at stop %.0f\n", sigmas[c],
               precs[c], cv, cn, (double)at_sum / trials);
        CHECK(cv >= 0.95 - 3 * sqrt(0.05 * 0.95 / trials));
    }

    /* the early look for long calls: before the floor, at the smallest n >= n_early_min with an
     * interval at the level of K + 1 looks */
    int early;
    K = mt_stop_looks_early(20, 100, 10, 0.05, sched, &early);
    CHECK(K == 5 && early && sched[0] == 10 && sched[1] == 20 && sched[4] == 100);
    K = mt_stop_looks_early(20, 100, 1, 0.05, sched, &early); /* 2 * 2^-8 <= 0.01 < 2 * 2^-7 */
    CHECK(K == 5 && early && sched[0] == 8);
    K = mt_stop_looks_early(10, 100, 10, 0.05, sched, &early); /* the floor is already that small */
    CHECK(K == 5 && !early && sched[0] == 10 && sched[1] == 20);
    K = mt_stop_looks_early(20, 20, 10, 0.05, sched, &early); /* floor = cap: one look, and the early one */
    CHECK(K == 2 && early && sched[0] == 10 && sched[1] == 20);
    /* coverage with the early look, the time decision made on the values themselves (it stops at the
     * early look in about half the experiments: the time limit is the median of the projected sums) */
    K = mt_stop_looks_early(20, 2560, 10, 0.05, sched, &early);
    CHECK(early);
    for (int c = 0; c < 3; c++) {
        int cover = 0, trials = 4000, at, early_stops = 0;
        double limit = 20 * exp(sigmas[c] * sigmas[c] / 2); /* the lognormal's mean x 20 */
        for (int t = 0; t < trials; t++) {
            cover += run_once_early(&r, sigmas[c], precs[c], sched, K, 0.05 / K, 1, limit, &at);
            early_stops += at == sched[0];
        }
        double cv = (double)cover / trials;
        printf("early look, sigma %.2f precision %.2f: coverage %.4f, %d of %d stopped at the early look\n",
               sigmas[c], precs[c], cv, early_stops, trials);
        CHECK(cv >= 0.95 - 3 * sqrt(0.05 * 0.95 / trials));
        CHECK(early_stops > trials / 10 && early_stops < trials * 9 / 10);
    }
    return mt_test_failures ? 1 : 0;
}
