/* mpitempo: the truth of the one-sided ops (op_rma.c), counted by MPI itself
 * (op_count.h): for every op x --rma-sync x --rma-win (x --rma-epochs 1 and 2
 * for the latency ops with fence and pscw), per call the origin (rank 0)
 * issues exactly 1 access (W for put_bw/get_bw/put_bibw) of the right bytes to
 * the target (rank p/2), the target the same back with 2 epochs and put_bibw,
 * the synchronisation calls of the mode on the ranks of the mode and nothing
 * elsewhere; the data arrive (put: the target's window holds the origin's
 * bytes, and with 2 epochs the origin's the target's; get: the origin holds
 * the target's bytes; acc, fop, cas: the target's window holds the
 * reduction); info as defined (bytes, messages, whose time is the op's, the
 * one-way divisor); the combinations OSU does not have are refused. */
#include "mt_test.h"
#include "op_count.h"

#include "base/mt_common.h"
#include "op/op_rma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ops[] = {"put", "get", "acc", "get_acc", "fop", "cas", "put_bw", "get_bw", "put_bibw"};
static const char *const syncs[] = {"fence", "lock", "flush", "lock_all", "pscw", "flush_local"};
static const char *const wins[] = {"create", "allocate", "dynamic"};
enum { NOPS = 9, NSYNC = 6, NWIN = 3, CALLS = 5, W = 4, MSIZE = 64 };

static int rank, size, origin, target, refused_n;

static int is_bw(const char *op) { return strstr(op, "_bw") != NULL || strstr(op, "_bibw") != NULL; }
static int is_bibw(const char *op) { return !strcmp(op, "put_bibw"); }
static int active_mode(int mode) { return mode == MT_RMA_FENCE || mode == MT_RMA_PSCW; }
/* the op refuses the combination (put_bibw: fence and pscw only; 2 epochs: fence and pscw only) */
static int refused_combo(const char *op, int mode, int epochs)
{
    if (is_bibw(op)) return !active_mode(mode) && mode != MT_RMA_FLUSH; /* flush, the default: pscw */
    return epochs == 2 && !is_bw(op) && !active_mode(mode);
}
/* the mode an op runs with: put_bibw takes the default flush as pscw */
static int mode_of(const char *op, int mode) { return is_bibw(op) && mode == MT_RMA_FLUSH ? MT_RMA_PSCW : mode; }
static int is_atomic(const char *op) { return !strcmp(op, "fop") || !strcmp(op, "cas"); }

/* the synchronisation calls this rank makes per call in mode (with 2 epochs or put_bibw where
 * the target accesses the origin too) */
static int syncs_per_call(int mode, int two_way, int bibw)
{
    int me = rank == origin, tg = rank == target;
    switch (mode) {
    case MT_RMA_FENCE: return two_way ? 3 : 2;
    case MT_RMA_LOCK: return me ? 2 : 0;
    case MT_RMA_FLUSH: return me ? 1 : 0;
    case MT_RMA_FLUSH_LOCAL: return me ? 1 : 0;
    case MT_RMA_LOCK_ALL: return me ? 2 : 0;
    case MT_RMA_PSCW: return me || tg ? (two_way || bibw ? 4 : 2) : 0;
    }
    return -1;
}

static unsigned char pattern(size_t i) { return (unsigned char)((i * 7 + 3) & 0xff); }

/* one refusal (a combination refused with this library): one line, counted on every rank */
static int refusal(int rc, const char *err, const char *what)
{
    if (rc != MT_EUNSUP) return 0;
    CHECK(strchr(err, '\n') == NULL && strstr(err, "refused with") != NULL);
    if (rank == 0) printf("refused: %s: %s\n", what, err);
    refused_n++;
    return 1;
}

static void counts(const char *op, int mode, int wk, int epochs)
{
    char err[MT_ERRLEN], what[160];
    snprintf(what, sizeof what, "%s --rma-sync %s --rma-win %s --rma-epochs %d", op, syncs[mode], wins[wk], epochs);
    mt_op_opts_t o = mt_cnt_default_opts();
    o.rma_sync = mode;
    o.rma_win = wk;
    o.rma_epochs = epochs;
    o.window = W;
    mt_cnt_t c;
    mt_op_info_t info;
    int rc = mt_cnt_run(op, MSIZE, &o, 2, CALLS, &c, &info, err);
    if (refusal(rc, err, what)) return;
    if (refused_combo(op, mode, epochs)) { /* refused in one line, by setup and by the check before launch */
        const mt_op_t *opp = mt_op_find(op);
        char err2[MT_ERRLEN] = "";
        CHECK(rc == MT_EINVAL && strchr(err, '\n') == NULL && strstr(err, "fence or pscw") != NULL);
        CHECK(opp && opp->check && opp->check(&o, size, err2) == MT_EINVAL && !strcmp(err, err2));
        return;
    }
    if (rc != MT_OK) fprintf(stderr, "%s: %s\n", what, err);
    CHECK(rc == MT_OK);
    mode = mode_of(op, mode);
    CHECK(info.rma_sync && !strcmp(info.rma_sync, syncs[mode]));
    int two_way = epochs == 2 && !is_bw(op);
    long long nacc = is_bw(op) ? W : 1, blk = is_atomic(op) ? 8 : MSIZE;
    int ok = 1;
    if (rank == origin || (rank == target && (two_way || is_bibw(op)))) {
        ok &= c.rma_ops == CALLS * nacc && c.rma_bytes == CALLS * nacc * blk;
    } else {
        ok &= c.rma_ops == 0 && c.rma_bytes == 0;
    }
    ok &= c.rma_syncs == (long long)CALLS * syncs_per_call(mode, two_way, is_bibw(op));
    ok &= c.sent_msgs == 0 && c.recv_msgs == 0 && c.colls == 0;
    if (is_bibw(op)) ok &= info.bytes == (double)(2 * W * MSIZE) && info.msgs == 2 * W;
    else if (is_bw(op)) ok &= info.bytes == (double)(W * MSIZE) && info.msgs == W;
    else ok &= info.bytes == 0 && info.msgs == 0;
    /* whose time is the op's: every rank with fence, origin and target with pscw, the origin alone
     * with the passive modes (the target makes no call); a call of 2 epochs is 2 one-way latencies */
    if (mode == MT_RMA_FENCE) ok &= info.ntimed == 0;
    else if (mode == MT_RMA_PSCW) ok &= info.ntimed == 2 && info.timed[0] == origin && info.timed[1] == target;
    else ok &= info.ntimed == 1 && info.timed[0] == origin;
    ok &= info.one_way_divisor == (two_way ? 2 : 1);
    if (!ok)
        fprintf(stderr, "rank %d: %s: rma_ops %lld bytes %lld syncs %lld sent %lld colls %lld info %g/%g timed %d "
                "divisor %d\n", rank, what, c.rma_ops, c.rma_bytes, c.rma_syncs, c.sent_msgs, c.colls, info.bytes,
                info.msgs, info.ntimed, info.one_way_divisor);
    CHECK(ok);
}

static unsigned char pattern2(size_t i) { return (unsigned char)((i * 5 + 11) & 0xff); }

/* one call of op after setting the data; then the data checked. With 2 epochs (put, get) and
 * put_bibw the target's access back to the origin carries the target's pattern (pattern2). */
static void data(const char *op, int mode, int wk, int epochs)
{
    char err[MT_ERRLEN], what[160];
    snprintf(what, sizeof what, "data of %s --rma-sync %s --rma-win %s --rma-epochs %d", op, syncs[mode], wins[wk],
             epochs);
    if (refused_combo(op, mode, epochs)) return;
    mt_op_opts_t o = mt_cnt_default_opts();
    o.rma_sync = mode;
    o.rma_win = wk;
    o.rma_epochs = epochs;
    o.window = W;
    const mt_op_t *opp = mt_op_lookup(op, err);
    CHECK(opp != NULL);
    if (!opp) return;
    mt_op_args_t a;
    mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, NULL, &o);
    int rc = mt_op_prepare(opp, &a, MSIZE, err);
    if (refusal(rc, err, what)) return;
    CHECK(rc == MT_OK);
    if (rc != MT_OK) return;
    mt_rma_view_t v;
    CHECK(mt_op_rma_view(&a, &v) == MT_OK);
    int two_way = (epochs == 2 && !is_bw(op)) || is_bibw(op);
    size_t n = is_bw(op) ? (size_t)W * MSIZE : MSIZE;
    unsigned char *src = NULL, *dst = NULL; /* what must arrive where */
    int put_like = !strcmp(op, "put") || !strcmp(op, "put_bw") || is_bibw(op);
    int get_like = !strcmp(op, "get") || !strcmp(op, "get_bw");
    if (put_like) {
        src = rank == origin || (two_way && rank == target) ? (is_bw(op) ? v.obuf : a.sbuf) : NULL;
        if (src) for (size_t i = 0; i < n; i++) src[i] = rank == origin ? pattern(i) : pattern2(i);
    } else if (get_like && (rank == target || (two_way && rank == origin))) {
        unsigned char *w = v.winmem;
        for (size_t i = 0; i < n; i++) w[i] = rank == target ? pattern(i) : pattern2(i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(opp->call(&a) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    int ok = 1;
    if (put_like && rank == target) {
        dst = v.winmem;
        for (size_t i = 0; i < n; i++) ok &= ((volatile unsigned char *)dst)[i] == pattern(i);
    } else if (put_like && two_way && rank == origin) {
        dst = v.winmem;
        for (size_t i = 0; i < n; i++) ok &= ((volatile unsigned char *)dst)[i] == pattern2(i);
    } else if (get_like && rank == origin) {
        dst = is_bw(op) ? v.obuf : a.rbuf;
        for (size_t i = 0; i < n; i++) ok &= dst[i] == pattern(i);
    } else if (get_like && two_way && rank == target) {
        for (size_t i = 0; i < n; i++) ok &= ((unsigned char *)a.rbuf)[i] == pattern2(i);
    } else if ((!strcmp(op, "acc") || !strcmp(op, "get_acc")) && (rank == target || (two_way && rank == origin))) {
        /* window 0 + the accessing rank's bytes (all 1): 1 */
        for (size_t i = 0; i < n; i++) ok &= ((volatile unsigned char *)v.winmem)[i] == 1;
    } else if (is_atomic(op) && (rank == target || (two_way && rank == origin))) {
        int64_t x;
        memcpy(&x, (const void *)v.winmem, sizeof x);
        ok &= x == 1; /* fop: 0 + 1; cas: 0 == compare 0, so 1 swapped in */
    }
    if (!strcmp(op, "get_acc") && (rank == origin || (two_way && rank == target)))
        for (size_t i = 0; i < n; i++) ok &= ((unsigned char *)a.rbuf)[i] == 0; /* the old value */
    if (!ok) fprintf(stderr, "rank %d: %s: wrong data\n", rank, what);
    CHECK(ok);
    MPI_Barrier(MPI_COMM_WORLD);
    mt_op_release(&a);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    origin = 0;
    target = mt_op_pair_partner(0, size);
    CHECK(target == size / 2);
    for (int i = 0; i < NOPS; i++)
        for (int m = 0; m < NSYNC; m++)
            for (int w = 0; w < NWIN; w++)
                for (int e = 1; e <= 2; e++) {
                    if (e == 2 && (is_bw(ops[i]) || !active_mode(m)) && w > 0) continue; /* refusals: once */
                    counts(ops[i], m, w, e);
                    data(ops[i], m, w, e);
                }
    /* bad options: refused by setup in one line */
    char err[MT_ERRLEN];
    mt_op_opts_t o = mt_cnt_default_opts();
    o.window = 0;
    mt_cnt_t c;
    mt_op_info_t info;
    CHECK(mt_cnt_run("put_bw", MSIZE, &o, 0, 1, &c, &info, err) == MT_EINVAL);
    CHECK(strstr(err, "--bw-window") != NULL && strchr(err, '\n') == NULL);
    /* the ops' declarations */
    const mt_op_t *fop = mt_op_find("fop"), *put = mt_op_find("put");
    CHECK(fop && (fop->flags & MT_OP_NOSIZE) && !strcmp(fop->family, "rma"));
    CHECK(put && (put->opts & MT_OPT_RMA_SYNC) && (put->opts & MT_OPT_RMA_WIN) && !(put->opts & MT_OPT_WINDOW));
    CHECK(mt_op_find("get_bw") && (mt_op_find("get_bw")->opts & MT_OPT_WINDOW));
    CHECK(put && (put->opts & MT_OPT_RMA_EPOCHS) && !(mt_op_find("put_bw")->opts & MT_OPT_RMA_EPOCHS));
    CHECK(mt_op_find("put_bibw") && (mt_op_find("put_bibw")->opts & MT_OPT_WINDOW));
    if (rank == 0 && refused_n) printf("%d combinations refused with this MPI library\n", refused_n);
    MPI_Finalize();
    if (rank == 0) TEST_DONE();
    return mt_test_failures ? 1 : 0;
}
