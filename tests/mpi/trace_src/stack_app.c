/* The traced program of tests/mpi/test_trace_stack.py (2 ranks): a known number of calls of each
 * function the second PMPI tool (pmpi_counter.c) counts: recorded calls (collectives,
 * point-to-point, non-blocking, persistent, communicators), counted ones (Comm_rank, Comm_size,
 * Type_size) and one-sided ones. */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, x = 1, y = 0, sz = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = 1 - rank;
    for (int i = 0; i < 5; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) {   /* 0 -> 1, then 1 -> 0 */
        if (rank == i % 2) MPI_Send(&x, 1, MPI_INT, peer, i, MPI_COMM_WORLD);
        else MPI_Recv(&y, 1, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 3; i++) {
        MPI_Request rq[2];
        MPI_Irecv(&y, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&x, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < 2; i++)
        MPI_Sendrecv(&x, 1, MPI_INT, peer, 20, &y, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Request ps, pr;
    MPI_Send_init(&x, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &ps);
    MPI_Recv_init(&y, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &pr);
    for (int i = 0; i < 2; i++) {
        MPI_Start(&pr);
        MPI_Start(&ps);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        MPI_Wait(&ps, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&ps);
    MPI_Request_free(&pr);
    int buf[4] = {0, 0, 0, 0};
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(&x, 1, MPI_INT, peer, rank, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    MPI_Type_size(MPI_INT, &sz);
    MPI_Finalize();
    return buf[peer] == 1 && sz == 4 && y == 1 ? 0 : 1;
}
