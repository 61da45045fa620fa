/* mpitempo: MS2, loop-averaged (Intel MPI Benchmarks / mpptest style; Hunold
 * and Carpen-Amarie 2016, Table 3). One measurement = barrier, then `inner`
 * back-to-back calls timed together; local runtime = loop time / inner;
 * runtime = max over ranks. */
#include "scheme/scheme.h"

static int ms2_measure(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    const mt_inner_cfg_t *c = cfg;
    if (!(c->min_time_s > 0)) return mt_local_measure(ctx, op, a, m, c->inner, 0, err);
    int warm = ctx->warmup, decided = ctx->inner_used > 0;
    int calls = mt_inner_decide(ctx, c, op, a); /* warms up (and times) on the first block */
    if (!decided) ctx->warmup = 0;
    int rc = mt_local_measure(ctx, op, a, m, calls, 0, err);
    ctx->warmup = warm;
    return rc;
}

const mt_scheme_t mt_scheme_loop = {
    .name = "loop",
    .desc = "MS2: barrier, then a loop of --inner calls timed together; runtime = max over ranks of loop/inner",
    .params = mt_loop_params,
    .cfg_size = sizeof(mt_inner_cfg_t),
    .configure = mt_inner_configure,
    .measure = ms2_measure,
    .write_meta = mt_inner_write_meta,
    .few_valid_advice = "",
};
