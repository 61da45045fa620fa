/* mpitempo: MS3, barrier-in-loop (Phloem MPI Benchmarks style, paper 001 Table 3).
 * One measurement = barrier, t0, `inner` x (call; MPI_Barrier), t1; local runtime
 * = (t1 - t0) / inner, which includes one barrier per call by design;
 * runtime = max over ranks. */
#include "scheme/scheme.h"

static int ms3_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    return mt_local_measure(ctx, op, a, m, ctx->inner, 1, err);
}

const mt_scheme_t mt_scheme_barrier_loop = {
    "barrier_loop",
    "MS3: barrier, then --inner x (call; MPI_Barrier) timed together; runtime = max over ranks of loop/inner", 0,
    ms3_measure};
