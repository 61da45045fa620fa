/* mpitempo: LogP/LogGP parameters of a pair of ranks, measured with MPI
 * point-to-point in the way of Netgauge (Hoefler, Lichei and Rehm 2007: overheads
 * timed directly, L from the round trip, g from message trains; the model:
 * Culler et al. 1993, LogGP: Alexandrov et al. 1995). Messages are 4-byte ints, the payload of our
 * barrier algorithms. Rank "s" (the lower) and rank "r" of the pair:
 *   RTT   ping-pong s -> r -> s, timed at s: RTT = 2 (o_s + L + o_r);
 *   o_s   the time s spends in MPI_Send (r has posted its receive first);
 *   o_r   the time r spends in MPI_Recv of a message that has already arrived
 *         (r waits 4 RTT after a hand-shake before it calls MPI_Recv); with
 *         or_probe (--o-r-method probe, the default) r then also calls
 *         MPI_Iprobe until it reports the message before MPI_Recv is timed:
 *         a polling MPI library (MPICH) pulls messages in during its progress
 *         pass, which in a ping-pong overlaps the flight time (L); "wait" keeps
 *         that pass in o_r (Netgauge's definition), which can make L negative;
 *   L     RTT / 2 - o_s - o_r (medians);
 *   g     a train of K messages s -> r answered by one ack: T(K) - T(1) =
 *         (K - 1) max(g, o_s, o_r), so g = (T(K) - T(1)) / (K - 1) (medians);
 *   G     (LogGP, --msizes) the slope of RTT(m) / 2 over message sizes m, by
 *         least squares, in s per byte.
 * Sanity (mt_logp_sane): L >= 0 and g >= o_s (a train cannot go faster than
 * its sender can post messages), each with 10% tolerance for timer noise (of
 * RTT/2 for L, which is about 0 in shared memory; of o_s for g). */
#ifndef MT_LOGP_H
#define MT_LOGP_H

#include <mpi.h>
#include <stdint.h>

#include "timer/timer.h"

#define MT_LOGP_NPARAM 5 /* rtt, o_s, o_r, train1, trainK */

typedef struct mt_logp_cfg {
    int64_t nrep;     /* timings per quantity */
    int64_t warmup;   /* untimed ping-pongs first */
    int train;        /* K, messages in a train (>= 2) */
    int or_probe;     /* o_r: 1 = MPI_Iprobe has seen the message before MPI_Recv is timed, 0 = only the wait */
    int64_t *msizes;  /* sizes for G (may be NULL) */
    int nsizes;
    double timer_ov_s; /* this rank's timer read overhead (min of back-to-back reads), subtracted from every timing */
} mt_logp_cfg_t;

/* The result for one pair (medians and interquartile ranges, seconds). */
typedef struct mt_logp_pair {
    int a, b;                       /* ranks */
    double rtt, o_s, o_r, L, g;     /* medians */
    double rtt_iqr, o_s_iqr, o_r_iqr, g_iqr; /* IQR of the samples (g: of T(K)/(K-1)) */
    double G;                       /* s/B, NAN without sizes */
    double *rtt_m;                  /* median RTT per size (nsizes) */
} mt_logp_pair_t;

/* ---- pure parts (unit tested) ---- */
/* median and interquartile range (linear interpolation) of n values; v is sorted in place */
double mt_logp_quantile_sorted(const double *v, int64_t n, double q);
void mt_logp_median_iqr(double *v, int64_t n, double *median, double *iqr);
/* L and g from the medians; G by least squares over (msizes, rtt_m / 2) */
void mt_logp_derive(mt_logp_pair_t *p, double train1, double traink, int k, const int64_t *msizes, int nsizes);
/* MT_OK, or MT_EINVAL with a one-line reason naming the failing check */
int mt_logp_sane(const mt_logp_pair_t *p, char *err);
/* least-squares slope of y over x (n >= 2; NAN otherwise) */
double mt_logp_slope(const double *x, const double *y, int n);

/* ---- measurement (MPI) ---- */
/* Measure the pair (a, b) of comm; only a and b take part (collective over
 * the two). samples (rank a): MT_LOGP_NPARAM x nrep seconds, in the order
 * rtt, o_s, o_r (timed at b, sent to a), train1, trainK; out on rank a. */
int mt_logp_measure_pair(MPI_Comm comm, int a, int b, const mt_logp_cfg_t *c, const mt_timer_inst_t *t,
                         double *samples, mt_logp_pair_t *out, char *err);

#endif
