/* mpitempo: measurement schemes (paper 001, Table 3). A scheme runs the
 * measurements of one experiment and leaves the results on rank 0. Schemes
 * are registered in scheme.c; a new scheme is a new file plus one line. */
#ifndef MT_SCHEME_H
#define MT_SCHEME_H

#include "ctx.h"
#include "op.h"

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

extern const mt_scheme_t mt_scheme_barrier, mt_scheme_loop, mt_scheme_barrier_loop;

#endif
