/* The per-call overhead of libmpitempo-trace.so (bench/trace_overhead.py):
 * one rank makes N iterations per round of one record class's calls on
 * MPI_COMM_SELF (4 bytes) and prints the time per MPI call of each round (ns),
 * and the cost of one read of each timer the tracer can use. Run it with and
 * without the tracer preloaded.
 *   trace_overhead N ROUNDS [CLASS]
 * CLASS (calls per iteration):
 *   coll        MPI_Allreduce                                   (1)
 *   p2p         MPI_Sendrecv, to itself                         (1)
 *   request     MPI_Irecv + MPI_Isend + MPI_Waitall of both     (3)
 *   persistent  MPI_Startall of a Recv_init/Send_init pair + MPI_Waitall (2)
 *   probe       MPI_Iprobe that finds nothing                   (1)
 *   nbc         MPI_Iallreduce + MPI_Wait                       (2) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

enum { COLL, P2P, REQUEST, PERSISTENT, PROBE, NBC };
static const char *const class_names[] = {"coll", "p2p", "request", "persistent", "probe", "nbc"};
static const int class_calls[] = {1, 1, 3, 2, 1, 2};

static int in = 1, out = 0;
static MPI_Request pers[2];

static void iteration(int c)
{
    MPI_Request rq[2];
    int flag;
    switch (c) {
    case COLL:
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
        break;
    case P2P:
        MPI_Sendrecv(&in, 1, MPI_INT, 0, 7, &out, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        break;
    case REQUEST:
        MPI_Irecv(&out, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &rq[0]);
        MPI_Isend(&in, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        break;
    case PERSISTENT:
        MPI_Startall(2, pers);
        MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
        break;
    case PROBE:
        MPI_Iprobe(0, 9, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
        break;
    case NBC:
        MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        break;
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    int c = -1;
    for (int k = 0; k < 6; k++)
        if (strcmp(argc > 3 ? argv[3] : "coll", class_names[k]) == 0) c = k;
    if (c < 0 || n < 1 || rounds < 1) {
        fprintf(stderr, "usage: trace_overhead N ROUNDS [coll|p2p|request|persistent|probe|nbc]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Recv_init(&out, 1, MPI_INT, 0, 8, MPI_COMM_SELF, &pers[0]);
    MPI_Send_init(&in, 1, MPI_INT, 0, 8, MPI_COMM_SELF, &pers[1]);
    for (long i = 0; i < n / 10; i++) iteration(c); /* warm-up */
    printf("{\"class\": \"%s\", \"calls_per_iteration\": %d, \"call_ns\": [", class_names[c], class_calls[c]);
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) iteration(c);
        double t1 = now_ns();
        printf("%s%.3f", r ? ", " : "", (t1 - t0) / (double)n / class_calls[c]);
    }
    /* timer read costs: back-to-back reads, time per read; the fastest of 20 rounds of m reads
     * (a round that was preempted does not count) */
    long m = 100000;
    volatile int64_t sink = 0;
    double mono = 1e30, gtod = 1e30, tsc = 1e30;
    for (int k = 0; k < 20; k++) {
        double t0 = now_ns();
        for (long i = 0; i < m; i++) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            sink += ts.tv_nsec;
        }
        double t1 = now_ns();
        for (long i = 0; i < m; i++) {
            struct timeval tv;
            gettimeofday(&tv, NULL);
            sink += tv.tv_usec;
        }
        double t2 = now_ns();
        for (long i = 0; i < m; i++) {
            unsigned aux;
            sink += (int64_t)__rdtscp(&aux);
        }
        double t3 = now_ns();
        if ((t1 - t0) / m < mono) mono = (t1 - t0) / m;
        if ((t2 - t1) / m < gtod) gtod = (t2 - t1) / m;
        if ((t3 - t2) / m < tsc) tsc = (t3 - t2) / m;
    }
    printf("], \"read_ns\": {\"monotonic\": %.3f, \"gettimeofday\": %.3f, \"rdtscp\": %.3f}, \"n\": %ld}\n", mono, gtod,
           tsc, n);
    MPI_Request_free(&pers[0]);
    MPI_Request_free(&pers[1]);
    MPI_Finalize();
    return (int)(sink == 42);
}
