/* mpitempo: MS1, barrier before every measurement (SKaMPI, OSU style).
 * runtime = max over ranks of the local runtime of each call. */
#include "scheme/scheme.h"

static int ms1_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    return mt_local_measure(ctx, op, a, m, 1, 0, err);
}

const mt_scheme_t mt_scheme_barrier = {
    "barrier", "MS1: MPI_Barrier before each call; runtime = max over ranks of local runtimes", 0,
    ms1_measure};
