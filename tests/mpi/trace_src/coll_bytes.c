/* mpitempo test program (tests/mpi/test_trace_bytes.py): one call of each collective with
 * counts whose bytes per rank are computed by hand in the test, on exactly 4 ranks. Ints (4
 * bytes) and doubles (8). The sequence (the test's EXPECTED table follows it, in this order):
 * blocking intracommunicator collectives, their in-place forms, non-blocking ones,
 * intercommunicator collectives (groups {0,1} and {2,3}), a neighbourhood collective on a
 * non-periodic ring (a line) of 4, an MPI_Sendrecv whose two sizes differ. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 4) {
        if (r == 0) fprintf(stderr, "coll_bytes: run on 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm W = MPI_COMM_WORLD;
    int a[64], b[64];
    double d[8], e[8];
    for (int i = 0; i < 64; i++) a[i] = b[i] = i;
    for (int i = 0; i < 8; i++) d[i] = e[i] = i;
    int c1234[4] = {1, 2, 3, 4}, disp[4] = {0, 1, 3, 6};
    int mine = r + 1;

    MPI_Barrier(W);
    MPI_Bcast(a, 1, MPI_INT, 0, W);
    MPI_Reduce(a, b, 2, MPI_INT, MPI_SUM, 1, W);
    MPI_Reduce(r == 1 ? MPI_IN_PLACE : a, b, 2, MPI_INT, MPI_SUM, 1, W);
    MPI_Allreduce(d, e, 1, MPI_DOUBLE, MPI_SUM, W);
    MPI_Allreduce(MPI_IN_PLACE, e, 1, MPI_DOUBLE, MPI_SUM, W);
    MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, 0, W);
    MPI_Gather(r == 0 ? MPI_IN_PLACE : a, 1, MPI_INT, b, 1, MPI_INT, 0, W);
    MPI_Gatherv(a, mine, MPI_INT, b, c1234, disp, MPI_INT, 0, W);
    MPI_Scatter(a, 2, MPI_INT, b, 2, MPI_INT, 2, W);
    MPI_Scatterv(a, c1234, disp, MPI_INT, b, mine, MPI_INT, 0, W);
    MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_INT, W);
    MPI_Allgather(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, W);
    MPI_Allgatherv(a, mine, MPI_INT, b, c1234, disp, MPI_INT, W);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, c1234, disp, MPI_INT, W);
    MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, W);
    {
        int rc[4] = {mine, mine, mine, mine}, rd[4] = {0, 5, 10, 15}, sd[4];
        int sz[4];
        MPI_Datatype ti[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
        int sdb[4], rdb[4];
        for (int i = 0; i < 4; i++) {
            sd[i] = disp[i];
            sz[i] = 4;
            sdb[i] = 4 * sd[i];
            rdb[i] = 4 * rd[i];
        }
        (void)sz;
        MPI_Alltoallv(a, c1234, sd, MPI_INT, b, rc, rd, MPI_INT, W);
        MPI_Alltoallw(a, c1234, sdb, ti, b, rc, rdb, ti, W);
    }
    MPI_Reduce_scatter_block(a, b, 1, MPI_INT, MPI_SUM, W);
    MPI_Reduce_scatter(a, b, c1234, MPI_INT, MPI_SUM, W);
    MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, W);
    MPI_Exscan(a, b, 1, MPI_INT, MPI_SUM, W);
    {
        MPI_Request q;
        MPI_Iallgather(a, 1, MPI_INT, b, 1, MPI_INT, W, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Ibcast(a, 2, MPI_INT, 3, W, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    {   /* intercommunicator: groups {0,1} (A) and {2,3} (B) */
        MPI_Comm half, inter;
        MPI_Comm_split(W, r / 2, r, &half);
        MPI_Intercomm_create(half, 0, W, r < 2 ? 2 : 0, 7, &inter);
        int root = r == 0 ? MPI_ROOT : r == 1 ? MPI_PROC_NULL : 0;
        MPI_Bcast(a, 1, MPI_INT, root, inter);          /* world 0 to B */
        MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_INT, inter);
        MPI_Gather(a, 3, MPI_INT, b, 3, MPI_INT, root, inter);  /* B to world 0 */
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    {   /* a line of 4 (not periodic): the ends have one neighbour, the middle two */
        MPI_Comm line;
        int dims[1] = {4}, per[1] = {0};
        MPI_Cart_create(W, 1, dims, per, 0, &line);
        MPI_Neighbor_alltoall(a, 1, MPI_INT, b, 1, MPI_INT, line);
        MPI_Comm_free(&line);
    }
    {   /* point-to-point, sizes that differ: rank r sends r+1 ints to r+1, receives r ints (its left
         * neighbour's r-1+1) into a buffer of 8 */
        MPI_Sendrecv(a, r + 1, MPI_INT, (r + 1) % 4, 5, b, 8, MPI_INT, (r + 3) % 4, 5, W, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
