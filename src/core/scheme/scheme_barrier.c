/* mpitempo: MS1, barrier before every measurement (SKaMPI, OSU style;
 * Hunold and Carpen-Amarie 2016, Table 3). runtime = max over ranks of the
 * local runtime of each call. */
#include "scheme/scheme.h"

static int ms1_measure(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    (void)cfg;
    return mt_local_measure(ctx, op, a, m, 1, 0, err);
}

static const int ms1_params[] = {-1};

const mt_scheme_t mt_scheme_barrier = {
    .name = "barrier",
    .desc = "MS1: MPI_Barrier before each call; runtime = max over ranks of local runtimes",
    .params = ms1_params,
    .measure = ms1_measure,
    .few_valid_advice = "",
};
