/* mpitempo: MPI helpers every layer uses: checked calls, agreement on errors,
 * and the program name that prefixes messages ("mpitempo-bench: error: ..."). */
#ifndef MT_MPI_H
#define MT_MPI_H

#include <mpi.h>
#include <stddef.h>

/* The executable's name for messages; set once by the run driver (default "mpitempo"). */
void mt_set_prog(const char *prog);
const char *mt_prog(void);

/* Abort the whole job with a message if an MPI call failed. */
void mt_check_mpi(int rc, const char *what);

/* All ranks of comm agree on an error: returns MT_OK when every rank had
 * rc == MT_OK; otherwise every rank gets the code and the message (err, of
 * MT_ERRLEN bytes) of the lowest failing rank. Collective. */
int mt_agree(MPI_Comm comm, int rc, char *err);

/* 1 in a core built for SimGrid/SMPI (smpicc, CMake MPITEMPO_SMPI): times are simulated. */
#ifdef MT_SMPI
#define MT_SIMULATED 1
#else
#define MT_SIMULATED 0
#endif

/* This rank's host name: gethostname(), or under SMPI the simulated host (MPI_Get_processor_name),
 * since every simulated rank runs in the one host process. Always NUL-terminated. */
void mt_host_name(char *buf, size_t len);

#endif
