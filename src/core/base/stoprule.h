/* mpitempo: the stopping rule of adaptive repetitions (docs/methods.md, "Adaptive repetitions").
 *
 * An experiment is measured in blocks; after each block ("a look") the distribution-free
 * confidence interval of the median (order statistics, by inverting the sign test) is compared with
 * the precision asked for. The looks are fixed in advance (n_min, then doubling, capped at n_max),
 * and each look's interval has level 1 - alpha / K for K looks: by the union bound (Bonferroni),
 * the interval reported at whichever look the rule stops has coverage >= 1 - alpha for any
 * stopping rule (the repeated-confidence-interval argument of Jennison and Turnbull 1989).
 * Pure: no MPI. */
#ifndef MT_STOPRULE_H
#define MT_STOPRULE_H

#define MT_REPSTOP_MAXLOOKS 64

/* why the measuring of an experiment stopped */
typedef enum { MT_REPSTOP_FIXED = 0, MT_REPSTOP_PRECISION, MT_REPSTOP_CAP, MT_REPSTOP_TIME } mt_stop_t;
const char *mt_stop_name(mt_stop_t s);

/* the look schedule: sched[0] = n_min (at most n_max), then doubling, the last = n_max; returns K */
int mt_stop_looks(int n_min, int n_max, int *sched);

/* the schedule with an early look for long calls: the looks of mt_stop_looks, preceded by one at
 * n_early = the smallest n >= n_early_min whose interval exists at level 1 - alpha / (K + 1), when that
 * is below n_min (*early = 1; K + 1 looks in all, so that the Bonferroni level counts it). At the
 * early look the rule may stop on time only: the floor n_min would take longer than the time limit.
 * Without such an n (n_early >= n_min) the schedule is mt_stop_looks's and *early = 0. */
int mt_stop_looks_early(int n_min, int n_max, int n_early_min, double alpha, int *sched, int *early);

/* 0-based indices of the order statistics (x_(lo), x_(hi)) of a sample of n whose interval holds the
 * median with probability >= 1 - alpha (the narrowest symmetric pair); 0 when n is too small for
 * that level (then *lo = 0, *hi = n - 1) */
int mt_median_ci_idx(long long n, double alpha, long long *lo, long long *hi);

/* the interval's relative half-width max(med - x_(lo), x_(hi) - med) / |med| of the sorted sample
 * v[0..n) at level 1 - alpha; INFINITY when n is too small or the median is 0 */
double mt_median_ci_rel(const double *sorted, long long n, double alpha, double *lo_out, double *hi_out);

#endif
