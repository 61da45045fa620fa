/* mpitempo: the small-message ping-pong method of Luecke et al. 2009
 * ("Measuring MPI latency and communication rates for small messages"):
 *   3.1 timer study: n back-to-back pairs of reads, res_timing = min positive
 *       difference, min_ov = min non-negative difference, exact frequencies;
 *   3.2 ping-pong between two ranks, blocking send/recv, barrier per trial,
 *       hand-shake before each timing loop, min_ov subtracted from every loop;
 *       each rank sends from its send buffer and receives into its receive
 *       buffer (as osu_latency's s_buf and r_buf), or with --buffers one
 *       through one array for both (the paper's Fortran A);
 *   3.3 npp = nint(max(1, res_npp * res_timing / median_ppt));
 * plus the loop-averaged OSU/IMB-style ping-pong for comparison.
 * Statistics are computed by the Python side from the raw ticks. */
#ifndef MT_PINGPONG_H
#define MT_PINGPONG_H

#include <mpi.h>
#include <stdint.h>

#include "timer/timer.h"

#define MT_PP_TAG 1          /* ping-pong messages (the paper's tag) */
#define MT_PP_TAG_HS 2       /* hand-shake messages */
#define MT_PP_NPP_MAX 100000000LL
/* the estimate (part 3) grows npp_init by 10x while the timer sees nothing, up to this */
#define MT_PP_NPP_EST_MAX 1000000LL
#define MT_PP_HIST_BINS 65536 /* exact frequencies of differences below this many ticks */

/* Everything the measurement needs; filled by option parsing. */
typedef struct mt_pp_cfg {
    int source, dest;        /* -1: default (0 and last rank) */
    int64_t ntrial;          /* timing trials per (msize, npp) */
    int64_t npp;             /* fixed npp, 0 = use the estimate */
    int64_t *npp_sweep;      /* several npp values (NULL: none) */
    int nsweep;
    int64_t npp_init, npptrial; /* npp estimation (section 3.3) */
    double res_npp;          /* accuracy factor (paper: 50) */
    int64_t max_pp;          /* cap ntrial so that ntrial * npp <= max_pp (0: none) */
    int64_t warmup;          /* untimed ping-pongs before each message size */
    int loop;                /* also run the loop-averaged method */
    int bidir;               /* also time bidirectional exchanges */
    int barrier_all;         /* the barrier per trial spans the whole job, not only the pair */
    int64_t loop_iters;      /* 0: OSU default (10000 up to 8 KiB, 1000 above) */
    int64_t loop_reps;       /* repetitions of the loop-averaged measurement */
    int one_buffer;          /* --buffers one: send and receive through one array (the paper's A);
                              * 0 (--buffers two, the default): a send and a receive buffer per rank,
                              * as OSU's osu_latency (s_buf, r_buf) */
} mt_pp_cfg_t;

/* ---- pure parts (no MPI; unit tested) ---- */

/* nint() of Fortran: nearest integer, halves away from zero. */
int64_t mt_pp_nint(double x);
/* npp = nint(max(1, res_npp * res_timing / median_ppt)), clamped to
 * [1, MT_PP_NPP_MAX]. A median_ppt <= 0 (the timer could not see npp_init
 * ping-pongs at all) gives MT_PP_NPP_MAX when res_timing > 0, else 1. */
int64_t mt_pp_npp_from(double res_npp, double res_timing_s, double median_ppt_s);
/* Median of n values (copies, does not reorder v); NaN when n == 0. */
double mt_pp_median(const double *v, int64_t n);
/* Check the configuration against the job size (after defaults are applied
 * with mt_pp_defaults). Returns MT_OK or MT_EINVAL with a one-line message. */
int mt_pp_validate(const mt_pp_cfg_t *c, int nprocs, char *err);
/* Apply the rank defaults: source 0, dest nprocs - 1. */
void mt_pp_defaults(mt_pp_cfg_t *c, int nprocs);
/* Ping-pongs in one loop-averaged measurement for a message size. */
int64_t mt_pp_loop_iters(const mt_pp_cfg_t *c, int64_t msize);
/* Trials for one (msize, npp) set: ntrial, capped by max_pp (at least 1). */
int64_t mt_pp_trials_for(const mt_pp_cfg_t *c, int64_t npp);

/* ---- the timer study (section 3.1, Appendix A) ---- */
typedef struct mt_pp_tstudy {
    int64_t n;               /* differences measured */
    int64_t res_ticks;       /* min positive difference, 0 if none */
    int64_t min_ov_ticks;    /* min non-negative difference */
    int64_t max_ticks;
    int64_t negative;        /* differences < 0 (a clock going back) */
    double sum_ticks, sumsq_ticks;
    double seconds;          /* wall time of the study */
    int64_t *hist;           /* hist[d] = count of difference d, d < MT_PP_HIST_BINS */
    int64_t *over;           /* the differences >= MT_PP_HIST_BINS, exactly (up to nover_cap) */
    int64_t nover, nover_cap, nover_dropped;
} mt_pp_tstudy_t;

/* n pairs t1 = now(); t2 = now(); d = t2 - t1 as in the paper. */
int mt_pp_timer_study(const mt_timer_inst_t *ti, int64_t n, mt_pp_tstudy_t *s, char *err);
void mt_pp_tstudy_free(mt_pp_tstudy_t *s);

/* ---- MPI parts ---- */

/* The two ranks of the ping-pong in their own communicator, so that the
 * barrier per trial involves only them and idle ranks can really idle. */
typedef struct mt_pp_pair {
    MPI_Comm world;          /* the job */
    MPI_Comm pair;           /* source and dest only; MPI_COMM_NULL elsewhere */
    MPI_Comm bar;            /* the barrier per trial: pair, or world with barrier_all */
    int role;                /* 0 source, 1 dest, -1 idle */
    int peer;                /* the other one's rank in pair */
    const mt_timer_inst_t *ti;
    unsigned char *sbuf;     /* send buffer, at least 8 bytes */
    unsigned char *rbuf;     /* receive buffer, as large; = sbuf with --buffers one */
    unsigned char *xbuf;     /* receive buffer of the bidirectional exchange (never sbuf: both are
                              * pending at once), = rbuf with --buffers two */
    int64_t buflen;
} mt_pp_pair_t;

int mt_pp_pair_init(mt_pp_pair_t *p, MPI_Comm world, const mt_pp_cfg_t *c, const mt_timer_inst_t *ti,
                    int64_t max_msize, char *err);
void mt_pp_pair_free(mt_pp_pair_t *p);

/* Barrier on world in which every rank sleeps between tests, so ranks that
 * wait (idle ranks, or the pair while the others finish) do not spin. */
void mt_pp_sleepy_barrier(MPI_Comm world);

/* An idle rank's part of ntrial trials with barrier_all: one barrier on world per trial. */
void mt_pp_idle_trials(mt_pp_pair_t *p, int64_t ntrial);

/* ntrial trials of npp bidirectional exchanges of msize bytes: per exchange both ranks post
 * MPI_Irecv and MPI_Isend and wait for both; barrier and hand-shake per trial as mt_pp_trials.
 * On the source, ticks[k] = t2 - t1 - min_ov_ticks. */
void mt_pp_bidir_trials(mt_pp_pair_t *p, int64_t msize, int64_t npp, int64_t ntrial, int64_t min_ov_ticks,
                        int64_t *ticks);

/* ntrial trials of npp ping-pongs of msize bytes (section 3.2 with the
 * hand-shake). On the source, ticks[k] = t2 - t1 - min_ov_ticks. Only the
 * pair calls this. */
void mt_pp_trials(mt_pp_pair_t *p, int64_t msize, int64_t npp, int64_t ntrial, int64_t min_ov_ticks,
                  int64_t *ticks);
/* Untimed ping-pongs. */
void mt_pp_warmup(mt_pp_pair_t *p, int64_t msize, int64_t n);
/* Loop-averaged (OSU osu_latency): barrier, `skip` untimed then `iters` timed
 * ping-pongs in one loop; on the source *ticks = loop time (no overhead
 * subtracted, as OSU). */
void mt_pp_loop(mt_pp_pair_t *p, int64_t msize, int64_t skip, int64_t iters, int64_t *ticks);

#endif
