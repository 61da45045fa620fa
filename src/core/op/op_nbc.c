/* mpitempo: the non-blocking collectives (MPI-3 MPI_I*), measured two ways,
 * and the synthetic ops that give the overlap method a known answer.
 *
 * Buffers, block sizes, roots and flags are those of the blocking collective
 * of the same name (op_coll.c): msize is the block a rank contributes or
 * receives (IMB convention). Every rank of the communicator takes part. The
 * vector variants (igatherv, iscatterv, iallgatherv, ialltoallv, ialltoallw) read --vcounts:
 * a rank's own block is counts[rank] (ialltoallv: it sends counts[j] to rank j
 * and receives counts[rank] from every rank, a->rcounts / a->rdispls).
 * bytes_per_call = msgs_per_call = 0 for all of them (latency ops, no bandwidth
 * definition; an MPI library's collective algorithm decides the messages).
 *
 * ibarrier ... iexscan (the 17 MPI_I* forms of the blocking collectives, ialltoallw included):
 *   one call = post MPI_Ixxx + MPI_Wait. The latency of the non-blocking
 *   collective without overlap: OSU's "Pure Comm." column of osu_ixxx (OSU
 *   Micro-Benchmarks 7.x, c/mpi/collective/non_blocking/osu_i*.c) and IMB-NBC's
 *   Ixxx_pure. OSU has no iscan/iexscan; IMB-NBC neither.
 * ibarrier_overlap ... iexscan_overlap (--overlap-compute):
 *   one call = post MPI_Ixxx, compute, MPI_Wait: OSU's "Overall" of osu_ixxx.
 *   The compute is a calibrated busy loop of dependent floating-point
 *   operations (no timer polls; MPI_Test calls only with --overlap-tests N: then
 *   the loop runs in N equal pieces, each followed by one timed MPI_Test of the
 *   request, as OSU's -t N, and the tests' time is recorded apart, not as
 *   compute; the synthetic ops have no request and make none) whose iteration count is fixed
 *   in setup: the target is --overlap-compute, or with "auto" the pure time of
 *   the op measured in setup (median of 25 post+wait calls after 3 warm-up
 *   calls, each after a barrier; max over ranks), so that every rank computes
 *   the same time, as OSU sets its compute to the measured pure latency. Two
 *   timer reads around the compute record its duration per call (into an array
 *   preallocated in setup; when full, calls are counted but not recorded). The
 *   info hook reports them (meta.json "overlap"); the overlap percentage is
 *   computed from the runtimes of the pure and the overlap op by OSU's formula
 *   (docs/methods.md, "Operations: nbc").
 * idelay, idelay_overlap, idelay_blocking, idelay_blocking_overlap (family
 *   "synthetic", --delay D per rank, no MPI call, no data): communication with a
 *   known progress model, the ground truth of the overlap method.
 *   idelay: post reads the timer (t_post), wait busy-waits until t_post + D:
 *     communication that progresses by itself (pure time D).
 *   idelay_overlap: post, compute, wait: max(D, compute); overlap 100% when the
 *     compute equals D.
 *   idelay_blocking: post busy-waits D, wait returns at once: communication that
 *     does not progress in the background (pure time D).
 *   idelay_blocking_overlap: post (D), compute, wait: D + compute; overlap 0%.
 */
#include "base/mt_common.h"
#include "op/op.h"
#include "timer/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A posted operation: an MPI request, or the post time of a synthetic one. */
typedef struct nbc_req {
    MPI_Request req;
    int64_t t_post;
} nbc_req_t;

typedef int (*post_fn)(mt_op_args_t *a, nbc_req_t *h);
typedef int (*wait_fn)(mt_op_args_t *a, nbc_req_t *h);

/* the state of an overlap op (setup to teardown) */
#define NBC_RECORD_CAP 4096
typedef struct nbc_state {
    int64_t iters;          /* compute loop iterations per call */
    int tests;              /* --overlap-tests: the compute in this many pieces, each followed by MPI_Test */
    int64_t *test;          /* the tests' time per call (ticks), as comp */
    double target_s;        /* the compute asked for */
    double pure_s;          /* auto: the pure time measured (max over ranks); 0 when given */
    int64_t *comp;          /* compute durations per call (ticks) */
    int cap, n;
    long long unrecorded;   /* calls after the array was full */
} nbc_state_t;

static int one(int p) { (void)p; return 1; }
static int per_rank(int p) { return p; }

/* ---- the posts: the same arguments as the blocking ops (op_coll.c) ---- */
static int p_ibarrier(mt_op_args_t *a, nbc_req_t *h) { return MPI_Ibarrier(a->comm, &h->req); }
static int p_ibcast(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ibcast(a->sbuf, a->count, a->type, a->root, a->comm, &h->req);
}
static int p_ireduce(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ireduce(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->root, a->comm, &h->req);
}
static int p_iallreduce(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iallreduce(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm, &h->req);
}
static int p_igather(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Igather(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->root, a->comm, &h->req);
}
static int p_igatherv(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Igatherv(a->sbuf, a->counts[a->rank], a->type, a->rbuf, a->counts, a->displs, a->type, a->root,
                        a->comm, &h->req);
}
static int p_iscatter(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iscatter(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->root, a->comm, &h->req);
}
static int p_iscatterv(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iscatterv(a->sbuf, a->counts, a->displs, a->type, a->rbuf, a->counts[a->rank], a->type, a->root,
                         a->comm, &h->req);
}
static int p_iallgather(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iallgather(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->comm, &h->req);
}
static int p_iallgatherv(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iallgatherv(a->sbuf, a->counts[a->rank], a->type, a->rbuf, a->counts, a->displs, a->type, a->comm,
                           &h->req);
}
static int p_ialltoall(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ialltoall(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->comm, &h->req);
}
static int p_ialltoallv(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ialltoallv(a->sbuf, a->counts, a->displs, a->type, a->rbuf, a->rcounts, a->rdispls, a->type, a->comm,
                          &h->req);
}
static int p_ialltoallw(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ialltoallw(a->sbuf, a->counts, a->wsdispls, a->wtypes, a->rbuf, a->rcounts, a->wrdispls, a->wtypes,
                          a->comm, &h->req);
}
static int p_ireduce_scatter(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ireduce_scatter(a->sbuf, a->rbuf, a->counts, a->type, a->redop, a->comm, &h->req);
}
static int p_ireduce_scatter_block(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Ireduce_scatter_block(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm, &h->req);
}
static int p_iscan(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iscan(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm, &h->req);
}
static int p_iexscan(mt_op_args_t *a, nbc_req_t *h)
{
    return MPI_Iexscan(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm, &h->req);
}
static int w_mpi(mt_op_args_t *a, nbc_req_t *h)
{
    (void)a;
    return MPI_Wait(&h->req, MPI_STATUS_IGNORE);
}

/* ---- the synthetic posts and waits (--delay: a->delay_s) ---- */
static void busy_until(const mt_timer_inst_t *t, int64_t start, double s)
{
    int64_t ticks = (int64_t)(s * t->ticks_per_s);
    mt_sim_skip((double)(start + ticks - t->t->now()) / t->ticks_per_s);
    while (t->t->now() - start < ticks) {
    }
}
static int p_idelay(mt_op_args_t *a, nbc_req_t *h)
{
    h->t_post = a->timer->t->now();
    return MPI_SUCCESS;
}
static int w_idelay(mt_op_args_t *a, nbc_req_t *h)
{
    busy_until(a->timer, h->t_post, a->delay_s);
    return MPI_SUCCESS;
}
static int p_idelay_blocking(mt_op_args_t *a, nbc_req_t *h)
{
    h->t_post = a->timer->t->now();
    busy_until(a->timer, h->t_post, a->delay_s);
    return MPI_SUCCESS;
}
static int w_none(mt_op_args_t *a, nbc_req_t *h)
{
    (void)a;
    (void)h;
    return MPI_SUCCESS;
}

/* ---- the compute: a dependent chain of multiply-adds on a volatile
 * accumulator (a load, a multiply-add and a store per iteration, none of which
 * the compiler may drop or reorder); x converges to 0.1, no overflow, no
 * denormals ---- */
static double spin(int64_t n)
{
    volatile double x = 1.0;
    for (int64_t i = 0; i < n; i++) x = x * 0.999999 + 1e-7;
    return x;
}

/* ---- the calls (timed region) ---- */
static inline int pure_call(mt_op_args_t *a, post_fn post, wait_fn wait)
{
    nbc_req_t h;
    int rc = post(a, &h);
    return rc != MPI_SUCCESS ? rc : wait(a, &h);
}

static inline int overlap_call(mt_op_args_t *a, post_fn post, wait_fn wait)
{
    nbc_state_t *st = a->state;
    nbc_req_t h;
    int rc = post(a, &h);
    if (rc != MPI_SUCCESS) return rc;
    int64_t t0 = a->timer->t->now(), tt = 0;
    if (st->tests > 0 && wait == w_mpi) { /* OSU's -t: compute / N, then one MPI_Test, N times */
        int64_t piece = st->iters / st->tests > 0 ? st->iters / st->tests : 1;
        int flag = 0;
        for (int k = 0; k < st->tests && rc == MPI_SUCCESS; k++) {
            (void)spin(piece);
            int64_t u0 = a->timer->t->now();
            rc = MPI_Test(&h.req, &flag, MPI_STATUS_IGNORE);
            tt += a->timer->t->now() - u0;
        }
    } else {
        (void)spin(st->iters);
    }
    int64_t t1 = a->timer->t->now();
    if (st->n < st->cap) {
        st->test[st->n] = tt;
        st->comp[st->n++] = t1 - t0 - tt; /* the compute alone: OSU's t_cpu - t_test */
    } else {
        st->unrecorded++;
    }
    if (rc != MPI_SUCCESS) return rc;
    return wait(a, &h);
}

/* ---- setup: the compute target and the iteration count (outside the timed region) ---- */
static double time_spin(const mt_timer_inst_t *t, int64_t n)
{
    int64_t t0 = t->t->now();
    (void)spin(n);
    int64_t t1 = t->t->now();
    return mt_ticks_to_s(t, t1 - t0);
}

/* The iterations of spin() that take target_s on this rank: its rate from runs
 * of >= 1 ms repeated until three in a row agree within 2% (at most 200 runs;
 * then the median of the last three), then corrected once at the count itself
 * (median of 9 runs, targets under 10 ms) for the overheads a short run has. */
static int64_t calibrate(const mt_timer_inst_t *t, double target_s)
{
    int64_t n = 1024;
    while (n < ((int64_t)1 << 40) && time_spin(t, n) < 1e-3) n *= 2;
    double r[3] = {0, 0, 0};
    for (int k = 0; k < 200; k++) {
        double s = time_spin(t, n);
        r[k % 3] = s > 0 ? (double)n / s : 0;
        if (k >= 2) {
            double lo = fmin(r[0], fmin(r[1], r[2])), hi = fmax(r[0], fmax(r[1], r[2]));
            if (lo > 0 && hi <= 1.02 * lo) break;
        }
    }
    double rr[3] = {r[0], r[1], r[2]};
    double rate = mt_median_inplace(rr, 3);
    int64_t iters = (int64_t)llround(target_s * rate);
    if (iters < 1) iters = 1;
    if (target_s < 1e-2) {
        double m[9];
        for (int k = 0; k < 9; k++) m[k] = time_spin(t, iters);
        double med = mt_median_inplace(m, 9);
        if (med > 0) iters = (int64_t)llround((double)iters * target_s / med);
        if (iters < 1) iters = 1;
    }
    return iters;
}

static int overlap_setup(mt_op_args_t *a, int (*pure)(mt_op_args_t *), char *err)
{
    if (!a->timer || !a->timer->t)
        return mt_fail(err, MT_EINVAL, "%s needs a timer for its compute (none given)", a->op->name);
    nbc_state_t *st = calloc(1, sizeof *st);
    int64_t *comp = malloc(sizeof(int64_t) * NBC_RECORD_CAP), *test = malloc(sizeof(int64_t) * NBC_RECORD_CAP);
    if (!st || !comp || !test) {
        free(st);
        free(comp);
        free(test);
        return mt_fail(err, MT_ENOMEM, "out of memory for the state of %s", a->op->name);
    }
    st->comp = comp;
    st->test = test;
    st->tests = a->op->flags & MT_OP_SYNTHETIC ? 0 : a->opts->overlap_tests; /* no request to test in idelay* */
    st->cap = NBC_RECORD_CAP;
    a->state = st;
    if (a->opts->compute_s > 0) {
        st->target_s = a->opts->compute_s;
    } else { /* auto: the pure time, as OSU does (median of 25 after 3 warm-ups; max over ranks) */
        enum { WARM = 3, MEAS = 25 };
        double s[MEAS];
        for (int i = 0; i < WARM + MEAS; i++) {
            int rc = MPI_Barrier(a->comm);
            int64_t t0 = a->timer->t->now();
            if (rc == MPI_SUCCESS) rc = pure(a);
            int64_t t1 = a->timer->t->now();
            if (rc != MPI_SUCCESS)
                return mt_fail(err, MT_EMPI, "%s: MPI error %d while measuring the pure time for the compute",
                               a->op->name, rc);
            if (i >= WARM) s[i - WARM] = mt_ticks_to_s(a->timer, t1 - t0);
        }
        double mine = mt_median_inplace(s, MEAS), all = 0;
        if (MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, a->comm) != MPI_SUCCESS)
            return mt_fail(err, MT_EMPI, "%s: MPI_Allreduce of the pure time failed", a->op->name);
        st->pure_s = all;
        st->target_s = all;
    }
    st->iters = calibrate(a->timer, st->target_s);
    return MT_OK;
}

static void overlap_teardown(mt_op_args_t *a)
{
    nbc_state_t *st = a->state;
    if (!st) return;
    free(st->comp);
    free(st->test);
    free(st);
    a->state = NULL;
}

/* collective: the recorded computes of all ranks (per-rank median, max over
 * ranks; min and max over all calls; calls recorded, summed) */
static void overlap_info(mt_op_args_t *a, mt_op_info_t *out)
{
    nbc_state_t *st = a->state;
    memset(out, 0, sizeof *out);
    out->overlap = 1;
    if (!st) return;
    out->compute_target_s = st->target_s;
    out->pure_s = st->pure_s;
    double med = 0, lo = INFINITY, hi = 0;
    double *v = st->n > 0 ? malloc(sizeof(double) * (size_t)st->n) : NULL;
    long long calls[2] = {v ? st->n : 0, st->unrecorded}, tot[2] = {0, 0};
    if (v) {
        for (int i = 0; i < st->n; i++) v[i] = mt_ticks_to_s(a->timer, st->comp[i]);
        med = mt_median_inplace(v, st->n);
        lo = v[0];
        hi = v[st->n - 1];
        free(v);
    }
    double gmed = 0, glo = 0, ghi = 0;
    MPI_Allreduce(&med, &gmed, 1, MPI_DOUBLE, MPI_MAX, a->comm);
    MPI_Allreduce(&lo, &glo, 1, MPI_DOUBLE, MPI_MIN, a->comm);
    MPI_Allreduce(&hi, &ghi, 1, MPI_DOUBLE, MPI_MAX, a->comm);
    MPI_Allreduce(calls, tot, 2, MPI_LONG_LONG, MPI_SUM, a->comm);
    out->compute_median_s = gmed;
    out->compute_min_s = isinf(glo) ? 0 : glo;
    out->compute_max_s = ghi;
    out->compute_calls = tot[0];
    out->compute_unrecorded = tot[1];
    /* the tests per compute (the same on every rank) and their time: per-rank median, max over ranks */
    out->tests = st->tests;
    double tmed = 0, gtmed = 0;
    if (st->tests && st->n > 0) {
        double *u = malloc(sizeof(double) * (size_t)st->n);
        if (u) {
            for (int i = 0; i < st->n; i++) u[i] = mt_ticks_to_s(a->timer, st->test[i]);
            tmed = mt_median_inplace(u, st->n);
            free(u);
        }
    }
    MPI_Allreduce(&tmed, &gtmed, 1, MPI_DOUBLE, MPI_MAX, a->comm);
    out->test_median_s = gtmed;
}

/* ---- the registry entries ---- */
#define NBC_OP(nm, MPIN, FL, BL, MINP, VOPT)                                                                        \
    static int c_##nm(mt_op_args_t *a) { return pure_call(a, p_##nm, w_mpi); }                                     \
    static int co_##nm(mt_op_args_t *a) { return overlap_call(a, p_##nm, w_mpi); }                                 \
    static int so_##nm(mt_op_args_t *a, char *err) { return overlap_setup(a, c_##nm, err); }                       \
    static const mt_op_t op_##nm = {.name = #nm, .mpi_name = MPIN, .min_procs = MINP, .flags = FL, .blocks = BL,   \
                                    .call = c_##nm, .family = "nbc", .opts = VOPT};                                \
    static const mt_op_t op_##nm##_overlap = {.name = #nm "_overlap", .mpi_name = MPIN, .min_procs = MINP,         \
                                              .flags = FL, .blocks = BL, .call = co_##nm, .setup = so_##nm,        \
                                              .teardown = overlap_teardown, .family = "nbc",                       \
                                              .opts = VOPT | MT_OPT_COMPUTE | MT_OPT_TESTS, .info = overlap_info};

NBC_OP(ibarrier, "MPI_Ibarrier", MT_OP_NOSIZE, one, 1, 0)
NBC_OP(ibcast, "MPI_Ibcast", MT_OP_ROOTED, one, 1, 0)
NBC_OP(ireduce, "MPI_Ireduce", MT_OP_ROOTED | MT_OP_REDUCTION, one, 1, 0)
NBC_OP(iallreduce, "MPI_Iallreduce", MT_OP_REDUCTION, one, 1, 0)
NBC_OP(igather, "MPI_Igather", MT_OP_ROOTED, per_rank, 1, 0)
NBC_OP(igatherv, "MPI_Igatherv", MT_OP_ROOTED, per_rank, 1, MT_OPT_VCOUNTS)
NBC_OP(iscatter, "MPI_Iscatter", MT_OP_ROOTED, per_rank, 1, 0)
NBC_OP(iscatterv, "MPI_Iscatterv", MT_OP_ROOTED, per_rank, 1, MT_OPT_VCOUNTS)
NBC_OP(iallgather, "MPI_Iallgather", 0, per_rank, 1, 0)
NBC_OP(iallgatherv, "MPI_Iallgatherv", 0, per_rank, 1, MT_OPT_VCOUNTS)
NBC_OP(ialltoall, "MPI_Ialltoall", 0, per_rank, 1, 0)
NBC_OP(ialltoallv, "MPI_Ialltoallv", 0, per_rank, 1, MT_OPT_VCOUNTS)
NBC_OP(ialltoallw, "MPI_Ialltoallw", MT_OP_BYTEDISPL, per_rank, 1, MT_OPT_VCOUNTS)
NBC_OP(ireduce_scatter, "MPI_Ireduce_scatter", MT_OP_REDUCTION, per_rank, 1, 0)
NBC_OP(ireduce_scatter_block, "MPI_Ireduce_scatter_block", MT_OP_REDUCTION, per_rank, 1, 0)
NBC_OP(iscan, "MPI_Iscan", MT_OP_REDUCTION, one, 1, 0)
NBC_OP(iexscan, "MPI_Iexscan", MT_OP_REDUCTION, one, 2, 0)

/* the synthetic ones: no data, no MPI call */
#define DELAY_OP(nm, POST, WAIT, DESC)                                                                              \
    static int c_##nm(mt_op_args_t *a) { return pure_call(a, POST, WAIT); }                                         \
    static int co_##nm(mt_op_args_t *a) { return overlap_call(a, POST, WAIT); }                                     \
    static int so_##nm(mt_op_args_t *a, char *err) { return overlap_setup(a, c_##nm, err); }                       \
    static const mt_op_t op_##nm = {.name = #nm, .mpi_name = DESC, .min_procs = 1,                                 \
                                    .flags = MT_OP_SYNTHETIC | MT_OP_NOSIZE, .blocks = one, .call = c_##nm,       \
                                    .family = "synthetic", .opts = MT_OPT_DELAY};                                  \
    static const mt_op_t op_##nm##_overlap = {.name = #nm "_overlap", .mpi_name = DESC " + compute",               \
                                              .min_procs = 1, .flags = MT_OP_SYNTHETIC | MT_OP_NOSIZE,             \
                                              .blocks = one, .call = co_##nm, .setup = so_##nm,                    \
                                              .teardown = overlap_teardown, .family = "synthetic",                 \
                                              .opts = MT_OPT_DELAY | MT_OPT_COMPUTE, .info = overlap_info};

DELAY_OP(idelay, p_idelay, w_idelay, "idelay (synthetic: progresses by itself)")
DELAY_OP(idelay_blocking, p_idelay_blocking, w_none, "idelay_blocking (synthetic: progresses in the post only)")

const mt_op_t *const mt_ops_nbc[] = {
    &op_ibarrier, &op_ibcast, &op_ireduce, &op_iallreduce, &op_igather, &op_igatherv, &op_iscatter,
    &op_iscatterv, &op_iallgather, &op_iallgatherv, &op_ialltoall, &op_ialltoallv, &op_ialltoallw, &op_ireduce_scatter,
    &op_ireduce_scatter_block, &op_iscan, &op_iexscan,
    &op_ibarrier_overlap, &op_ibcast_overlap, &op_ireduce_overlap, &op_iallreduce_overlap, &op_igather_overlap,
    &op_igatherv_overlap, &op_iscatter_overlap, &op_iscatterv_overlap, &op_iallgather_overlap,
    &op_iallgatherv_overlap, &op_ialltoall_overlap, &op_ialltoallv_overlap, &op_ialltoallw_overlap,
    &op_ireduce_scatter_overlap,
    &op_ireduce_scatter_block_overlap, &op_iscan_overlap, &op_iexscan_overlap,
    &op_idelay, &op_idelay_overlap, &op_idelay_blocking, &op_idelay_blocking_overlap,
    NULL,
};
