/* An application with HPCG's communication pattern (tests/mpi/test_trace_app.py, bench/trace_cost.py):
 * a conjugate-gradient loop on a 1-D Laplacian split over the ranks of a line, with a multigrid-like
 * V-cycle of LEVELS levels as preconditioner. Every matrix-vector product and every smoothing sweep
 * exchanges halos with the two neighbours as HPCG's ExchangeHalo does (MPI_Irecv from each, MPI_Send
 * to each, MPI_Wait on each receive); every dot product is an 8-byte MPI_Allreduce. The program counts
 * its own calls and prints them (rank 0: "calls: sends S allreduces A" summed over the ranks), so a
 * trace can be checked against it.
 *
 *   halo_cg [--iters N] [--n LOCAL] [--levels L] [--die RANK:ITER[:SIGNAL]]
 *
 * --die: rank RANK ends at iteration ITER without MPI_Finalize, by exit(3) or by raising SIGNAL.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static long n_send, n_allreduce;

/* halo exchange of x[1..n] with the neighbours: x[0] from the left, x[n+1] from the right */
static void halo(double *x, int n, int tag)
{
    MPI_Request rq[2];
    int nr = 0;
    int left = rank - 1, right = rank + 1;
    x[0] = x[n + 1] = 0.0;
    if (left >= 0) MPI_Irecv(&x[0], 1, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &rq[nr++]);
    if (right < size) MPI_Irecv(&x[n + 1], 1, MPI_DOUBLE, right, tag, MPI_COMM_WORLD, &rq[nr++]);
    if (left >= 0) MPI_Send(&x[1], 1, MPI_DOUBLE, left, tag, MPI_COMM_WORLD), n_send++;
    if (right < size) MPI_Send(&x[n], 1, MPI_DOUBLE, right, tag, MPI_COMM_WORLD), n_send++;
    for (int i = 0; i < nr; i++) MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0, g = 0;
    for (int i = 1; i <= n; i++) s += a[i] * b[i];
    MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    n_allreduce++;
    return g;
}

/* y = A x, A = tridiag(-1, 2, -1) */
static void spmv(double *y, double *x, int n)
{
    halo(x, n, 1);
    for (int i = 1; i <= n; i++) y[i] = 2 * x[i] - x[i - 1] - x[i + 1];
}

/* a V-cycle: a Jacobi sweep with halos on each level, restriction by pairs, prolongation back */
static void vcycle(double *z, const double *r, int n, int level, int levels, double *work)
{
    for (int i = 1; i <= n; i++) z[i] = r[i] / 2;
    halo(z, n, 10 + level);
    for (int i = 1; i <= n; i++) z[i] = (r[i] + z[i - 1] + z[i + 1]) / 2;
    if (level + 1 < levels && n >= 4 && n % 2 == 0) {
        int m = n / 2;
        double *rc = work, *zc = work + m + 2;
        for (int i = 1; i <= m; i++) rc[i] = (r[2 * i - 1] + r[2 * i]) / 2;
        vcycle(zc, rc, m, level + 1, levels, work + 2 * (m + 2));
        for (int i = 1; i <= m; i++) z[2 * i - 1] += zc[i], z[2 * i] += zc[i];
    }
    halo(z, n, 20 + level);
    for (int i = 1; i <= n; i++) z[i] = (r[i] + z[i - 1] + z[i + 1]) / 2;
}

int main(int argc, char **argv)
{
    int iters = 200, n = 4096, levels = 4, die_rank = -1, die_iter = 0, die_sig = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--levels")) levels = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--die")) sscanf(argv[i + 1], "%d:%d:%d", &die_rank, &die_iter, &die_sig);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *x = calloc(n + 2, sizeof *x), *r = calloc(n + 2, sizeof *r), *p = calloc(n + 2, sizeof *p);
    double *ap = calloc(n + 2, sizeof *ap), *z = calloc(n + 2, sizeof *z), *work = calloc(4 * (n + 2), sizeof *work);
    for (int i = 1; i <= n; i++) r[i] = 1.0 + ((rank * n + i) % 7);   /* b; x = 0 */
    vcycle(z, r, n, 0, levels, work);
    memcpy(p, z, (n + 2) * sizeof *p);
    double rz = dot(r, z, n);
    for (int it = 0; it < iters; it++) {
        if (rank == die_rank && it == die_iter) {
            fprintf(stderr, "halo_cg: rank %d ends at iteration %d (%s %d)\n", rank, it, die_sig ? "signal" : "exit",
                    die_sig ? die_sig : 3);
            if (die_sig) raise(die_sig);
            exit(3);
        }
        spmv(ap, p, n);
        double alpha = rz / dot(p, ap, n);
        for (int i = 1; i <= n; i++) x[i] += alpha * p[i], r[i] -= alpha * ap[i];
        vcycle(z, r, n, 0, levels, work);
        double rz2 = dot(r, z, n);
        for (int i = 1; i <= n; i++) p[i] = z[i] + rz2 / rz * p[i];
        rz = rz2;
    }
    double res = dot(r, r, n);
    long mine[2] = {n_send, n_allreduce}, all[2];
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("halo_cg: %d ranks, %d iterations, residual %.6e\ncalls: sends %ld allreduces %ld\n", size, iters, res,
               all[0], all[1]);
    free(x), free(r), free(p), free(ap), free(z), free(work);
    MPI_Finalize();
    return 0;
}
