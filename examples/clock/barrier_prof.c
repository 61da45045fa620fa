/* A tiny profiling layer (PMPI) on libmpitempo-clock: it timestamps the exit of
 * every MPI_Barrier on MPI_COMM_WORLD on the global clock, and at MPI_Finalize
 * rank 0 reports how far apart the ranks left each barrier. Any MPI program can
 * be run under it unmodified:
 *
 *   cc -O2 -shared -fPIC -o libbarrierprof.so barrier_prof.c $(pkg-config --cflags --libs mpitempo-clock)
 *   mpiexec -n 4 env LD_PRELOAD=$PWD/libbarrierprof.so ./app
 *
 * Environment: BARRIER_PROF_SYNC (sync spec; default the library's),
 * BARRIER_PROF_OUT (write the report as JSON there instead of a line on stderr). */
#include <mpitempo/clock.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 100000

static mtc_clock_t *clk;
static double *exits;  /* global exit times of this rank's barriers */
static int nexit, inside;

static void start(void)
{
    inside = 1;   /* the library's own MPI calls are not the application's */
    int rc = mtc_create(MPI_COMM_WORLD, getenv("BARRIER_PROF_SYNC"), &clk);
    inside = 0;
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rc != MTC_OK) {
        if (rank == 0) fprintf(stderr, "barrier_prof: off: %s\n", mtc_error());
        return;
    }
    exits = malloc(sizeof(double) * CAP);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) start();
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    int rc = PMPI_Barrier(comm);
    if (clk && exits && !inside && comm == MPI_COMM_WORLD && nexit < CAP) exits[nexit++] = mtc_now(clk);
    return rc;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int MPI_Finalize(void)
{
    if (clk && exits) {
        int rank, p, nmin;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &p);
        inside = 1;
        double acc = 0;
        int arc = mtc_accuracy(clk, &acc, NULL);
        PMPI_Allreduce(&nexit, &nmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        double *all = rank == 0 ? malloc(sizeof(double) * (size_t)p * (size_t)(nmin ? nmin : 1)) : NULL;
        PMPI_Gather(exits, nmin, MPI_DOUBLE, all, nmin, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double *sk = malloc(sizeof(double) * (size_t)(nmin ? nmin : 1));
            for (int i = 0; i < nmin; i++) {
                double lo = all[i], hi = all[i];
                for (int r = 1; r < p; r++) {
                    double v = all[(size_t)r * nmin + i];
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
                sk[i] = hi - lo;
            }
            qsort(sk, (size_t)nmin, sizeof(double), cmp);
            double med = nmin ? (nmin % 2 ? sk[nmin / 2] : 0.5 * (sk[nmin / 2 - 1] + sk[nmin / 2])) : 0;
            double mx = nmin ? sk[nmin - 1] : 0;
            const char *out = getenv("BARRIER_PROF_OUT");
            FILE *f = out && *out ? fopen(out, "w") : NULL;
            if (f) {
                fprintf(f, "{\"barriers\": %d, \"exit_skew_median_s\": %.9g, \"exit_skew_max_s\": %.9g, "
                           "\"clock_max_abs_offset_s\": %.9g, \"sync\": \"%s\"}\n",
                        nmin, med, mx, arc == MTC_OK ? acc : -1.0, mtc_spec(clk));
                fclose(f);
            } else {
                fprintf(stderr, "barrier_prof: %d barriers on MPI_COMM_WORLD; exit skew on the global clock: median "
                                "%.2f us, max %.2f us (clock accuracy %.2f us, sync %s)\n",
                        nmin, med * 1e6, mx * 1e6, acc * 1e6, mtc_spec(clk));
            }
            free(sk);
        }
        free(all);
        free(exits);
        exits = NULL;
        mtc_free(&clk);
        inside = 0;
    }
    return PMPI_Finalize();
}
