/* mpitempo: the truth of the point-to-point ops (op_p2p.c) and of synbw: the
 * messages and bytes each rank sends and receives per call, counted by MPI
 * itself (op_count.h), against answers derived by hand from each op's
 * definition; the bytes_per_call / msgs_per_call each op declares; effective
 * bytes when msize is not a multiple of the type size; setups that refuse;
 * synbw's busy-wait (a lower bound on time only: the machine is shared). Runs
 * on 2 and 4 ranks (pairs 0-1 / 0-2, 1-3). */
#include "mt_test.h"
#include "op_count.h"

#include "base/mt_common.h"
#include "timer/timer.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define CALLS 5

/* what one call must do on this rank */
typedef struct want {
    long long smsgs, sbytes, rmsgs, rbytes;
} want_t;

static int rank, size;

static void check_counts(const char *op, long long msize, int w, const mt_cnt_t *c, want_t x)
{
    if (c->sent_msgs != CALLS * x.smsgs || c->sent_bytes != CALLS * x.sbytes || c->recv_msgs != CALLS * x.rmsgs ||
        c->recv_bytes != CALLS * x.rbytes || c->rma_ops != 0 || c->colls != 0) {
        fprintf(stderr,
                "rank %d/%d %s msize %lld W %d: per call sent %lld msgs %lld B, received %lld msgs %lld B; "
                "expected %lld/%lld, %lld/%lld\n",
                rank, size, op, msize, w, c->sent_msgs / CALLS, c->sent_bytes / CALLS, c->recv_msgs / CALLS,
                c->recv_bytes / CALLS, x.smsgs, x.sbytes, x.rmsgs, x.rbytes);
        mt_test_failures++;
    }
}

static void run(const char *op, long long m, int w, want_t x, double info_bytes, double info_msgs)
{
    char err[MT_ERRLEN];
    mt_op_opts_t o = mt_cnt_default_opts();
    o.window = w;
    mt_cnt_t c;
    mt_op_info_t info;
    int rc = mt_cnt_run(op, m, &o, 2, CALLS, &c, &info, err);
    if (rc != MT_OK) {
        fprintf(stderr, "rank %d: %s msize %lld W %d: %s\n", rank, op, m, w, err);
        mt_test_failures++;
        return;
    }
    check_counts(op, m, w, &c, x);
    if (info.bytes != info_bytes || info.msgs != info_msgs || info.overlap) {
        fprintf(stderr, "rank %d: %s msize %lld W %d: info %g B %g msgs, expected %g B %g msgs\n", rank, op, m, w,
                info.bytes, info.msgs, info_bytes, info_msgs);
        mt_test_failures++;
    }
}

/* like mt_cnt_run with a datatype of our choice; *secs = time of the counted calls */
static int run_typed(const char *name, int64_t msize, const mt_dtype_t *dt, const mt_op_opts_t *o, int calls,
                     mt_cnt_t *out, mt_op_info_t *info, double *secs, char *err)
{
    static mt_timer_inst_t timer;
    if (!timer.t && mt_timer_open("monotonic", &timer, err) != MT_OK) return MT_EINVAL;
    const mt_op_t *op = mt_op_lookup(name, err);
    if (!op) return MT_EINVAL;
    mt_op_args_t a;
    mt_op_args_init(&a, MPI_COMM_WORLD, dt, MPI_SUM, &timer, o);
    int rc = mt_op_prepare(op, &a, msize, err);
    if (rc != MT_OK) return rc;
    PMPI_Barrier(a.comm);
    mt_cnt_reset();
    int64_t t0 = timer.t->now();
    for (int i = 0; i < calls && rc == MT_OK; i++)
        if (op->call(&a) != MPI_SUCCESS) rc = mt_fail(err, MT_EMPI, "%s failed", name);
    *secs = mt_ticks_to_s(&timer, timer.t->now() - t0);
    *out = mt_cnt;
    PMPI_Barrier(a.comm);
    memset(info, 0, sizeof *info);
    if (op->info) op->info(&a, info);
    mt_op_release(&a);
    return rc;
}

/* --bw-rbuf: the W receives of a window go to W distinct blocks of eff bytes (window, the default) or
 * all to one buffer (single, as OSU) */
static void check_rbuf(const char *op, int single)
{
    char err[MT_ERRLEN];
    mt_op_opts_t o = mt_cnt_default_opts();
    o.window = 8;
    o.rbuf_single = single;
    mt_cnt_t c;
    mt_op_info_t info;
    if (mt_cnt_run(op, 1024, &o, 1, 3, &c, &info, err) != MT_OK) {
        fprintf(stderr, "rank %d: %s --bw-rbuf %s: %s\n", rank, op, single ? "single" : "window", err);
        mt_test_failures++;
        return;
    }
    if (!c.irecv_lo) return; /* a rank that receives nothing */
    long span = (long)(c.irecv_hi - c.irecv_lo), want = single ? 0 : 7 * 1024;
    if (span != want) {
        fprintf(stderr, "rank %d: %s --bw-rbuf %s: receive blocks span %ld B, expected %ld B\n", rank, op,
                single ? "single" : "window", span, want);
        mt_test_failures++;
    }
}

/* ---- the buffers, shown by the data: every rank's send buffer holds its own pattern, the receive
 * buffer another; after one call the receive buffer holds what the op's definition says ---- */
static unsigned char dpat(int who, size_t i) { return (unsigned char)((who * 31 + i * 7 + 1) & 0xff); }

/* op at m bytes (2 blocks of the buffers filled); from >= 0: the rank whose send-buffer bytes
 * [soff, soff + m) must be in this rank's receive block 0; -1: nothing received. The rest of the
 * receive buffer (block 1) must be untouched and the send buffer unchanged. */
static void check_data(const char *name, size_t m, int from, size_t soff)
{
    char err[MT_ERRLEN];
    const mt_op_t *op = mt_op_lookup(name, err);
    mt_op_args_t a;
    mt_op_opts_t o = mt_cnt_default_opts();
    mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, NULL, &o);
    if (!op || mt_op_prepare(op, &a, (int64_t)m, err) != MT_OK) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, name, err);
        mt_test_failures++;
        return;
    }
    size_t n = a.bufbytes;
    long pg = sysconf(_SC_PAGESIZE);
    CHECK((uintptr_t)a.sbuf % (uintptr_t)pg == 0 && (uintptr_t)a.rbuf % (uintptr_t)pg == 0); /* page-aligned, as OSU */
    for (size_t i = 0; i < n; i++) ((unsigned char *)a.sbuf)[i] = dpat(rank, i);
    memset(a.rbuf, 0xee, n);
    PMPI_Barrier(a.comm);
    CHECK(op->call(&a) == MPI_SUCCESS);
    PMPI_Barrier(a.comm);
    const unsigned char *sb = a.sbuf, *rb = a.rbuf;
    long bad_s = -1, bad_r = -1;
    for (size_t i = 0; i < n && bad_s < 0; i++)
        if (sb[i] != dpat(rank, i)) bad_s = (long)i;
    for (size_t i = 0; i < n && bad_r < 0; i++) {
        unsigned char want = (from >= 0 && i < m) ? dpat(from, soff + i) : 0xee;
        if (rb[i] != want) bad_r = (long)i;
    }
    if (bad_s >= 0 || bad_r >= 0) {
        fprintf(stderr, "rank %d: %s %zu B: send buffer changed at %ld, receive buffer wrong at %ld (expected "
                "rank %d's bytes from %zu; -1: as expected)\n", rank, name, m, bad_s, bad_r, from, soff);
        mt_test_failures++;
    }
    mt_op_release(&a);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int half = size / 2;
    const int first = rank < half;                     /* first rank of its pair (rank i < p/2) */
    const int in_pair0 = rank == 0 || rank == half;    /* the pair of bw, bibw, pingping */
    const want_t none = {0, 0, 0, 0};
    static const long long sizes[] = {0, 8, 65536}; /* 0 B: messages of count 0 */
    static const int windows[] = {1, 8};

    for (int si = 0; si < 3; si++) {
        long long m = sizes[si];
        for (int wi = 0; wi < 2; wi++) {
            long long w = windows[wi];
            want_t snd = {w, w * m, 1, 4}, rcv = {1, 4, w, w * m}; /* the window's sender / receiver */
            /* bw: rank 0 sends W messages and gets the 4-byte ack; p/2 the reverse; the others nothing */
            run("bw", m, (int)w, rank == 0 ? snd : rank == half ? rcv : none, (double)(w * m), (double)w);
            /* bibw: both ranks of pair 0 send and receive W messages */
            want_t both = {w, w * m, w, w * m};
            run("bibw", m, (int)w, in_pair0 ? both : none, (double)(2 * w * m), (double)(2 * w));
            /* mbw_mr: every pair does the bw window */
            run("mbw_mr", m, (int)w, first ? snd : rcv, (double)(half * w * m), (double)(half * w));
        }
        want_t pp = {1, m, 1, m};
        /* multi_lat: every rank sends and receives one message per round trip; a latency op */
        run("multi_lat", m, 64, pp, 0, 0);
        /* pingping: pair 0 each send and receive one message; X bytes per call (IMB) */
        run("pingping", m, 64, in_pair0 ? pp : none, (double)m, 1);
        /* sendrecv: every rank one send to the right and one receive from the left; 2X (IMB) */
        run("sendrecv", m, 64, pp, (double)(2 * m), 2);
        /* exchange: every rank two sends and two receives; 4X (IMB) */
        want_t ex = {2, 2 * m, 2, 2 * m};
        run("exchange", m, 64, ex, (double)(4 * m), 4);
        /* synbw: nothing communicated, X bytes and one message per call */
        run("synbw", m, 64, none, (double)m, 1);
    }

    /* the persistent forms: the requests made once in setup (MPI_Send_init / MPI_Recv_init of eff
     * bytes each), per call only MPI_Start(all) of them (+ the bw ack, a plain Recv/Send), the
     * same bytes and messages declared as the non-persistent op */
    for (int si = 0; si < 3; si++) {
        long long m = sizes[si];
        for (int wi = 0; wi < 2; wi++) {
            int w = windows[wi];
            char err[MT_ERRLEN];
            mt_op_opts_t o = mt_cnt_default_opts();
            o.window = w;
            mt_cnt_t c;
            mt_op_info_t info;
            static const char *const names[] = {"bw_persistent", "bibw_persistent", "multi_lat_persistent"};
            for (int k = 0; k < 3; k++) {
                int rc = mt_cnt_run(names[k], m, &o, 2, CALLS, &c, &info, err);
                CHECK(rc == MT_OK);
                if (rc != MT_OK) {
                    fprintf(stderr, "rank %d: %s: %s\n", rank, names[k], err);
                    continue;
                }
                const mt_cnt_t *su = &mt_cnt_setup;
                long long ws = 0, wr = 0, starts = 0, ack_s = 0, ack_r = 0;
                double ib = 0, im = 0;
                if (k == 0) { /* bw: the first rank of pair 0 sends W, its partner receives W */
                    ws = rank == 0 ? w : 0, wr = rank == half ? w : 0, starts = in_pair0 ? w : 0;
                    ack_s = rank == half, ack_r = rank == 0, ib = (double)w * m, im = w;
                } else if (k == 1) {
                    ws = wr = in_pair0 ? w : 0, starts = in_pair0 ? 2 * w : 0, ib = 2.0 * w * m, im = 2.0 * w;
                } else { /* every pair: one send and one receive request, both started per call */
                    ws = wr = 1, starts = 2;
                }
                int ok = su->psend_inits == ws && su->psend_bytes == ws * m && su->precv_inits == wr &&
                         su->precv_bytes == wr * m;
                ok &= c.persist_starts == CALLS * starts && c.sent_msgs == CALLS * ack_s && c.recv_msgs == CALLS * ack_r;
                ok &= info.bytes == ib && info.msgs == im && info.one_way_divisor == (k == 2 ? 2 : 0);
                if (!ok) {
                    fprintf(stderr, "rank %d: %s %lld B W %d: inits %lld/%lld B sends %lld/%lld B receives, per call "
                            "%lld starts %lld/%lld msgs, info %g/%g\n", rank, names[k], m, w, su->psend_inits,
                            su->psend_bytes, su->precv_inits, su->precv_bytes, c.persist_starts / CALLS,
                            c.sent_msgs / CALLS, c.recv_msgs / CALLS, info.bytes, info.msgs);
                    mt_test_failures++;
                }
            }
        }
    }

    /* effective bytes: 10 B of int (4 B) is 2 elements, 8 B per message */
    {
        char err[MT_ERRLEN];
        mt_op_opts_t o = mt_cnt_default_opts();
        o.window = 3;
        mt_cnt_t c;
        mt_op_info_t info;
        double secs;
        const mt_dtype_t *dint = mt_dtype_find("int");
        CHECK(dint && dint->size == 4);
        CHECK(run_typed("bw", 10, dint, &o, CALLS, &c, &info, &secs, err) == MT_OK);
        want_t snd = {3, 24, 1, 4}, rcv = {1, 4, 3, 24};
        check_counts("bw(int)", 10, 3, &c, rank == 0 ? snd : rank == half ? rcv : none);
        CHECK(info.bytes == 24 && info.msgs == 3);
        CHECK(run_typed("exchange", 10, dint, &o, CALLS, &c, &info, &secs, err) == MT_OK);
        want_t ex = {2, 16, 2, 16};
        check_counts("exchange(int)", 10, 3, &c, ex);
        CHECK(info.bytes == 32 && info.msgs == 4);
        CHECK(run_typed("pingping", 10, dint, &o, CALLS, &c, &info, &secs, err) == MT_OK);
        want_t pp = {1, 8, 1, 8};
        check_counts("pingping(int)", 10, 3, &c, in_pair0 ? pp : none);
        CHECK(info.bytes == 8 && info.msgs == 1);
        CHECK(run_typed("synbw", 10, dint, &o, CALLS, &c, &info, &secs, err) == MT_OK);
        CHECK(info.bytes == 8 && info.msgs == 1);

        /* synbw: 10 calls at 1 MiB busy-wait at least 10 x 1.048576 ms (no upper bound: shared machine) */
        CHECK(run_typed("synbw", 1 << 20, &mt_dtypes[0], &o, 10, &c, &info, &secs, err) == MT_OK);
        if (!(secs >= 10 * 1.048576e-3)) {
            fprintf(stderr, "rank %d: synbw 10 x 1 MiB took %g s < 10.48576 ms\n", rank, secs);
            mt_test_failures++;
        }
        CHECK(c.sent_msgs == 0 && c.recv_msgs == 0 && c.waits == 0);
        CHECK(info.bytes == 1048576 && info.msgs == 1);
    }

    /* bad options are refused by setup with one line: a window of 0 */
    {
        char err[MT_ERRLEN] = "";
        mt_op_opts_t o = mt_cnt_default_opts();
        o.window = 0;
        mt_cnt_t c;
        mt_op_info_t info;
        static const char *const windowed[] = {"bw", "bibw", "mbw_mr"};
        for (int i = 0; i < 3; i++) {
            err[0] = '\0';
            CHECK(mt_cnt_run(windowed[i], 8, &o, 0, 1, &c, &info, err) == MT_EINVAL);
            CHECK(strstr(err, "--bw-window") != NULL && strchr(err, '\n') == NULL);
        }
    }

    /* the registry: names, families, flags, options */
    {
        const mt_op_t *op;
        CHECK((op = mt_op_find("bw")) && op->min_procs == 2 && op->opts == (MT_OPT_WINDOW | MT_OPT_RBUF) && !strcmp(op->family, "p2p"));
        CHECK((op = mt_op_find("mbw_mr")) && (op->flags & MT_OP_PAIRS) && op->opts == (MT_OPT_WINDOW | MT_OPT_RBUF));
        CHECK((op = mt_op_find("multi_lat")) && (op->flags & MT_OP_PAIRS) && op->opts == 0);
        CHECK((op = mt_op_find("sendrecv")) && op->min_procs == 2 && !(op->flags & MT_OP_PAIRS));
        CHECK((op = mt_op_find("exchange")) && op->min_procs == 2);
        CHECK((op = mt_op_find("synbw")) && (op->flags & MT_OP_SYNTHETIC) && !strcmp(op->family, "synthetic"));
    }

    /* the buffers: a send and a receive buffer; exchange as IMB_exchange.c: the message to the right from
     * send block 0, the one to the left from send block 1, both received into receive block 0 (the
     * second, from the right neighbour, stays: its send block 1) */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int partner = mt_op_pair_partner(rank, size);
        for (size_t m = 8; m <= 65536; m *= 8192) {
            check_data("exchange", m, right, m);
            check_data("sendrecv", m, left, 0);
            check_data("multi_lat", m, partner, 0);
            check_data("pingping", m, in_pair0 ? partner : -1, 0);
        }
    }

    const char *const windowed[] = {"bw", "bibw", "mbw_mr"};
    for (int k = 0; k < 3; k++) {
        if (k == 2 && size % 2) continue;
        check_rbuf(windowed[k], 0);
        check_rbuf(windowed[k], 1);
    }
    MPI_Finalize();
    if (rank == 0) TEST_DONE();
    return mt_test_failures ? 1 : 0;
}
