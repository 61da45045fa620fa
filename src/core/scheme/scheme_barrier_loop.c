/* mpitempo: MS3, barrier-in-loop (Phloem MPI Benchmarks style; Hunold and
 * Carpen-Amarie 2016, Table 3). One measurement = barrier, t0, `inner` x
 * (call; MPI_Barrier), t1; local runtime = (t1 - t0) / inner, which includes
 * one barrier per call by design; runtime = max over ranks. */
#include "scheme/scheme.h"

static int ms3_measure(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    return mt_local_measure(ctx, op, a, m, ((const mt_inner_cfg_t *)cfg)->inner, 1, err);
}

const mt_scheme_t mt_scheme_barrier_loop = {
    .name = "barrier_loop",
    .desc = "MS3: barrier, then --inner x (call; MPI_Barrier) timed together; runtime = max over ranks of loop/inner",
    .params = mt_inner_params,
    .cfg_size = sizeof(mt_inner_cfg_t),
    .configure = mt_inner_configure,
    .measure = ms3_measure,
    .write_meta = mt_inner_write_meta,
    .few_valid_advice = "",
};
