/* mpitempo: core-to-core latency probe (see corelat.h). */
#include "run/corelat.h"
#include "base/mt_common.h"
#include "base/mt_mpi.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* wait until *f == want; 0 on success, -1 when the partner gave up or it took too long */
static int wait_for(atomic_int *f, int want)
{
    double t0 = 0;
    for (long spin = 0;; spin++) {
        int v = atomic_load_explicit(f, memory_order_acquire);
        if (v == want) return 0;
        if (v < 0) return -1;
        if ((spin & 1023) == 1023) {
            double t = now_s();
            if (t0 == 0) t0 = t;
            else if (t - t0 > MT_CORELAT_GIVEUP_S) {
                atomic_store_explicit(f, -1, memory_order_release);
                return -1;
            }
        }
    }
}

void mt_corelat_probe(MPI_Comm comm, int skip, mt_corelat_t *out)
{
    memset(out, 0, sizeof *out);
    int wrank;
    mt_check_mpi(MPI_Comm_rank(comm, &wrank), "MPI_Comm_rank");
    MPI_Comm node;
    mt_check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int nrank, nsize;
    mt_check_mpi(MPI_Comm_rank(node, &nrank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(node, &nsize), "MPI_Comm_size");
    /* rank 0's node only: its local ranks 0 and 1 */
    int mine = wrank == 0, on_zero = 0;
    mt_check_mpi(MPI_Allreduce(&mine, &on_zero, 1, MPI_INT, MPI_MAX, node), "MPI_Allreduce");
    int active = !skip && on_zero && nsize >= 2;
    MPI_Win win = MPI_WIN_NULL;
    atomic_int *flag = NULL;
    if (active) {
        void *base = NULL;
        mt_check_mpi(MPI_Win_allocate_shared(nrank == 0 ? 64 : 0, 1, MPI_INFO_NULL, node, &base, &win),
                     "MPI_Win_allocate_shared");
        MPI_Aint sz;
        int du;
        mt_check_mpi(MPI_Win_shared_query(win, 0, &sz, &du, &base), "MPI_Win_shared_query");
        flag = (atomic_int *)base;
        if (nrank == 0) atomic_store(flag, 0);
        mt_check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all");
        mt_check_mpi(MPI_Win_sync(win), "MPI_Win_sync");
        mt_check_mpi(MPI_Barrier(node), "MPI_Barrier");
        if (nrank < 2) {
            double *rtt = nrank == 0 ? malloc(sizeof(double) * MT_CORELAT_ROUNDS) : NULL;
            int ok = 1, n = 0;
            for (int i = 0; i < MT_CORELAT_ROUNDS && ok; i++) {
                if (nrank == 0) {
                    double t0 = now_s();
                    atomic_store_explicit(flag, 2 * i + 1, memory_order_release);
                    ok = wait_for(flag, 2 * i + 2) == 0;
                    if (ok && rtt) rtt[n++] = now_s() - t0;
                } else {
                    ok = wait_for(flag, 2 * i + 1) == 0;
                    if (ok) atomic_store_explicit(flag, 2 * i + 2, memory_order_release);
                }
            }
            if (nrank == 0 && rtt && ok && n > 0) {
                qsort(rtt, (size_t)n, sizeof(double), mt_cmp_double);
                out->done = 1;
                out->rtt_min_s = rtt[0];
                out->rtt_median_s = rtt[n / 2];
                out->rounds = n;
            }
            free(rtt);
        }
        mt_check_mpi(MPI_Barrier(node), "MPI_Barrier");
        mt_check_mpi(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
        mt_check_mpi(MPI_Win_free(&win), "MPI_Win_free");
        /* the world rank of local rank 1 */
        int r1 = nrank == 1 ? wrank : -1, r1max = -1;
        mt_check_mpi(MPI_Allreduce(&r1, &r1max, 1, MPI_INT, MPI_MAX, node), "MPI_Allreduce");
        if (nrank == 0) {
            out->ranks[0] = wrank;
            out->ranks[1] = r1max;
        }
    }
    mt_check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
    /* the writer is world rank 0, which is local rank 0 of its node: nothing to send */
}
