/* mpitempo: the correctness check of a barrier op (check.h). */
#define _GNU_SOURCE
#include "op/barrier/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "op/barrier/barrier.h"

static void spin(const mt_timer_inst_t *t, double s)
{
    int64_t t0 = t->t->now(), ticks = (int64_t)(s * t->ticks_per_s);
    mt_sim_skip(s);
    while (t->t->now() - t0 < ticks) {
    }
}

int mt_bar_check(MPI_Comm comm, const mt_timer_inst_t *t, const mt_op_t *op, int calls, double max_delay_s,
                 uint64_t seed, mt_bar_check_t *out, char *err)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(out, 0, sizeof *out);
    out->op = op;
    out->calls = calls;
    out->min_slack_s = INFINITY;
    mt_op_args_t a = {.comm = comm, .rank = rank, .size = size, .root = 0, .dtype = NULL, .timer = t};
    static const mt_dtype_t byte = {"byte", MPI_BYTE, MPI_BYTE, 1};
    a.dtype = &byte;
    int rc = mt_op_prepare(op, &a, 0, err);
    if ((rc = mt_agree(comm, rc, err)) != MT_OK) return rc;
    mt_bar_t *b = mt_bar_state(&a);
    mt_rng_t rng;
    mt_rng_seed(&rng, seed);
    long long sent0 = 0, min_sent = -1, max_sent = 0;
    /* part 1: one late rank per call; its entry against everybody's exit */
    for (int c = 0; c < calls; c++) {
        int late = (int)mt_rng_below(&rng, (uint64_t)size);
        double d = max_delay_s * (double)mt_rng_below(&rng, 1001) / 1000.0;
        if (rank == late) spin(t, d);
        double in = mt_ticks_to_s(t, t->t->now());
        mt_check_mpi(op->call(&a), op->mpi_name);
        double outt = mt_ticks_to_s(t, t->t->now());
        double v[2] = {in, -outt}, r[2];
        mt_check_mpi(MPI_Allreduce(v, r, 2, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
        double slack = -r[1] - r[0]; /* first exit - last entry */
        if (slack < 0) out->violations++;
        if (slack < out->min_slack_s) out->min_slack_s = slack;
        if (b) {
            long long s = b->sent - sent0;
            sent0 = b->sent;
            if (min_sent < 0 || s < min_sent) min_sent = s;
            if (s > max_sent) max_sent = s;
        }
    }
    /* part 2: back-to-back calls with random short delays: messages of
     * consecutive calls are in flight together and must never cross-match */
    for (int c = 0; c < calls; c++) {
        int late = (int)mt_rng_below(&rng, (uint64_t)size);
        if (rank == late) spin(t, max_delay_s * (double)mt_rng_below(&rng, 101) / 1000.0);
        mt_check_mpi(op->call(&a), op->mpi_name);
    }
    long long mis = b ? b->mismatched : 0, gmis;
    long long mn[2] = {min_sent < 0 ? 0 : min_sent, -max_sent}, gm[2];
    mt_check_mpi(MPI_Allreduce(&mis, &gmis, 1, MPI_LONG_LONG, MPI_SUM, comm), "MPI_Allreduce");
    mt_check_mpi(MPI_Allreduce(mn, gm, 2, MPI_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce");
    out->mismatched = gmis;
    out->sent_min = gm[0];
    out->sent_max = -gm[1];
    out->counted = b != NULL;
    mt_check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    mt_op_release(&a);
    return MT_OK;
}
