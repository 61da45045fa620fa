/* mpitempo: clock offset algorithms (Hunold and Carpen-Amarie 2018, Appendix A): the building
 * blocks of every sync algorithm. MEASURE_OFFSET between a reference and a
 * client, both reading their clock `clk`; the client gets the result:
 *
 *     offset    = client time - reference time (seconds), at
 *     timestamp = the client's clock time when it was valid.
 *
 * (The papers' SKaMPI-Offset returns reference minus client; we negate it so
 * that both algorithms and every model share one sign convention.)
 * Registered in offset.c; a new algorithm is a new file plus one line. */
#ifndef MT_OFFSET_H
#define MT_OFFSET_H

#include <mpi.h>
#include <stdint.h>

#include "clock/clock.h"

typedef struct mt_offset_res {
    double timestamp;
    double offset;
    double rtt_min;   /* smallest round trip seen (s), for diagnostics (Mean-RTT-Offset: the RTT estimate) */
    double spread;    /* Mean-RTT-Offset: how far the round trips it relied on exceed the fastest one
                       * (s, half of it): the scale of its error; 0 for SKaMPI-Offset */
    int preempted;    /* Mean-RTT-Offset: spread > MT_MEANRTT_TOL_S (preempted round trips) */
} mt_offset_res_t;

/* Mean-RTT-Offset: the RTT estimate and the offsets' exchanges are trusted to this accuracy (s);
 * a measurement whose round trips exceed the fastest one by more (spread) is "preempted" */
#define MT_MEANRTT_TOL_S 5e-6
/* a rank's Mean-RTT-Offset sync is below its stated accuracy when more than this share of its
 * measurements were preempted, or their mean spread exceeds MT_MEANRTT_TOL_S */
#define MT_MEANRTT_MAX_PREEMPTED 0.05
/* Mean-RTT-Offset's RTT: MEDIAN after an untimed hand-shake, measured in every call (default), or
 * MEAN of the ping-pongs measured once per partner (Algorithm 8 as the paper specifies it) */
enum { MT_RTT_MEDIAN = 0, MT_RTT_MEAN = 1 };

/* Per-communicator state of one sync call (no globals): message counters and
 * the RTT cache of Mean-RTT-Offset. */
typedef struct mt_pp {
    MPI_Comm comm;     /* a private duplicate: sync messages never meet user messages */
    int rank, size;
    int64_t msgs_sent; /* point-to-point messages this rank sent (round counting in tests) */
    double *rtt;       /* Mean-RTT-Offset: RTT to each partner, <0 when not yet measured; then
                        * (rtt + size) the fastest round trip seen with each partner */
    int rtt_mode;      /* Mean-RTT-Offset: MT_RTT_MEDIAN or MT_RTT_MEAN (set by the sync from its params) */
    int lazy;          /* ranks share CPUs (oversubscribed): wait for the first message of a measurement
                        * by polling with short sleeps, so that idle ranks leave the CPU */
} mt_pp_t;

/* lazy: the job is oversubscribed (the run driver decides, see run/run.c) */
int mt_pp_open(mt_pp_t *pp, MPI_Comm comm, int lazy, char *err);
void mt_pp_close(mt_pp_t *pp);

/* checked point-to-point helpers (abort the job on MPI errors, like mt_check_mpi) */
void mt_pp_send(mt_pp_t *pp, const double *v, int n, int dest, int tag);
void mt_pp_ssend(mt_pp_t *pp, const double *v, int n, int dest, int tag);
void mt_pp_recv(mt_pp_t *pp, double *v, int n, int src, int tag);
/* mt_pp_recv, but when pp->lazy, poll (MPI_Test) with 20 us sleeps: for the
 * first message of a measurement, which may come much later. The ping-pongs
 * that follow are then answered by a rank that is on the CPU. */
void mt_pp_recv_lazy(mt_pp_t *pp, double *v, int n, int src, int tag);
/* when pp->lazy: a barrier waited for with MPI_Test and short sleeps, so that
 * ranks that are done leave the CPU to those still measuring (no-op otherwise) */
void mt_pp_lazy_barrier(mt_pp_t *pp);
/* the same on any communicator, when lazy (no-op otherwise) */
void mt_lazy_barrier(MPI_Comm comm, int lazy);

typedef struct mt_offset_alg {
    const char *name;
    const char *desc;
    /* Collective for ref and client only; other ranks must not call it.
     * npp >= 1 ping-pongs. The client fills *out; the reference leaves it 0. */
    void (*measure)(mt_pp_t *pp, const mt_clock_t *clk, int ref, int client, int npp, mt_offset_res_t *out);
} mt_offset_alg_t;

extern const mt_offset_alg_t *const mt_offset_algs[];
extern const int mt_noffset_algs;
const mt_offset_alg_t *mt_offset_find(const char *name);
void mt_offset_names(char *buf, size_t len);

extern const mt_offset_alg_t mt_offset_skampi, mt_offset_meanrtt;

/* Pure cores of the algorithms, unit tested on synthetic data.
 * SKaMPI: per ping-pong i the client's send time s_last[i], the reference's
 * time t_ref[i], the client's receive time s_now[i]. Returns client - ref. */
double mt_offset_skampi_core(const double *s_last, const double *t_ref, const double *s_now, int n, double *rtt_min);
/* Mean-RTT: client receive times local[i], reference times ref[i], mean rtt.
 * Returns the median of local - ref - rtt/2 and its timestamp in *ts
 * (the lower median for even n, so that it is one of the measurements). */
double mt_offset_meanrtt_core(const double *local, const double *ref, int n, double rtt, double *ts);
/* The RTT estimate of Mean-RTT-Offset: the median of n round trips (sorts rtt in place). */
double mt_rtt_median(double *rtt, int n);
/* The spread of a Mean-RTT-Offset measurement: half of how far the RTT estimate, and the round
 * trip of the exchange whose offset was chosen, exceed the fastest round trip seen (rtt_min).
 * Preempted round trips (a rank waiting for the CPU) make it large: the RTT estimate is then not
 * the latency of the exchanges, and rtt/2 is not their return leg. */
double mt_meanrtt_spread(double rtt_est, double rtt_min, double exch_rtt);
/* 1 when a rank's n Mean-RTT-Offset measurements, npre of them preempted, with spreads summing
 * to spread_sum, leave its sync below the stated accuracy (see MT_MEANRTT_MAX_PREEMPTED) */
int mt_meanrtt_below_accuracy(int n, int npre, double spread_sum);

#endif
