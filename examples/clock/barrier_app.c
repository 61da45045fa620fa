/* A plain MPI program (no mpitempo in it) for the barrier_prof tool: an
 * imbalanced loop of compute and MPI_Barrier.   mpicc -O2 -o barrier_app barrier_app.c */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, iters = argc > 1 ? atoi(argv[1]) : 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < (rank + 1) * 10e-6) {
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
