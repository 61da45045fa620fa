/* mpitempo: the stopping rule of adaptive repetitions (see stoprule.h). */
#include "base/stoprule.h"

#include <math.h>

const char *mt_stop_name(mt_stop_t s)
{
    switch (s) {
    case MT_REPSTOP_PRECISION: return "precision";
    case MT_REPSTOP_CAP: return "cap";
    case MT_REPSTOP_TIME: return "time";
    default: return "fixed";
    }
}

int mt_stop_looks(int n_min, int n_max, int *sched)
{
    if (n_max < 1) n_max = 1;
    if (n_min < 1) n_min = 1;
    if (n_min > n_max) n_min = n_max;
    int k = 0;
    long long n = n_min;
    while (k < MT_REPSTOP_MAXLOOKS - 1 && n < n_max) {
        sched[k++] = (int)n;
        n *= 2;
    }
    sched[k++] = n_max;
    return k;
}

int mt_stop_looks_early(int n_min, int n_max, int n_early_min, double alpha, int *sched, int *early)
{
    int K = mt_stop_looks(n_min, n_max, sched);
    *early = 0;
    if (K >= MT_REPSTOP_MAXLOOKS) return K;
    long long n = n_early_min < 1 ? 1 : n_early_min, lo, hi;
    while (n < sched[0] && !mt_median_ci_idx(n, alpha / (K + 1), &lo, &hi)) n++;
    if (n >= sched[0]) return K;
    for (int k = K; k > 0; k--) sched[k] = sched[k - 1];
    sched[0] = (int)n;
    *early = 1;
    return K + 1;
}

/* the largest j with P(B <= j) <= p for B ~ binomial(n, 1/2), or -1 when P(B = 0) > p. The terms are
 * summed in log space from j = 0 up (2^-n underflows a double from n = 1075). */
static long long binom_half_quantile_below(long long n, double p)
{
    double logt = -(double)n * log(2.0), cdf = 0;
    long long j = -1;
    for (long long i = 0; i <= n / 2; i++) {
        cdf += exp(logt);
        if (cdf > p) break;
        j = i;
        logt += log((double)(n - i)) - log((double)(i + 1));
    }
    return j;
}

int mt_median_ci_idx(long long n, double alpha, long long *lo, long long *hi)
{
    *lo = 0;
    *hi = n > 0 ? n - 1 : 0;
    if (n < 1 || !(alpha > 0 && alpha < 1)) return 0;
    /* coverage of (x_(l), x_(n-l+1)) (1-based) is 1 - 2 P(B <= l - 1): the largest l with
     * P(B <= l - 1) <= alpha / 2 */
    long long j = binom_half_quantile_below(n, alpha / 2);
    if (j < 0) return 0;
    *lo = j;         /* l - 1 = j: 0-based index of x_(l) */
    *hi = n - 1 - j; /* x_(n - l + 1) */
    return 1;
}

double mt_median_ci_rel(const double *v, long long n, double alpha, double *lo_out, double *hi_out)
{
    long long lo, hi;
    if (lo_out) *lo_out = NAN;
    if (hi_out) *hi_out = NAN;
    if (n < 1 || !mt_median_ci_idx(n, alpha, &lo, &hi)) return INFINITY;
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    if (lo_out) *lo_out = v[lo];
    if (hi_out) *hi_out = v[hi];
    if (!(fabs(med) > 0)) return INFINITY;
    double w = fmax(med - v[lo], v[hi] - med);
    return w / fabs(med);
}
