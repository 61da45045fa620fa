/* An MPI application that reads mpitempo's global clock (libmpitempo-clock):
 * it synchronises a clock on MPI_COMM_WORLD, asks for its accuracy, then times
 * an imbalanced loop of compute + MPI_Barrier and reports on rank 0 how far
 * apart the ranks leave each barrier on the global clock, next to the same on
 * the local clocks (which differ by whatever the machines' clocks differ by).
 *
 *   cc -O2 -o clock_app clock_app.c $(pkg-config --cflags --libs mpitempo-clock)
 *   mpiexec -n 4 ./clock_app [--sync SPEC] [--timer NAME] [--iters N] [--resync]
 *
 * Output: one JSON object on stdout (rank 0). Per rank: the local and global
 * time of one common instant (the exit of the first barrier) and their
 * difference, which is the correction the clock applies on that rank. */
#include <mpitempo/clock.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void busy(mtc_clock_t *clk, double seconds)
{
    double t0 = mtc_local_now(clk);
    while (mtc_local_now(clk) - t0 < seconds) {
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* per barrier: max - min over ranks of the exit times (all[rank * n + i]); median and max over barriers */
static void skew(const double *all, int p, int n, double *med, double *mx)
{
    double *s = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) {
        double lo = all[i], hi = all[i];
        for (int r = 1; r < p; r++) {
            double v = all[(size_t)r * n + i];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        s[i] = hi - lo;
    }
    qsort(s, (size_t)n, sizeof(double), cmp);
    *med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *mx = s[n - 1];
    free(s);
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    mtc_options_t opt = {0};
    int iters = 50, resync = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sync") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--timer") && i + 1 < argc) opt.timer = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--resync")) resync = 1;
        else {
            fprintf(stderr, "usage: %s [--sync SPEC] [--timer NAME] [--iters N >= 1] [--resync]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1) {
        fprintf(stderr, "clock_app: invalid --iters %d (must be >= 1)\n", iters);
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);

    mtc_clock_t *clk = NULL;
    if (mtc_create_ex(MPI_COMM_WORLD, spec, &opt, &clk) != MTC_OK) {
        if (rank == 0) fprintf(stderr, "clock_app: %s\n", mtc_error());
        MPI_Finalize();
        return 1;
    }
    double acc_max = 0, acc_med = 0;
    if (mtc_accuracy(clk, &acc_max, &acc_med) != MTC_OK) {
        if (rank == 0) fprintf(stderr, "clock_app: %s\n", mtc_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* the loop: rank r computes (r + 1) * 20 us, then everybody meets in a barrier */
    double *loc = malloc(sizeof(double) * (size_t)iters), *glob = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        busy(clk, (rank + 1) * 20e-6);
        MPI_Barrier(MPI_COMM_WORLD);
        loc[i] = mtc_local_now(clk);      /* read once, converted: the same instant on both scales */
        glob[i] = mtc_to_global(clk, loc[i]);
    }
    double acc2_max = -1, acc2_med = -1;
    if (resync && (mtc_resync(clk) != MTC_OK || mtc_accuracy(clk, &acc2_max, &acc2_med) != MTC_OK)) {
        if (rank == 0) fprintf(stderr, "clock_app: %s\n", mtc_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *aloc = rank == 0 ? malloc(sizeof(double) * (size_t)iters * p) : NULL;
    double *aglob = rank == 0 ? malloc(sizeof(double) * (size_t)iters * p) : NULL;
    MPI_Gather(loc, iters, MPI_DOUBLE, aloc, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(glob, iters, MPI_DOUBLE, aglob, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double gmed, gmax, lmed, lmax;
        skew(aglob, p, iters, &gmed, &gmax);
        skew(aloc, p, iters, &lmed, &lmax);
        printf("{\"library_version\": \"%s\", \"sync\": \"%s\", \"nprocs\": %d, \"sync_duration_s\": %.9g,\n", mtc_version(),
               mtc_spec(clk), p, mtc_sync_duration(clk));
        printf(" \"accuracy\": {\"max_abs_offset_s\": %.9g, \"median_abs_offset_s\": %.9g},\n", acc_max, acc_med);
        if (resync)
            printf(" \"accuracy_after_resync\": {\"max_abs_offset_s\": %.9g, \"median_abs_offset_s\": %.9g},\n", acc2_max,
                   acc2_med);
        printf(" \"barriers\": %d, \"exit_skew_global_s\": {\"median\": %.9g, \"max\": %.9g},\n", iters, gmed, gmax);
        printf(" \"exit_skew_local_s\": {\"median\": %.9g, \"max\": %.9g},\n \"ranks\": [", lmed, lmax);
        for (int r = 0; r < p; r++)
            printf("%s{\"rank\": %d, \"local_s\": %.9f, \"global_s\": %.9f, \"correction_s\": %.9f}", r ? ", " : "", r,
                   aloc[(size_t)r * iters], aglob[(size_t)r * iters], aloc[(size_t)r * iters] - aglob[(size_t)r * iters]);
        printf("]}\n");
    }
    free(loc);
    free(glob);
    free(aloc);
    free(aglob);
    mtc_free(&clk);
    MPI_Finalize();
    return 0;
}
