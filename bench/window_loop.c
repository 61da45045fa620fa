/* mpitempo bench: the overhead of the bw op's window loop (bench/window_loop.py).
 *
 * Ranks 0 and 1 run, interleaved in blocks, (A) the registry's op "bw" through its call pointer, as
 * every scheme calls it, and (B) the same window written inline here (W MPI_Isend / MPI_Irecv into
 * the same buffers, MPI_Waitall, a 4-byte acknowledgement), CALLS windows per block, BLOCKS blocks
 * of each. Block time / CALLS is the time of one window; the overhead is the median over blocks of
 * A / B - 1 (A and B of one block pair are adjacent in time, so a slow phase of the machine hits
 * both). Output: one JSON object on stdout (rank 0).
 * usage: mpiexec -n 2 bench_window_loop [MSIZE] [W] [CALLS] [BLOCKS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mt_common.h"
#include "op/op.h"
#include "timer/timer.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long msize = argc > 1 ? atol(argv[1]) : 8;
    int w = argc > 2 ? atoi(argv[2]) : 64, calls = argc > 3 ? atoi(argv[3]) : 200,
        blocks = argc > 4 ? atoi(argv[4]) : 200;
    if (size != 2 || msize < 1 || w < 1 || calls < 1 || blocks < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 bench_window_loop [MSIZE>=1] [W>=1] [CALLS] [BLOCKS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char err[MT_ERRLEN];
    mt_timer_inst_t timer;
    if (mt_timer_open("monotonic", &timer, err) != MT_OK) MPI_Abort(MPI_COMM_WORLD, 3);
    mt_op_opts_t opts = {.window = w, .rma_sync = MT_RMA_FLUSH, .rma_win = MT_WIN_ALLOCATE, .compute_s = -1};
    mt_op_args_t a;
    mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, &timer, &opts);
    const mt_op_t *op = mt_op_lookup("bw", err);
    if (!op || mt_op_prepare(op, &a, msize, err) != MT_OK) {
        fprintf(stderr, "bench_window_loop: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    /* the inline window's own buffers, as the op's: one send buffer, W receive blocks */
    int n = (int)msize;
    unsigned char *sbuf = calloc((size_t)n, 1), *rwin = calloc((size_t)n * (size_t)w, 1), ack[4] = {0};
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)w);
    double *ta = malloc(sizeof(double) * (size_t)blocks), *tb = malloc(sizeof(double) * (size_t)blocks),
           *ratio = malloc(sizeof(double) * (size_t)blocks);
    int peer = 1 - rank;
    for (int i = 0; i < 20; i++) op->call(&a); /* warm-up */
    for (int k = 0; k < blocks; k++) {
        for (int pass = 0; pass < 2; pass++) {
            int inline_first = k % 2; /* alternate which comes first */
            int use_inline = pass == 0 ? inline_first : !inline_first;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            if (!use_inline) {
                for (int c = 0; c < calls; c++) op->call(&a);
            } else {
                for (int c = 0; c < calls; c++) {
                    if (rank == 0) {
                        for (int i = 0; i < w; i++) MPI_Isend(sbuf, n, MPI_BYTE, peer, 70, MPI_COMM_WORLD, &req[i]);
                        MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
                        MPI_Recv(ack, 4, MPI_BYTE, peer, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else {
                        for (int i = 0; i < w; i++)
                            MPI_Irecv(rwin + (size_t)i * (size_t)n, n, MPI_BYTE, peer, 70, MPI_COMM_WORLD, &req[i]);
                        MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
                        MPI_Send(ack, 4, MPI_BYTE, peer, 71, MPI_COMM_WORLD);
                    }
                }
            }
            double t = (now() - t0) / calls, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (use_inline) tb[k] = tmax;
            else ta[k] = tmax;
        }
        ratio[k] = ta[k] / tb[k];
    }
    if (rank == 0) {
        double mr = median(ratio, blocks), ma = median(ta, blocks), mb = median(tb, blocks);
        printf("{\"msize\": %ld, \"window\": %d, \"calls_per_block\": %d, \"blocks\": %d, "
               "\"op_window_median_s\": %.9g, \"inline_window_median_s\": %.9g, \"overhead_median_ratio\": %.6f}\n",
               msize, w, calls, blocks, ma, mb, mr - 1.0);
    }
    mt_op_release(&a);
    free(sbuf);
    free(rwin);
    free(req);
    free(ta);
    free(tb);
    free(ratio);
    MPI_Finalize();
    return 0;
}
