/* mpitempo: MS2, loop-averaged (Intel MPI Benchmarks / mpptest style).
 * One measurement = barrier, then `inner` back-to-back calls timed together;
 * local runtime = loop time / inner; runtime = max over ranks. */
#include "cache.h"
#include "mt_common.h"
#include "scheme.h"

#include <stdlib.h>

static int ms2_measure(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    int n = ctx->nrep, inner = ctx->inner;
    int64_t *ticks = malloc(sizeof(int64_t) * (size_t)n);
    double *local = malloc(sizeof(double) * (size_t)n);
    if (!ticks || !local) {
        free(ticks);
        free(local);
        return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", n);
    }
    int64_t (*now)(void) = ctx->timer.t->now;
    int (*call)(mt_op_args_t *) = op->call;
    mt_warmup(ctx, op, a);
    for (int i = 0; i < n; i++) {
        MPI_Barrier(ctx->comm);
        int rc = MPI_SUCCESS;
        int64_t t0 = now();
        for (int j = 0; j < inner && rc == MPI_SUCCESS; j++) rc = call(a);
        int64_t t1 = now();
        if (rc != MPI_SUCCESS) mt_check_mpi(rc, op->mpi_name);
        ticks[i] = t1 - t0;
        mt_cache_next(ctx->cache, a);
    }
    for (int i = 0; i < n; i++) local[i] = mt_ticks_to_s(&ctx->timer, ticks[i]) / (double)inner;
    mt_reduce_max(ctx, local, m->runtime_s, n);
    if (ctx->rank == 0)
        for (int i = 0; i < n; i++) {
            m->local_max_s[i] = m->runtime_s[i];
            m->valid[i] = 1;
        }
    free(ticks);
    free(local);
    return MT_OK;
}

const mt_scheme_t mt_scheme_loop = {
    "loop", "MS2: barrier, then a loop of --inner calls timed together; runtime = max over ranks of loop/inner",
    0, ms2_measure};
