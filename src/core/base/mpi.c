/* mpitempo: MPI helpers shared by every layer (see mt_mpi.h). */
#include "base/mt_mpi.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <unistd.h>

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

void mt_host_name(char *buf, size_t len)
{
    if (!buf || len == 0) return;
    snprintf(buf, len, "unknown");
#ifdef MT_SMPI
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int n = 0;
    if (MPI_Get_processor_name(name, &n) == MPI_SUCCESS && n > 0) {
        name[n < MPI_MAX_PROCESSOR_NAME ? n : MPI_MAX_PROCESSOR_NAME] = '\0';
        snprintf(buf, len, "%s", name);
    }
#else
    if (gethostname(buf, len - 1) != 0) snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
#endif
}
