/* Wait states per call site with known injected delays (tests/mpi/test_trace_sites.py), on 2
 * ranks. Two functions, site_a and site_b, each hold one MPI_Recv (rank 0) fed by an MPI_Send of
 * rank 1 that arrives late, and one MPI_Allreduce that rank 1 enters late; site_a's lateness is
 * DELAY_A ms, site_b's DELAY_B ms, and each runs REPS times. Both ranks read CLOCK_MONOTONIC (one
 * host, one clock) right before each call, so the test knows how late rank 1 really arrived: each
 * rank writes DIR/sites-RANK.txt with "site call rep entered_s" lines.
 * Built as one program, or split (call sites in a shared library): -DSPLIT_LIB builds the sites
 * (libcallsites.so), -DSPLIT_MAIN the main program linked with it.
 * Usage: callsites DELAY_A_MS DELAY_B_MS REPS DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SITE __attribute__((noinline))
void site_a(double delay, int rep);
void site_b(double delay, int rep);
extern int cs_rank;
extern FILE *cs_log;

#ifndef SPLIT_MAIN
int cs_rank;
FILE *cs_log;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long ns = (long long)t.tv_nsec + (long long)(s * 1e9);
    t.tv_sec += (time_t)(ns / 1000000000LL);
    t.tv_nsec = (long)(ns % 1000000000LL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
}

static void ok(int rc)
{
    if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
}

static void pair_sync(void)
{
    int other = 1 - cs_rank;
    ok(MPI_Sendrecv(NULL, 0, MPI_BYTE, other, 99, NULL, 0, MPI_BYTE, other, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void entered(const char *site, const char *call, int rep)
{
    fprintf(cs_log, "%s %s %d %.9f\n", site, call, rep, now());
}

SITE void site_a(double delay, int rep)
{
    int x = rep, y = 0;
    pair_sync();
    if (cs_rank == 1) sleep_s(delay), entered("a", "send", rep), ok(MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    else entered("a", "recv", rep), ok(MPI_Recv(&y, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    pair_sync();
    if (cs_rank == 1) sleep_s(delay);
    entered("a", "allreduce", rep);
    ok(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
}

SITE void site_b(double delay, int rep)
{
    int x = rep, y = 0;
    pair_sync();
    if (cs_rank == 1) sleep_s(delay), entered("b", "send", rep), ok(MPI_Send(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD));
    else entered("b", "recv", rep), ok(MPI_Recv(&y, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    pair_sync();
    if (cs_rank == 1) sleep_s(delay);
    entered("b", "allreduce", rep);
    ok(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
}

#endif

#ifndef SPLIT_LIB
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &cs_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double da = argc == 5 ? atof(argv[1]) * 1e-3 : 0, db = argc == 5 ? atof(argv[2]) * 1e-3 : 0;
    int reps = argc == 5 ? atoi(argv[3]) : 0;
    if (size != 2 || da <= 0 || db <= 0 || reps < 1) {
        if (cs_rank == 0) fprintf(stderr, "usage: callsites DELAY_A_MS DELAY_B_MS REPS DIR (on 2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/sites-%d.txt", argv[4], cs_rank);
    if (!(cs_log = fopen(path, "w"))) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int r = 0; r < reps; r++) {
        site_a(da, r);
        site_b(db, r);
    }
    fclose(cs_log);
    MPI_Finalize();
    return 0;
}
#endif
