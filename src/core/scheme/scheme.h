/* mpitempo: measurement schemes (Hunold and Carpen-Amarie 2016, Table 3;
 * Round-Time: Hunold and Carpen-Amarie 2018, Alg. 5). A scheme runs the
 * measurements of one experiment and leaves the results on rank 0. Each
 * scheme describes itself: the parameters it reads into its private
 * configuration, its meta.json keys, its advice when too few measurements are
 * valid and its notes. A new scheme is a new file plus one line in scheme.c. */
#ifndef MT_SCHEME_H
#define MT_SCHEME_H

#include <stddef.h>

#include "base/json.h"
#include "base/params.h"
#include "op/op.h"
#include "scheme/ctx.h"

typedef struct mt_scheme {
    const char *name;
    const char *desc;
    int needs_global_clock;
    /* ranks wait for the next measurement outside MPI (busy-waiting on the
     * clock): ops whose progress needs the other side inside MPI (passive
     * one-sided sync on windows that are not shared memory) cannot be timed */
    int waits_outside_mpi;
    const int *params;        /* the parameters it reads (MTP_*), ending with -1 */
    size_t cfg_size;          /* bytes of its private configuration (0: none) */
    /* read and check its parameters into cfg (cfg_size zeroed bytes); NULL: nothing to read */
    int (*configure)(const mt_params_t *p, void *cfg, char *err);
    int (*measure)(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err);
    /* its keys of meta.json's "scheme" object (may be NULL) */
    void (*write_meta)(mt_json_t *j, const void *cfg, const mt_ctx_t *ctx);
    /* its keys of one experiment in meta.json's "experiments" (may be NULL) */
    void (*write_exp_meta)(mt_json_t *j, const mt_meas_info_t *m);
    /* appended to "only K of N measurements are valid", e.g. "; try a larger --window" */
    const char *few_valid_advice;
    /* a note on an experiment for stderr, e.g. a window that lost measurements:
     * 1 with the text in buf, 0 for none (may be NULL) */
    int (*exp_note)(const void *cfg, const mt_meas_info_t *m, int nvalid, int n, char *buf, size_t len);
} mt_scheme_t;

extern const mt_scheme_t *const mt_schemes[];
extern const int mt_nschemes;
const mt_scheme_t *mt_scheme_find(const char *name);
void mt_scheme_names(char *buf, size_t len);
/* --list: the "schemes" key (name, desc, needs_global_clock, params) */
void mt_scheme_write_list(mt_json_t *j);
/* the names of the schemes that time on the global clock, e.g. "window, roundtime" */
void mt_scheme_clock_names(char *buf, size_t len);

/* A scheme with its configuration, ready to measure. */
typedef struct mt_scheme_inst {
    const mt_scheme_t *s;
    void *cfg;
} mt_scheme_inst_t;
/* find name (error names the allowed ones) and configure it from p */
int mt_scheme_open(const char *name, const mt_params_t *p, mt_scheme_inst_t *si, char *err);
void mt_scheme_close(mt_scheme_inst_t *si);
/* A parameter that only other schemes read (--window with scheme barrier, --inner with window),
 * given with a value other than its default, is a mistake, not a factor: MT_EINVAL naming the
 * flag and the schemes it applies to. A default passed explicitly (as an orchestrator passes
 * every value) is not a mistake. */
int mt_scheme_check_params(const mt_scheme_t *s, const mt_params_t *p, char *err);

/* ---- warm-up (warmup.c) ----
 * shared by schemes: untimed warm-up calls followed by a barrier. ctx->warmup calls, or with
 * ctx->warmup == MT_WARMUP_AUTO until the steady-state test below stops (the same call on every
 * rank); adds the calls made to ctx->warmup_calls and sets ctx->warmup_capped when the cap
 * stopped it. Collective. */
void mt_warmup(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a);
/* --warmup-max-time: of a fixed warm-up of `warmup` calls, how many fit in max_s when a call takes
 * call_s (the slowest rank's faster of the first two): min(warmup, max(2, floor(max_s / call_s)));
 * warmup when it is 2 or less, max_s <= 0 or call_s unknown. Pure. */
int mt_warmup_fit(int warmup, double max_s, double call_s);
/* The steady-state test of --warmup auto (docs/methods.md#warm-up): the warm-up calls are taken
 * in windows of MT_WARMUP_WINDOW; each window gives one number (the largest over ranks of the
 * ranks' median call time); the warm-up is steady once MT_WARMUP_AGREE consecutive windows each
 * differ from the one before by less than MT_WARMUP_REL_TOL (relative) or by less than
 * MT_WARMUP_ABS_TOL_S (about one timer read: what a timed call cannot resolve), so at least
 * (MT_WARMUP_AGREE + 1) windows are run; it stops at MT_WARMUP_CAP calls without a steady state
 * (capped: the experiment is flagged). */
#define MT_WARMUP_AUTO (-1)
#define MT_WARMUP_WINDOW 20
#define MT_WARMUP_REL_TOL 0.05
#define MT_WARMUP_ABS_TOL_S 20e-9
#define MT_WARMUP_AGREE 2
#define MT_WARMUP_CAP 2000
typedef struct mt_steady {
    double prev;      /* the previous window's number (NaN before the first) */
    double last_rel;  /* relative change of the last window */
    int windows, calls, agree;
    int done, capped;
} mt_steady_t;
void mt_steady_init(mt_steady_t *s);
/* feed one window's number; 1 when the warm-up is over (steady, or capped) */
int mt_steady_feed(mt_steady_t *s, double window_median);
/* pure: the test on one sequence of call times (medians of consecutive windows): the calls it
 * takes (a multiple of MT_WARMUP_WINDOW), or -1 when the sequence ends first; *capped as above */
int mt_steady_detect(const double *t, int n, int *capped);
/* with ctx->want_timestamps: gather every rank's start/end times (seconds) of n
 * measurements into m->ts_start/ts_end on rank 0 (rank-major). Collective. */
void mt_gather_times(mt_ctx_t *ctx, const double *ls, const double *le, int n, mt_meas_t *m);
/* reduce per-rank local runtimes (seconds) to their max on rank 0 */
void mt_reduce_max(mt_ctx_t *ctx, const double *local, double *out, int n);

/* ---- local-timer schemes MS1-MS3 (scheme_local.c) ---- */
/* the shared measuring loop */
int mt_local_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, int calls, int barrier_each,
                     char *err);
/* loop and barrier_loop: --inner calls per measurement */
typedef struct mt_inner_cfg {
    int inner;
    double min_time_s; /* loop: --inner-min-time (0: off) */
} mt_inner_cfg_t;
extern const int mt_inner_params[];
extern const int mt_loop_params[]; /* mt_inner_params and --inner-min-time */
/* loop with --inner-min-time: the calls per measurement of this experiment, decided once (the first
 * block): the warm-up, then MT_INNER_PROBES calls timed one by one (counted as warm-up); call = the
 * slowest rank's fastest probe; min(inner, max(1, ceil(min_time / call))); ctx->inner_used. Collective. */
#define MT_INNER_PROBES 2
int mt_inner_decide(mt_ctx_t *ctx, const mt_inner_cfg_t *cfg, const mt_op_t *op, mt_op_args_t *a);
int mt_inner_configure(const mt_params_t *p, void *cfg, char *err);
void mt_inner_write_meta(mt_json_t *j, const void *cfg, const mt_ctx_t *ctx);
/* --barrier-skew "R:T" -> rank and seconds; np > 0 also checks the rank against the job */
int mt_barrier_skew_parse(const char *s, int np, int *rank, double *t, char *err);

/* the cache policy's step between two measurements (cache.h), via the context */
void mt_cache_next_any(mt_ctx_t *ctx, mt_op_args_t *a);

/* ---- clock-based schemes (scheme_global.c) ---- */
/* Estimated latency of MPI_Bcast of one double (loop-averaged, max over ranks,
 * the same on every rank). */
double mt_bcast_latency(mt_ctx_t *ctx);
/* Busy-wait on the global clock until t; returns 1 if t had already passed at
 * the first look (the caller is late), 0 otherwise. With yield (oversubscribed
 * jobs) the CPU is given up while more than 50 us remain, so that the ranks
 * sharing it can reach the start time too. */
int mt_wait_until(const mt_clock_t *g, double t, int yield);
/* Same, returning how late the caller was (0 if on time). */
double mt_wait_until_late(const mt_clock_t *g, double t, int yield);
/* From each rank's global start/end times and late flags of n measurements:
 * runtime = max(end) - min(start), local_max = max(end - start), valid = no
 * rank late; per-rank timestamps gathered when ctx->want_timestamps. The
 * result goes to m on rank 0 (m is reallocated for n). Collective. */
int mt_global_finish(mt_ctx_t *ctx, const double *ls, const double *le, const int *late, int n, mt_meas_t *m,
                     char *err);
/* the per-experiment keys every clock-based scheme writes: bcast_latency_s, elapsed_s */
void mt_global_write_exp_meta(mt_json_t *j, const mt_meas_info_t *m);

#endif
