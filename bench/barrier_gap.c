/* mpitempo bench: where does a 2-rank barrier round spend its time? (bench/barrier_gap.py)
 *
 * Ranks 0 and 1 (on one host: CLOCK_MONOTONIC is one clock for both) time, each as the median over
 * ROUNDS rounds of a per-round median (max over the two ranks):
 *   pp   ping-pong, time per message = RTT/2 (the model's o_s + L + o_r): median of N round trips
 *   ex   both ranks MPI_Sendrecv with each other back to back: median of N exchanges (steady state)
 *   sync one message or one exchange started by both ranks at the same instant of the common clock
 *        (spin until t0, then the call; time = max over both ranks of end - t0), N times per round:
 *        the barrier's situation in Round-Time with a perfect clock
 * each on MPI_COMM_WORLD and on a duplicate of it, with 0- and 4-byte messages.
 * Output: one JSON object on stdout (rank 0). usage: mpiexec -n 2 barrier_gap [N] [ROUNDS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int rank, n_it, rounds;

static double pingpong(MPI_Comm c, int bytes)
{
    int buf = 0, peer = 1 - rank;
    double *v = malloc(sizeof(double) * (size_t)n_it);
    MPI_Barrier(c);
    for (int i = 0; i < n_it; i++) {
        double t = now();
        if (rank == 0) {
            MPI_Send(&buf, bytes, MPI_BYTE, peer, 1, c);
            MPI_Recv(&buf, bytes, MPI_BYTE, peer, 1, c, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&buf, bytes, MPI_BYTE, peer, 1, c, MPI_STATUS_IGNORE);
            MPI_Send(&buf, bytes, MPI_BYTE, peer, 1, c);
        }
        v[i] = (now() - t) / 2; /* rank 0's RTT/2 is the one reported (see main) */
    }
    double m = median(v, n_it);
    free(v);
    return rank == 0 ? m : 0.0;
}

static double exchange(MPI_Comm c, int bytes)
{
    int s = 0, r = 0, peer = 1 - rank;
    double *v = malloc(sizeof(double) * (size_t)n_it);
    MPI_Barrier(c);
    for (int i = 0; i < n_it; i++) {
        double t = now();
        MPI_Sendrecv(&s, bytes, MPI_BYTE, peer, 2, &r, bytes, MPI_BYTE, peer, 2, c, MPI_STATUS_IGNORE);
        v[i] = now() - t;
    }
    double m = median(v, n_it);
    free(v);
    return m;
}

/* both ranks start at t0 of the common clock; one message 0 -> 1 (what = 0) or one exchange (1) */
static double synced(MPI_Comm c, int bytes, int what)
{
    double *v = malloc(sizeof(double) * (size_t)n_it), t0, mine, other;
    int s = 0, r = 0, peer = 1 - rank;
    for (int i = 0; i < n_it; i++) {
        if (rank == 0) t0 = now() + 20e-6;
        MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, c);
        while (now() < t0) {
        }
        if (what == 1) {
            MPI_Sendrecv(&s, bytes, MPI_BYTE, peer, 3, &r, bytes, MPI_BYTE, peer, 3, c, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            MPI_Send(&s, bytes, MPI_BYTE, peer, 3, c);
        } else {
            MPI_Recv(&r, bytes, MPI_BYTE, peer, 3, c, MPI_STATUS_IGNORE);
        }
        mine = now() - t0;
        MPI_Allreduce(&mine, &other, 1, MPI_DOUBLE, MPI_MAX, c);
        v[i] = other;
    }
    double m = median(v, n_it);
    free(v);
    return m;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "barrier_gap: error: needs exactly 2 ranks (got %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    n_it = argc > 1 ? atoi(argv[1]) : 2000;
    rounds = argc > 2 ? atoi(argv[2]) : 21;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    struct { const char *name; int kind; int dup; int bytes; } cases[] = {
        {"pp_world_4", 0, 0, 4}, {"pp_world_0", 0, 0, 0}, {"pp_dup_4", 0, 1, 4},
        {"ex_world_4", 1, 0, 4}, {"ex_dup_4", 1, 1, 4}, {"ex_dup_0", 1, 1, 0},
        {"sync_msg_dup_4", 2, 1, 4}, {"sync_ex_dup_4", 3, 1, 4}, {"sync_ex_dup_0", 3, 1, 0},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    double *res = calloc((size_t)(nc * rounds), sizeof(double));
    for (int k = 0; k < n_it / 10 + 1; k++) pingpong(MPI_COMM_WORLD, 4); /* warm-up */
    for (int rd = 0; rd < rounds; rd++) /* cases interleaved round by round */
        for (int c = 0; c < nc; c++) {
            MPI_Comm comm = cases[c].dup ? dup : MPI_COMM_WORLD;
            double t = cases[c].kind == 0   ? pingpong(comm, cases[c].bytes)
                       : cases[c].kind == 1 ? exchange(comm, cases[c].bytes)
                                            : synced(comm, cases[c].bytes, cases[c].kind - 2);
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            res[c * rounds + rd] = t;
        }
    if (rank == 0) {
        printf("{\"iterations\": %d, \"rounds\": %d", n_it, rounds);
        for (int c = 0; c < nc; c++) printf(", \"%s_s\": %.9g", cases[c].name, median(res + c * rounds, rounds));
        printf("}\n");
    }
    free(res);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
