/* mpitempo: clock synchronisation algorithms (Hunold and Carpen-Amarie 2018,
 * sections III-IV; 2016, section 3.1). A sync algorithm takes a communicator and an input
 * clock and returns a clock: rank 0 of the communicator is the reference and
 * keeps its input clock; every other rank gets its input clock with one more
 * model on top. Algorithms are registered in sync.c (one file each); a
 * hierarchical configuration applies one algorithm per level (sync_hier.c).
 * The spec syntax is documented in docs/clocks.md. */
#ifndef MT_SYNC_H
#define MT_SYNC_H

#include <mpi.h>
#include <stdint.h>

#include "clock/clock.h"
#include "base/json.h"
#include "clock/offset.h"

enum { MT_SLOPE_AUTO = 0, MT_SLOPE_FIT = 1, MT_SLOPE_ZERO = 2 };

/* what the fit of one linear model decided */
enum { MT_SLOPE_NONE = -1, MT_SLOPE_DROPPED = 0, MT_SLOPE_KEPT = 1 };

/* parameter keys an algorithm accepts (bit mask) */
enum { MT_P_FITPTS = 1, MT_P_PP = 2, MT_P_OFFSET = 4, MT_P_RECOMPUTE = 8, MT_P_WINDOW = 16, MT_P_SLOPE = 32,
       MT_P_Z = 64, MT_P_TOL = 128, MT_P_FIT = 256,
       MT_P_RTT = 512 /* accepted wherever MT_P_OFFSET is, with offset=meanrtt only */,
       MT_P_CI = 1024 };

/* how the fit window of a linear model ended (mt_sync_stats_t.fit_stop) */
enum { MT_STOP_FIXED = 0, /* the whole window (ci=0, slope=fit/zero, fit=paper) */
       MT_STOP_CI = 1,    /* adaptive: the slope's interval z * SE reached ci */
       MT_STOP_MAX = 2 }; /* adaptive: the window's end came first */
/* adaptive fit window (ci > 0, slope=auto): the stopping rule is looked at
 * once the fit points span at least this fraction of window (and >= 8 points) */
#define MT_ADAPT_MIN_FRAC 0.4
#define MT_ADAPT_MIN_PTS 8
/* a slope kept in one adaptive window (no confirming second window) must be at
 * least this many times ci (10 x 0.1 ppm = 1 ppm); smaller ones are confirmed */
#define MT_ADAPT_KEEP_CI 10
/* ci=auto (the default of jk, hca, hca2, hca3): the adaptive window's interval is
 * MT_CI_AUTO_PPM divided by the number of models one rank's clock composes in
 * that sync (ceil(log2 P) for the tree algorithms, 1 for JK), so that their
 * slope errors together stay within MT_CI_AUTO_PPM (1 us after 10 s) */
#define MT_CI_AUTO (-1.0)
#define MT_CI_AUTO_PPM 0.1

/* how the slope is fitted */
/* MT_FIT_PAPER: LEARN_CLOCK_MODEL exactly as Hunold and Carpen-Amarie 2018 (Alg. 2) specify it:
 * no warm-up, consecutive fit points, least squares over all points, no outlier refit, slope kept */
enum { MT_FIT_TS = 0, MT_FIT_OLS = 1, MT_FIT_PAPER = 2 };

typedef struct mt_sync_params {
    int fitpts;                    /* fit points per linear model (>= 2) */
    int pp;                        /* ping-pongs per offset measurement (>= 1) */
    const mt_offset_alg_t *offset; /* offset algorithm */
    int recompute;                 /* HCA3/Alg. 2: recompute the intercept after the fit */
    double window_s;               /* fit points are spread over at least this time span */
    int slope;                     /* MT_SLOPE_AUTO (keep if |slope| > z * SE), FIT (always), ZERO (never) */
    double z;                      /* significance threshold of MT_SLOPE_AUTO */
    double tol_s;                  /* prop: tolerance of the same-time-source check */
    int fit;                       /* MT_FIT_TS (RTT filter + Theil-Sen, default) or MT_FIT_OLS (Alg. 2) */
    int rtt;                       /* offset=meanrtt: MT_RTT_MEDIAN (default) or MT_RTT_MEAN (fit=paper) */
    double ci_ppm;                 /* slope=auto: end the fit window once z * SE(slope) <= ci_ppm (ppm);
                                    * 0: always the whole window; MT_CI_AUTO: mt_sync_ci_for
                                    * (docs/clocks.md, adaptive fit window) */
} mt_sync_params_t;

/* What one rank did during a sync (reported per rank by mpitempo-clocks). */
typedef struct mt_sync_stats {
    int64_t msgs_sent;   /* point-to-point messages sent by this rank */
    int learn_ref;       /* LEARN_CLOCK_MODEL calls as the reference */
    int learn_client;    /* ... as the client */
    int offsets;         /* offset measurements taken part in */
    int slope_state;     /* MT_SLOPE_NONE / DROPPED / KEPT for the last model this rank learned */
    double fit_slope;    /* the fitted slope before the decision */
    double fit_slope_se; /* its standard error */
    double fit_window_s; /* time span covered by the fit points */
    int fit_dropped;     /* fit points rejected (slow round trips, outliers) */
    int slope_windows;   /* slope=auto: fit windows measured (1, 2 to confirm, 3 to break a tie); 0 otherwise */
    int rtt_measured;    /* Mean-RTT-Offset measurements of this rank as the client */
    int rtt_preempted;   /* ... of them whose spread exceeded MT_MEANRTT_TOL_S: preempted round trips */
    double spread_sum_s; /* the sum of their spreads */
    double spread_max_s; /* the largest spread */
    int fit_points;      /* fit points in the final fit (after the RTT filter and the outlier refit) */
    double fit_ci_ppm;   /* half-width z * SE(slope) of the slope's interval reached by the final fit (ppm) */
    int fit_stop;        /* MT_STOP_FIXED / CI / MAX: how the first fit window ended */
    int slope_unresolved; /* set by mt_sync_at_horizon: drift_unc x horizon > MT_SYNC_ACCURACY_S: the
                           * clock may drift away from the reference past the stated accuracy before
                           * the run's last measurement, unseen */
    int ref_below;       /* the clock this rank's model was learned against (its reference's, and
                          * theirs up the tree or hierarchy) was below its stated accuracy: its error
                          * is in this rank's clock too */
    int prior_below;     /* hierarchy: the clock this level starts from (the levels before) was below its
                          * stated accuracy; passed on to the clients of this level, not reported */
    double drift_unc;    /* how far this rank's own models may still drift from their references (s/s):
                          * a kept slope z * SE of its final fit + the windows' disagreement
                          * (mt_window_disagreement), an offset-only model |slope| + the same (summed over
                          * the models this rank learned as a client) */
    double drift_unc_ref; /* the same of the clock this rank's models were learned against (its reference's,
                           * and theirs up the tree or hierarchy): inherited, summed */
    int refits;          /* slope=auto: extra fit windows measured because the drift was not known well
                          * enough for MT_HORIZON_PLAN_S (capped at MT_REFIT_MAX per model) */
} mt_sync_stats_t;

/* the accuracy a synchronised clock states: a rank further off than this at the end of a run (or a
 * rank whose drift uncertainty times the horizon exceeds it) is flagged (summary: sync_inaccurate;
 * python/mpitempo/analysis/flags.py SYNC_ACCURACY_S is the same number) */
#define MT_SYNC_ACCURACY_S 2e-6
/* the horizon (s) a sync plans for: slope=auto measures more fit windows (MT_REFIT_MAX at most)
 * while drift_unc x MT_HORIZON_PLAN_S > MT_SYNC_ACCURACY_S (0.4 ppm); the flag itself uses the
 * horizon a run really had (mt_sync_at_horizon) */
#define MT_HORIZON_PLAN_S 5.0
#define MT_REFIT_MAX 2
/* horizons shorter than this count as this long in the drift bound (the checks themselves take ms) */
#define MT_HORIZON_MIN_S 1.0
/* the drift bound (s/s) for a horizon: MT_SYNC_ACCURACY_S / max(horizon, MT_HORIZON_MIN_S) */
double mt_drift_bound(double horizon_s);
/* after the sync, once the horizon (sync -> last measurement, s) is known: slope_unresolved when the
 * rank's own drift_unc x horizon exceeds MT_SYNC_ACCURACY_S, ref_below when the inherited one does
 * (when only their sum does, the larger part) */
void mt_sync_at_horizon(mt_sync_stats_t *st, double horizon_s);
/* 1 when the clock this rank got from the sync is below its stated accuracy: its own Mean-RTT
 * measurements were preempted, its slope was dropped unresolved, or it inherited either from its
 * reference (docs/clocks.md, "The flag") */
int mt_sync_below_accuracy(const mt_sync_stats_t *st);
/* the drift uncertainty of one model (s/s): kept = 1 for a linear model with that slope (ci_half),
 * 0 for an offset-only model after a fit with that slope (|slope| + ci_half); ci_half = z * SE */
double mt_drift_unc(int kept, double slope, double ci_half);
/* the fit windows one model may measure: the first (or the adaptive one), up to two to confirm or break a
 * tie, MT_REFIT_MAX refits */
#define MT_WINDOWS_MAX (3 + MT_REFIT_MAX)
/* How far the windows of one model disagree with the slope fitted over all of them (s/s): the largest
 * |slope of window i alone - slope| over the nw windows (points wstart[i] .. wstart[i] + wlen[i] - 1 of
 * x, y, rtt; each fitted as p fits; windows of fewer than 4 points are left out); 0 for one window.
 * Each window's slope is an independent estimate of the drift; where the offsets wander across windows
 * (a loaded machine: the level shifts between windows, each window's points lie on a line), the fit over
 * all windows takes the shift for drift, and its own interval z * SE does not see it. The drift
 * uncertainty a model states is z * SE plus this (docs/clocks.md, "Wander across windows"). */
double mt_window_disagreement(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt,
                              const int *wstart, const int *wlen, int nw, double slope);
/* pure part of slope_unresolved: mt_drift_unc(...) x max(horizon_s, MT_HORIZON_MIN_S) > MT_SYNC_ACCURACY_S */
int mt_slope_unresolved(int kept, double slope, double ci_half, double horizon_s);

/* One sync call on one communicator. */
typedef struct mt_sync_env {
    mt_pp_t pp;
    const mt_sync_params_t *p;
    mt_sync_stats_t *st;
} mt_sync_env_t;

typedef struct mt_sync_alg {
    const char *name;
    const char *desc;
    unsigned keys;              /* MT_P_* accepted in the spec */
    mt_sync_params_t defaults;  /* offset == NULL means skampi */
    int (*sync)(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err);
    /* non-NULL: only the last algorithm of a hierarchical spec may be this one;
     * the reason, for the error message */
    const char *innermost_only;
    /* 1: a rank's clock composes up to ceil(log2 P) models (nested or merged
     * down a tree; ci=auto divides its interval by that), 0: one model */
    int tree;
} mt_sync_alg_t;

extern const mt_sync_alg_t *const mt_sync_algs[];
extern const int mt_nsync_algs;
const mt_sync_alg_t *mt_sync_find(const char *name);
/* the adaptive window's interval (ppm) of a sync with these parameters on a
 * communicator of `size` ranks: ci_ppm as given, or for MT_CI_AUTO
 * MT_CI_AUTO_PPM / (models composed: ceil(log2 size) for a tree, else 1) */
double mt_sync_ci_for(const mt_sync_alg_t *a, const mt_sync_params_t *p, int size);
void mt_sync_names(char *buf, size_t len);


/* ---- specs ---- */
#define MT_SYNC_MAXLEVELS 4
enum { MT_LEVEL_NODE = 1, MT_LEVEL_SOCKET, MT_LEVEL_BLOCK, MT_LEVEL_ENV };

typedef struct mt_level {
    int kind;
    int block;       /* MT_LEVEL_BLOCK: ranks r / block (within the enclosing group) share a group */
    char env[64];    /* MT_LEVEL_ENV: integer colour from this environment variable */
} mt_level_t;

typedef struct mt_sync_spec {
    int none;                               /* "none": no synchronisation */
    int nlevels;                            /* 0: flat */
    mt_level_t level[MT_SYNC_MAXLEVELS];
    const mt_sync_alg_t *alg[MT_SYNC_MAXLEVELS + 1];
    mt_sync_params_t params[MT_SYNC_MAXLEVELS + 1];
    unsigned given[MT_SYNC_MAXLEVELS + 1];  /* keys set explicitly */
} mt_sync_spec_t;

/* Parse a spec (pure). Errors are one line naming the bad part. */
int mt_sync_spec_parse(const char *s, mt_sync_spec_t *out, char *err);
/* Canonical form with every parameter spelled out, e.g.
 * "hca3:fitpts=50,pp=20,offset=skampi,recompute=1,window=0.25,slope=auto,z=4". */
void mt_sync_spec_format(const mt_sync_spec_t *s, char *buf, size_t len);
/* Split a comma-separated list of specs: an item of the form key=value (no ':'
 * and no '/' before the '=') continues the previous spec, so
 * "hca3:fitpts=20,pp=10,jk" is two specs. Allocates like mt_split_list. */
int mt_sync_spec_split(const char *list, char ***items, int *n, char *err);

/* ---- running ---- */
typedef struct mt_sync_result {
    mt_clock_t clock;         /* the global clock of this rank */
    double duration_s;        /* local wall time of the sync on this rank */
    mt_sync_stats_t st;       /* summed over levels */
    int nlevels_run;
} mt_sync_result_t;

/* Collective over comm. Returns MT_OK, or an error (the same on all ranks:
 * e.g. ClockPropSync across different time sources). lazy: ranks share CPUs
 * (an oversubscribed job): ranks that wait sleep instead of spinning. */
int mt_sync_run(const mt_sync_spec_t *spec, MPI_Comm comm, const mt_clock_t *in, int lazy, mt_sync_result_t *res,
                char *err);
/* One algorithm on one communicator (used by mt_sync_run and the hierarchy). */
int mt_sync_one(const mt_sync_alg_t *alg, const mt_sync_params_t *p, MPI_Comm comm, const mt_clock_t *in, int lazy,
                mt_clock_t *out, mt_sync_stats_t *st, char *err);

/* ---- building blocks shared by the algorithms (sync_learn.c) ---- */
/* LEARN_CLOCK_MODEL (Alg. 2) between ref and client reading clk; the client
 * gets the model of clk against ref's clock in *lm (others: zero model). */
void mt_learn_clock_model(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, mt_model_t *lm);
/* one offset measurement through the configured offset algorithm */
void mt_sync_measure(mt_sync_env_t *e, const mt_clock_t *clk, int ref, int client, mt_offset_res_t *o);
double mt_median(const double *v, int n);
/* Theil-Sen: the median of the pairwise slopes in *est (may be NULL) and
 * Kendall's interval at z in [*lo, *hi] */
int mt_theil_sen_ci(const double *x, const double *y, int n, double z, double *lo, double *hi, double *est);
/* Fit points slower than this are dropped by fit=ts (see sync_learn.c):
 * rtt > MT_RTT_FILTER_F * min rtt + MT_RTT_FILTER_ADD_S, when at least a
 * quarter of the points (and >= 6) remain. */
#define MT_RTT_FILTER_F 1.5
#define MT_RTT_FILTER_ADD_S 0.5e-6
/* Decide on a fitted model: slope kept or dropped (params), intercept chosen.
 * rtt (the smallest round trip of each fit point) may be NULL. */
void mt_fit_decide(const mt_sync_params_t *p, const double *x, const double *y, const double *rtt, int n,
                   mt_model_t *lm, mt_sync_stats_t *st);

/* the inverted binomial tree of HCA and HCA2 (sync_hca_tree.c), collective: rank 0 gets every
 * rank's model against itself and scatters them; *mine is this rank's model against rank 0. A model
 * that went through one below its stated accuracy on the way up (its error is inherited) sets
 * e->st->ref_below. */
int mt_hca_tree(mt_sync_env_t *e, const mt_clock_t *in, mt_model_t *mine, char *err);

/* ---- time source check (sync_prop.c) ----
 * Collective over comm: 1 when every rank's base clock reads the same time as
 * rank 0's within tol (checked causally with ping-pongs on the raw base clock)
 * and the simulation settings are equal; 0 otherwise, with the worst rank and
 * its distance in *bad_rank / *bad_s. */
int mt_same_time_source(MPI_Comm comm, const mt_baseclock_t *b, double tol, int *bad_rank, double *bad_s);

/* ---- accuracy check (Alg. 6, sync_check.c) ---- */
/* each checked offset is the one with the fastest round trip of this many
 * measurements (each of npp ping-pongs), this far apart */
#define MT_CHECK_TRIES 5
#define MT_CHECK_GAP_S 5e-3
typedef struct mt_check {
    int nwait;
    double *wait_s;      /* ascending, >= 0 */
    int nsample;         /* ranks checked (all but the root when sampling is off) */
    int *sample;         /* their ranks */
    double *offset_s;    /* [nwait][nsample]: client global - root global, on rank 0 */
} mt_check_t;
/* Measure the offset of each sampled rank to rank 0 on clock g right away and
 * after each wait time (measured on rank 0's global clock from the start).
 * sample_n <= 0 checks every rank; otherwise a seeded random sample of that
 * many ranks. Collective over comm. */
int mt_check_run(MPI_Comm comm, const mt_clock_t *g, const mt_offset_alg_t *oalg, int npp, const double *wait_s,
                 int nwait, int sample_n, uint64_t seed, int lazy, mt_check_t *out, char *err);
/* the same with tries measurements per rank gap_s apart (mt_check_run: MT_CHECK_TRIES, MT_CHECK_GAP_S); with
 * budget_s > 0 rank 0 ends a rank's tries (after the first) when the next would take the rank past its share
 * budget_s / ranks checked (one message per further try tells the client) */
int mt_check_run_ex(MPI_Comm comm, const mt_clock_t *g, const mt_offset_alg_t *oalg, int npp, const double *wait_s,
                    int nwait, int sample_n, uint64_t seed, int lazy, int tries, double gap_s, double budget_s,
                    mt_check_t *out, char *err);
/* the budget of a check sized to a run of run_s: max(1% of it, MT_CHECK_BUDGET_MIN_S) */
double mt_check_budget_for(double run_s);
/* the gap between the tries of an end-of-run check on nprocs ranks that may cost about 1% of run_s:
 * within [MT_CHECK_GAP_MIN_S, MT_CHECK_GAP_S] */
#define MT_CHECK_GAP_MIN_S 0.5e-3
double mt_check_gap_for(double run_s, int nprocs);
/* the tries per rank (1 .. MT_CHECK_TRIES) such a check may take when one try of one rank costs try_s
 * (measured) plus gap_s: within max(1% of run_s, MT_CHECK_BUDGET_MIN_S) */
#define MT_CHECK_BUDGET_MIN_S 5e-3
int mt_check_tries_for(double run_s, int nprocs, double try_s, double gap_s);
/* the ping-pongs per try (MT_CHECK_PP_MIN .. pp) when even one try of pp ping-pongs per rank (try_s)
 * exceeds that budget (a loaded machine: round trips of 100 us and more) */
#define MT_CHECK_PP_MIN 20
int mt_check_pp_for(double run_s, int nprocs, double try_s, int pp);
void mt_check_free(mt_check_t *c);
/* max and median |offset| over the sample for wait index w (rank 0) */
void mt_check_summary(const mt_check_t *c, int w, double *max_abs, double *median_abs);

/* meta.json "clock" section body (keys written into an open object): spec,
 * parameters, duration and quality (chk may be NULL); sim holds every rank's
 * simulation settings (NULL when the simulation is off). */
void mt_sync_write_json(mt_json_t *j, const mt_sync_spec_t *spec, const mt_baseclock_t *b, double duration_s,
                        const mt_check_t *chk, int nprocs, const double *sim);
/* mpitempo-bench --resync-age (sync_resync.c). Collective; call only between
 * timed regions. Rank 0 decides on the raw base clock b whether the model is
 * older than max_age_s (age counted from *t_synced, base-clock seconds) and
 * broadcasts; when it is, the spec runs again into *res (the global clock is
 * replaced in place), *t_synced is updated and *did set. */
int mt_sync_resync_if_old(const mt_sync_spec_t *spec, MPI_Comm comm, const mt_baseclock_t *b, int lazy,
                          double max_age_s, double *t_synced, mt_sync_result_t *res, int *did, char *err);
/* gather every rank's slope decision to rank 0 (states: nprocs ints on rank 0) */
int mt_sync_gather_slopes(MPI_Comm comm, const mt_sync_result_t *res, int *states);
/* "slope_per_rank": ["none", "kept", "dropped", ...] */
void mt_sync_write_slopes(mt_json_t *j, const int *states, int n);
/* JSON object of the simulation settings of every rank (sim: offset_s, drift
 * pairs per rank), or false when sim is NULL */
void mt_sim_write_json(mt_json_t *j, int nprocs, const double *sim);

#endif
