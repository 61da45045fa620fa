/* mpitempo: the buffers of the ping-pong (pingpong.c), shown by the data the
 * ranks end with. Each rank fills its send buffer with its own pattern and its
 * receive buffer with another; after the timed ping-pongs (mt_pp_trials), the
 * loop-averaged ones (mt_pp_loop) and the warm-up (mt_pp_warmup):
 *  --buffers two (default): every rank's send buffer still holds its own
 *    pattern (nothing was received into it) and its receive buffer holds the
 *    other rank's pattern: the source got the dest's send buffer back, as in
 *    osu_latency (s_buf, r_buf);
 *  --buffers one: both ranks hold the source's pattern in their one array (the
 *    dest received it and sent it back), the paper's Fortran A.
 * Runs on 2 and 4 ranks (source 0, dest the
 * last rank; the others idle). */
#include "mt_test.h"
#include "op_count.h"

#include "base/mt_common.h"
#include "pingpong/pingpong.h"
#include "timer/timer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MSIZE = 4096 };

static int rank, size;

static unsigned char pat(int who, size_t i) { return (unsigned char)(0x11 * (who + 1) + (i % 13)); }

static void fill(unsigned char *b, int who, size_t n)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(who, i);
}

/* the first byte where b differs from who's pattern over n bytes, or -1 */
static long differs(const unsigned char *b, int who, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(who, i)) return (long)i;
    return -1;
}
/* ... from offset `from` of who's pattern */
static long differs_from(const unsigned char *b, int who, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++)
        if (b[i] != pat(who, i)) return (long)i;
    return -1;
}

static void layout(const mt_timer_inst_t *ti, int one_buffer, const char *what)
{
    char err[MT_ERRLEN];
    mt_pp_cfg_t c;
    memset(&c, 0, sizeof c);
    c.source = 0;
    c.dest = size - 1;
    c.ntrial = 3;
    c.one_buffer = one_buffer;
    mt_pp_pair_t p;
    int rc = mt_pp_pair_init(&p, MPI_COMM_WORLD, &c, ti, MSIZE, err);
    CHECK(rc == MT_OK);
    if (rc != MT_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        return;
    }
    if (p.role >= 0) {
        CHECK(one_buffer ? p.rbuf == p.sbuf : p.rbuf != p.sbuf);
        CHECK(p.xbuf != p.sbuf);
        long pg = sysconf(_SC_PAGESIZE); /* page-aligned, as osu_latency's */
        CHECK((uintptr_t)p.sbuf % (uintptr_t)pg == 0 && (uintptr_t)p.rbuf % (uintptr_t)pg == 0);
        int me = p.role == 0 ? c.source : c.dest, other = p.role == 0 ? c.dest : c.source;
        for (int step = 0; step < 3; step++) {
            fill(p.sbuf, me, MSIZE);
            if (!one_buffer) memset(p.rbuf, 0xee, MSIZE);
            mt_cnt_reset();
            int64_t ticks[3] = {0, 0, 0};
            const char *part = step == 0 ? "trials" : step == 1 ? "loop" : "warmup";
            if (step == 0) mt_pp_trials(&p, MSIZE, 4, 3, 0, ticks);
            else if (step == 1) mt_pp_loop(&p, MSIZE, 2, 5, ticks);
            else mt_pp_warmup(&p, MSIZE, 3);
            CHECK(mt_cnt.recv_msgs > 0 && mt_cnt.sent_msgs > 0);
            long d_s, d_r;
            if (one_buffer) { /* the source's data went there and back (the trials' 8-byte hand-shake,
                               * from the dest to the source, lands in the first 8 bytes: skipped) */
                d_s = differs_from(p.sbuf, c.source, step == 0 ? 8 : 0, MSIZE);
                d_r = -1;
            } else {
                d_s = differs(p.sbuf, me, MSIZE);
                d_r = differs(p.rbuf, other, MSIZE);
            }
            if (d_s >= 0 || d_r >= 0) {
                fprintf(stderr, "rank %d %s %s: send buffer differs from the expected pattern at %ld, receive "
                        "buffer at %ld (-1: as expected)\n", rank, what, part, d_s, d_r);
                mt_test_failures++;
            }
        }
    }
    mt_pp_pair_free(&p);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char err[MT_ERRLEN];
    mt_timer_inst_t ti;
    if (mt_timer_open("monotonic", &ti, err) != MT_OK) {
        fprintf(stderr, "%s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    layout(&ti, 0, "--buffers two");
    layout(&ti, 1, "--buffers one");
    int mine = mt_test_failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) {
        if (all) fprintf(stderr, "%d failures\n", all);
        else printf("ok\n");
    }
    return all ? 1 : 0;
}
