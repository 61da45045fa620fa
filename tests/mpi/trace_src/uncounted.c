/* mpitempo test program (tests/mpi/test_trace_symbols.py): calls that an earlier tracer let pass
 * unseen (issue 33): MPI_Isendrecv, MPI_Isendrecv_replace, the persistent Allgatherv_init with
 * MPI_Start, large-count (_c) variants, MPI_Pcontrol. Each once per rank, on 2 ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int peer = (r + 1) % n, from = (r + n - 1) % n;
    int a[8] = {0}, b[8] = {0}, counts[2] = {1, 1}, displs[2] = {0, 1};
    MPI_Request q;
    MPI_Isendrecv(a, 1, MPI_INT, peer, 1, b, 1, MPI_INT, from, 1, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Isendrecv_replace(a, 1, MPI_INT, peer, 2, from, 2, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Allgatherv_init(a, 1, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    MPI_Start(&q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Request_free(&q);
    MPI_Count c = 1;
    MPI_Allreduce_c(a, b, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Count sz;
    MPI_Type_size_c(MPI_INT, &sz);
    MPI_Pcontrol(1);
    MPI_Finalize();
    return 0;
}
