/* mpitempo: the experiments of a run: every op x every message size (see op.h). */
#define _GNU_SOURCE
#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "op/op.h"

#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int mt_exp_build(const char *ops, const char *msizes, int nprocs, mt_exp_t **out, int *nexp, char *err)
{
    char **names;
    int nn, rc;
    *out = NULL;
    *nexp = 0;
    char why[MT_ERRLEN];
    if ((rc = mt_split_list(ops, &names, &nn, why)) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid --ops '%s': %s", ops, why);
    int64_t *sizes = NULL;
    int ns = 0;
    if ((rc = mt_parse_size_list_ex(msizes, 1, &sizes, &ns, err)) != MT_OK) { /* 0 B: count 0, as MPI allows */
        mt_free_list(names, nn);
        return rc;
    }
    for (int i = 0; i < ns; i++) /* a size given twice would be measured twice and pooled */
        for (int j = 0; j < i; j++)
            if (sizes[i] == sizes[j]) {
                long long twice = (long long)sizes[i]; /* read before the list is freed */
                free(sizes);
                mt_free_list(names, nn);
                return mt_fail(err, MT_EINVAL, "invalid --msizes '%s': %lld B is listed twice (each size once; more "
                               "measurements with --nrep)", msizes, twice);
            }
    mt_exp_t *e = malloc(sizeof(mt_exp_t) * (size_t)(nn * ns + 1));
    int k = 0;
    if (!e) {
        rc = mt_fail(err, MT_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nn; i++) {
        const mt_op_t *op = mt_op_lookup(names[i], why);
        if (!op) {
            rc = mt_fail(err, MT_EINVAL, "%s", why);
            goto fail;
        }
        if (nprocs > 0 && nprocs < op->min_procs) {
            rc = mt_fail(err, MT_EINVAL, "op '%s' needs at least %d ranks, but the job has %d", op->name,
                         op->min_procs, nprocs);
            goto fail;
        }
        if (nprocs > 0 && (op->flags & MT_OP_PAIRS) && nprocs % 2) {
            rc = mt_fail(err, MT_EINVAL, "op '%s' pairs rank i with rank i + p/2 and needs an even number of ranks, "
                         "but the job has %d", op->name, nprocs);
            goto fail;
        }
        if (op->available && !op->available(why, sizeof why)) {
            rc = mt_fail(err, MT_EUNSUP, "op '%s' is not available: %s", op->name, why);
            goto fail;
        }
        for (int j = 0; j < k; j++)
            if (e[j].op == op) {
                rc = mt_fail(err, MT_EINVAL, "op '%s' is listed twice in --ops", op->name);
                goto fail;
            }
        if (op->flags & MT_OP_NOSIZE) {
            e[k].op = op;
            e[k++].msize = 0;
        } else {
            for (int j = 0; j < ns; j++) {
                e[k].op = op;
                e[k++].msize = sizes[j];
            }
        }
    }
    mt_free_list(names, nn);
    free(sizes);
    *out = e;
    *nexp = k;
    return MT_OK;
fail:
    mt_free_list(names, nn);
    free(sizes);
    free(e);
    return rc;
}

int *mt_exp_order(MPI_Comm comm, int n, int seeded, uint64_t *seed)
{
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *seed = (((uint64_t)ts.tv_sec * 1000003ULL) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20)) & LLONG_MAX;
    }
    mt_check_mpi(MPI_Bcast(seed, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast");
    int *order = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!order) mt_check_mpi(MPI_ERR_NO_MEM, "experiment order");
    for (int i = 0; i < n; i++) order[i] = i;
    mt_rng_t rng;
    mt_rng_seed(&rng, *seed);
    mt_shuffle_int(&rng, order, n);
    return order;
}
