/* mpitempo: MS2, loop-averaged (Intel MPI Benchmarks / mpptest style).
 * One measurement = barrier, then `inner` back-to-back calls timed together;
 * local runtime = loop time / inner; runtime = max over ranks. */
#include "scheme/scheme.h"

static int ms2_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    return mt_local_measure(ctx, op, a, m, ctx->inner, 0, err);
}

const mt_scheme_t mt_scheme_loop = {
    "loop", "MS2: barrier, then a loop of --inner calls timed together; runtime = max over ranks of loop/inner",
    0, ms2_measure};
