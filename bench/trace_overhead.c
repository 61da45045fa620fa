/* The per-call overhead of libmpitempo-trace.so (bench/trace_overhead.py):
 * one rank calls MPI_Allreduce on MPI_COMM_SELF (4 bytes) N times per round
 * and prints the time per call of each round (ns), and the cost of one read of
 * each timer the tracer can use. Run it with and without the tracer preloaded.
 *   trace_overhead N ROUNDS */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    MPI_Init(&argc, &argv);
    int in = 1, out = 0;
    for (long i = 0; i < n / 10; i++) MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF); /* warm-up */
    printf("{\"call_ns\": [");
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
        double t1 = now_ns();
        printf("%s%.3f", r ? ", " : "", (t1 - t0) / (double)n);
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
    MPI_Finalize();
    return (int)(sink == 42);
}
