/* A C main program whose MPI work is partly in Fortran (mixed_sub.f90): MPI_Init from C, then a
 * Fortran subroutine on a duplicated communicator, with MPI_IN_PLACE (tests/mpi/test_trace_fortran.py).
 * Exit code 1 when the Fortran part's result is wrong. */
#include <mpi.h>
#include <stdio.h>

void mixed_sub_(MPI_Fint *comm, MPI_Fint *result);

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    int size = 0;
    MPI_Comm dup;
    if (MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || MPI_Comm_dup(MPI_COMM_WORLD, &dup) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Fint f = MPI_Comm_c2f(dup), res = 0;
    mixed_sub_(&f, &res);
    int ok = res == size * (size + 1) / 2;
    if (!ok) fprintf(stderr, "mixed_main: the Fortran allreduce gave %d, not %d\n", (int)res, size * (size + 1) / 2);
    if (MPI_Comm_free(&dup) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Finalize();
    return ok ? 0 : 1;
}
