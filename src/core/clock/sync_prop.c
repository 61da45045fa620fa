/* mpitempo: ClockPropSync (Hunold and Carpen-Amarie 2018, Algorithm 3): rank 0 of the group
 * broadcasts its flattened clock; every other rank rebuilds it on its own
 * base clock. Correct only when the group shares one time source, so it
 * checks that first and refuses otherwise (e.g. Open MPI's MPI_Wtime, whose
 * origin differs per process, or simulated clocks). */
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TAG_TS 951
#define CHECK_PP 10

int mt_same_time_source(MPI_Comm comm, const mt_baseclock_t *b, double tol, int *bad_rank, double *bad_s)
{
    int rank, size;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    /* Causality on the raw base clock: if both ranks read the same source,
     * s_last <= t_ref <= s_now for every ping-pong. The violation is how far
     * the reference's reading falls outside the client's bracket. */
    double viol = 0;
    double t;
    for (int c = 1; c < size; c++) {
        if (rank == 0) {
            for (int i = 0; i < CHECK_PP; i++) {
                mt_check_mpi(MPI_Recv(&t, 1, MPI_DOUBLE, c, TAG_TS, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                t = mt_base_now(b);
                mt_check_mpi(MPI_Send(&t, 1, MPI_DOUBLE, c, TAG_TS, comm), "MPI_Send");
            }
        } else if (rank == c) {
            double best = INFINITY; /* smallest violation over the ping-pongs */
            for (int i = 0; i < CHECK_PP; i++) {
                double s_last = mt_base_now(b);
                mt_check_mpi(MPI_Send(&s_last, 1, MPI_DOUBLE, 0, TAG_TS, comm), "MPI_Send");
                mt_check_mpi(MPI_Recv(&t, 1, MPI_DOUBLE, 0, TAG_TS, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                double s_now = mt_base_now(b);
                double v = t < s_last ? s_last - t : t > s_now ? t - s_now : 0;
                if (v < best) best = v;
            }
            viol = best;
        }
    }
    /* simulated clocks are different time sources unless configured alike */
    double mine[3] = {b->sim.on, b->sim.offset_s, b->sim.drift}, root[3];
    memcpy(root, mine, sizeof root);
    mt_check_mpi(MPI_Bcast(root, 3, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    if (memcmp(root, mine, sizeof root) != 0 && viol <= tol) viol = tol + fabs(mine[1] - root[1]) + 1e-9;
    struct { double v; int r; } in = {viol, rank}, out;
    mt_check_mpi(MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm), "MPI_Allreduce");
    *bad_rank = out.r;
    *bad_s = out.v;
    return out.v <= tol;
}

static int prop_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    int bad_rank;
    double bad_s;
    if (!mt_same_time_source(e->pp.comm, in->base, e->p->tol_s, &bad_rank, &bad_s))
        return mt_fail(err, MT_EINVAL,
                       "ClockPropSync across different time sources: the base clock (timer '%s'%s) of rank %d of the "
                       "group is %.3g s away from its rank 0 (tolerance %.3g s); use a sync algorithm such as hca3 "
                       "at this level",
                       in->base->timer.t->name, in->base->sim.on ? ", simulated" : "", bad_rank, bad_s, e->p->tol_s);
    unsigned char buf[64 + MT_CLOCK_MAXDEPTH * 20];
    int len = 0;
    if (e->pp.rank == 0) len = (int)mt_clock_flatten(in, buf, sizeof buf);
    mt_check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, e->pp.comm), "MPI_Bcast");
    mt_check_mpi(MPI_Bcast(buf, len, MPI_UNSIGNED_CHAR, 0, e->pp.comm), "MPI_Bcast");
    if (e->pp.rank == 0) {
        *out = *in;
        e->st->learn_ref++;
        return MT_OK;
    }
    e->st->learn_client++;
    return mt_clock_unflatten(buf, (size_t)len, in->base, out, err);
}

const mt_sync_alg_t mt_sync_prop = {
    "prop", "ClockPropSync: copy rank 0's clock model to the group (only where the group shares a time source)",
    MT_P_TOL,
    {0, 0, NULL, 0, 0, MT_SLOPE_ZERO, 0, 1e-6, MT_FIT_TS, MT_RTT_MEDIAN, 0},
    prop_sync,
    "prop (ClockPropSync) can only be the last algorithm, inside a group that shares a time source", 0};
