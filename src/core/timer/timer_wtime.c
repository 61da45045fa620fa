/* mpitempo: MPI_Wtime as a timer (ticks of 1 ns, converted from double seconds).
 * Note: MPI_Wtime's origin differs per library and even per process, so it is
 * a poor base for clock synchronisation; it is offered for comparison. */
#include "timer/timer.h"
#include "base/mt_common.h"

#include <mpi.h>

static int64_t now_wtime(void) { return (int64_t)(MPI_Wtime() * 1e9); }

static int init_wtime(double *f, char *err)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) return mt_fail(err, MT_EUNSUP, "timer 'wtime' needs MPI to be initialised");
    *f = 1e9;
    return MT_OK;
}

const mt_timer_t mt_timer_wtime = {"wtime", "MPI_Wtime(), converted to int64 ns", 1, init_wtime, now_wtime};
