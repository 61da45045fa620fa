/* mpitempo: scheme registry and helpers shared by the schemes. */
#include "scheme/scheme.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const mt_scheme_t *const mt_schemes[] = {&mt_scheme_barrier, &mt_scheme_loop, &mt_scheme_barrier_loop,
                                         &mt_scheme_window, &mt_scheme_roundtime};
const int mt_nschemes = (int)(sizeof(mt_schemes) / sizeof(mt_schemes[0]));

const mt_scheme_t *mt_scheme_find(const char *name)
{
    for (int i = 0; i < mt_nschemes; i++)
        if (strcmp(mt_schemes[i]->name, name) == 0) return mt_schemes[i];
    return NULL;
}

void mt_scheme_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_nschemes; i++) {
        if (i) strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, mt_schemes[i]->name, len - strlen(buf) - 1);
    }
}

int mt_meas_alloc(mt_meas_t *m, int n)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->runtime_s = calloc((size_t)n, sizeof(double));
    m->local_max_s = calloc((size_t)n, sizeof(double));
    m->valid = calloc((size_t)n, sizeof(int));
    if (!m->runtime_s || !m->local_max_s || !m->valid) {
        mt_meas_free(m);
        return MT_ENOMEM;
    }
    return MT_OK;
}

void mt_meas_free(mt_meas_t *m)
{
    free(m->runtime_s);
    free(m->local_max_s);
    free(m->valid);
    free(m->ts_start);
    free(m->ts_end);
    m->runtime_s = m->local_max_s = NULL;
    m->ts_start = m->ts_end = NULL;
    m->valid = NULL;
}

int mt_meas_realloc(mt_meas_t *m, int n)
{
    mt_meas_free(m);
    return mt_meas_alloc(m, n);
}

void mt_warmup(mt_ctx_t *ctx, const mt_op_t *op, mt_op_args_t *a)
{
    for (int i = 0; i < ctx->warmup; i++) mt_check_mpi(op->call(a), op->mpi_name);
    mt_check_mpi(MPI_Barrier(ctx->comm), "MPI_Barrier");
}

void mt_reduce_max(mt_ctx_t *ctx, const double *local, double *out, int n)
{
    mt_check_mpi(MPI_Reduce(local, out, n, MPI_DOUBLE, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
}
