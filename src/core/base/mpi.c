/* mpitempo: MPI helpers shared by every layer (see mt_mpi.h). */
#include "base/mt_mpi.h"
#include "base/mt_common.h"

#include <stdio.h>

static const char *prog_name = "mpitempo";

void mt_set_prog(const char *prog) { prog_name = prog; }
const char *mt_prog(void) { return prog_name; }

void mt_check_mpi(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "%s: error: %s failed: %s\n", prog_name, what, msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int mt_agree(MPI_Comm comm, int rc, char *err)
{
    int rank, size, first;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int mine = rc == MT_OK ? size : rank;
    mt_check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == size) return MT_OK;
    int code = rc;
    mt_check_mpi(MPI_Bcast(err, MT_ERRLEN, MPI_CHAR, first, comm), "MPI_Bcast");
    mt_check_mpi(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast");
    return code;
}
