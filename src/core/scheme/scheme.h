/* mpitempo: measurement schemes (paper 001, Table 3). A scheme runs the
 * measurements of one experiment and leaves the results on rank 0. Schemes
 * are registered in scheme.c; a new scheme is a new file plus one line. */
#ifndef MT_SCHEME_H
#define MT_SCHEME_H

#include "scheme/ctx.h"
#include "op/op.h"

typedef struct mt_scheme {
    const char *name;
    const char *desc;
    int needs_global_clock;
    int (*measure)(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err);
} mt_scheme_t;

extern const mt_scheme_t *const mt_schemes[];
extern const int mt_nschemes;
const mt_scheme_t *mt_scheme_find(const char *name);
void mt_scheme_names(char *buf, size_t len);

/* shared by schemes: untimed warm-up calls followed by a barrier */
void mt_warmup(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a);
/* reduce per-rank local runtimes (seconds) to their max on rank 0 */
void mt_reduce_max(mt_ctx_t *ctx, const double *local, double *out, int n);

/* the shared loop of the local-timer schemes MS1-MS3 (scheme_local.c) */
int mt_local_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, int calls, int barrier_each,
                     char *err);

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

extern const mt_scheme_t mt_scheme_barrier, mt_scheme_loop, mt_scheme_barrier_loop, mt_scheme_window,
    mt_scheme_roundtime;

#endif
