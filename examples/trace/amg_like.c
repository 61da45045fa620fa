/* An AMG-like MPI loop for `mpitempo trace` (docs/trace.md): like the AMG2013
 * mini-app traced by Hunold and Carpen-Amarie (2018, section V.C), its MPI time
 * is dominated by 8-byte MPI_Allreduce calls between short compute phases, with
 * a halo exchange between neighbouring ranks (MPI_Irecv, MPI_Isend,
 * MPI_Waitall) every few iterations.
 *
 *   mpicc -O2 -o amg_like examples/trace/amg_like.c
 *   mpitempo trace run -n 4 -o amg-trace -- ./amg_like --iters 200
 *
 * Options: --iters N (default 200), --compute-us T (compute per iteration,
 * default 20), --halo-every K (default 5; 0: no halo exchange), --halo-bytes B
 * (default 4096), --skip-finalize (exit without MPI_Finalize, to see what the
 * tracer keeps then). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a smoothing sweep over a local vector for about t seconds */
static double compute(double *v, int n, double t)
{
    double t0 = now_s(), s = 0;
    do {
        for (int i = 1; i < n - 1; i++) v[i] = 0.25 * v[i - 1] + 0.5 * v[i] + 0.25 * v[i + 1];
        s += v[n / 2];
    } while (now_s() - t0 < t);
    return s;
}

static long arg_long(const char *name, const char *val, long lo)
{
    char *end;
    long v = val ? strtol(val, &end, 10) : 0;
    if (!val || *end || v < lo) {
        fprintf(stderr, "amg_like: invalid %s '%s' (an integer >= %ld)\n", name, val ? val : "", lo);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long iters = 200, compute_us = 20, halo_every = 5, halo_bytes = 4096;
    int skip_finalize = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--iters")) iters = arg_long(a, v, 1), i++;
        else if (!strcmp(a, "--compute-us")) compute_us = arg_long(a, v, 0), i++;
        else if (!strcmp(a, "--halo-every")) halo_every = arg_long(a, v, 0), i++;
        else if (!strcmp(a, "--halo-bytes")) halo_bytes = arg_long(a, v, 1), i++;
        else if (!strcmp(a, "--skip-finalize")) skip_finalize = 1;
        else {
            fprintf(stderr, "amg_like: unknown option '%s' (allowed: --iters, --compute-us, --halo-every, "
                            "--halo-bytes, --skip-finalize)\n", a);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 2048;
    double *v = malloc(sizeof(double) * (size_t)n);
    char *sbuf = malloc((size_t)halo_bytes * 2), *rbuf = malloc((size_t)halo_bytes * 2);
    for (int i = 0; i < n; i++) v[i] = (double)((i * 7 + rank) % 13);
    memset(sbuf, rank, (size_t)halo_bytes * 2);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double resid = 1.0, acc = 0;
    for (long it = 0; it < iters; it++) {
        acc += compute(v, n, 1e-6 * (double)compute_us);
        if (halo_every > 0 && it % halo_every == 0 && size > 1) {
            MPI_Request rq[4];
            MPI_Irecv(rbuf, (int)halo_bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &rq[0]);
            MPI_Irecv(rbuf + halo_bytes, (int)halo_bytes, MPI_BYTE, right, 2, MPI_COMM_WORLD, &rq[1]);
            MPI_Isend(sbuf, (int)halo_bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &rq[2]);
            MPI_Isend(sbuf + halo_bytes, (int)halo_bytes, MPI_BYTE, left, 2, MPI_COMM_WORLD, &rq[3]);
            MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        }
        double local = resid * 0.99 + 1e-3 * (double)rank, global = 0;   /* the 8-byte residual norm */
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        resid = global / size;
    }
    if (rank == 0) printf("amg_like: %ld iterations on %d ranks, residual %.6g (%g)\n", iters, size, resid, acc > 0);
    free(v);
    free(sbuf);
    free(rbuf);
    if (skip_finalize) return 0;
    MPI_Finalize();
    return 0;
}
