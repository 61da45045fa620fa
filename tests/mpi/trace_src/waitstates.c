/* Wait states with a known injected delay (tests/mpi/test_trace_waitstates.py), on 2 ranks: each
 * phase makes one rank late by DELAY ms (an absolute-deadline sleep), so that the other rank
 * waits DELAY in one pattern of Scalasca's analysis. Phases are separated by a zero-byte
 * MPI_Sendrecv (not a barrier: the barrier phase must be the only barrier). Both ranks read
 * CLOCK_MONOTONIC (one clock: the ranks share a host) right before the call of each phase, so
 * that the test knows how late the late rank really arrived (a loaded machine stretches the
 * sleep or delays the other rank): DIR/delays-RANK.txt has "phase slept_s entered_s" lines.
 *   1 late sender      rank 1 late to MPI_Send, rank 0 waits in MPI_Recv
 *   2 late sender (nb) rank 1 late to MPI_Isend, rank 0 waits in MPI_Wait of its MPI_Irecv
 *   3 late receiver    rank 1 late to MPI_Recv, rank 0 waits in MPI_Ssend
 *   4 wait at N x N    rank 1 late to MPI_Allreduce
 *   5 wait at barrier  rank 1 late to MPI_Barrier
 *   6 late broadcast   the root (rank 0) late to MPI_Bcast, rank 1 waits
 *   7 early reduce     rank 1 late to MPI_Reduce, the root (rank 0) waits
 * Usage: waitstates DELAY_MS DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double delay_s;
static double actual[8], entered[8];
static int phase;
#define AT() (entered[phase] = now())

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void late(void)
{
    double start = now();
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long ns = (long long)t.tv_nsec + (long long)(delay_s * 1e9);
    t.tv_sec += (time_t)(ns / 1000000000LL);
    t.tv_nsec = (long)(ns % 1000000000LL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
    actual[phase] = now() - start;
}

static void ok(int rc)
{
    if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
}

static void sync_pair(int other)
{
    ok(MPI_Sendrecv(NULL, 0, MPI_BYTE, other, 99, NULL, 0, MPI_BYTE, other, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size != 2 || (delay_s = atof(argv[1]) * 1e-3) <= 0) {
        if (rank == 0) fprintf(stderr, "usage: waitstates DELAY_MS DIR (on 2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int other = 1 - rank, x = rank, y = 0;
    MPI_Request r;
    sync_pair(other);
    /* 1 */
    phase = 1;
    if (rank == 1) late(), AT(), ok(MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    else AT(), ok(MPI_Recv(&y, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    sync_pair(other);
    /* 2 */
    phase = 2;
    if (rank == 1) {
        late();
        AT();
        ok(MPI_Isend(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r));
    } else {
        ok(MPI_Irecv(&y, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &r));
        AT();   /* rank 0 waits in MPI_Wait */
    }
    ok(MPI_Wait(&r, MPI_STATUS_IGNORE));
    sync_pair(other);
    /* 3 */
    phase = 3;
    if (rank == 0) AT(), ok(MPI_Ssend(&x, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
    else late(), AT(), ok(MPI_Recv(&y, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    sync_pair(other);
    /* 4 */
    phase = 4;
    if (rank == 1) late();
    AT();
    ok(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    sync_pair(other);
    /* 5 */
    phase = 5;
    if (rank == 1) late();
    AT();
    ok(MPI_Barrier(MPI_COMM_WORLD));
    sync_pair(other);
    /* 6 */
    phase = 6;
    if (rank == 0) late();
    AT();
    ok(MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD));
    sync_pair(other);
    /* 7 */
    phase = 7;
    if (rank == 1) late();
    AT();
    ok(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    sync_pair(other);
    char path[4096];
    snprintf(path, sizeof path, "%s/delays-%d.txt", argv[2], rank);
    FILE *f = fopen(path, "w");
    if (!f) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int k = 1; k < 8; k++) fprintf(f, "%d %.9f %.9f\n", k, actual[k], entered[k]);
    fclose(f);
    MPI_Finalize();
    return 0;
}
