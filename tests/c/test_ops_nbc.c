/* mpitempo: the truth of the non-blocking collective ops (op_nbc.c), counted by
 * MPI itself (op_count.h):
 *  - every i-op and _overlap op posts exactly one non-blocking collective of its
 *    MPI function per call, completes it with one MPI_Wait, sends no point-to-point
 *    message of ours, and its post declares the buffers of the IMB convention
 *    (msize per block; --vcounts for the vector forms);
 *  - the info of the overlap ops (compute target, recorded computes, pure time);
 *  - the calibrated compute takes the time it claims (--overlap-compute 200us:
 *    median within 10%; a loose correctness bound that an overloaded machine
 *    can break, so it is tried up to 3 times);
 *  - the overlap method on a known truth: D = 300 us, OSU's formula
 *    max(0, 100 (1 - (t_overall - t_compute) / t_pure)) on medians of 20 calls:
 *    idelay_overlap >= 90%, idelay_blocking_overlap <= 10%;
 *  - an overlap op without a timer is refused by setup in one line. */
#include "mt_test.h"
#include "op_count.h"

#include "base/mt_common.h"
#include "timer/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static mt_timer_inst_t timer;

enum { NNBC = 17 };
static const char *const nbc_names[NNBC] = {
    "ibarrier",  "ibcast",     "ireduce",    "iallreduce", "igather",         "igatherv",
    "iscatter",  "iscatterv",  "iallgather", "iallgatherv", "ialltoall",      "ialltoallv",
    "ireduce_scatter", "ireduce_scatter_block", "iscan", "iexscan", "ialltoallw",
};

/* The bytes this rank's post of op k declares to send (*sb) and receive (*rb),
 * derived from the op's definition: block c elements of 1 byte (MPI_BYTE), root 0,
 * v[] the per-rank blocks (v[rank] this rank's own). */
static void expect_bytes(int k, long long c, const int *v, long long *sb, long long *rb)
{
    long long p = size, sum = 0;
    int root = rank == 0;
    for (int i = 0; i < size; i++) sum += v[i];
    switch (k) {
    case 0: *sb = 0; *rb = 0; break;                                  /* ibarrier */
    case 1: *sb = root ? c : 0; *rb = root ? 0 : c; break;            /* ibcast */
    case 2: *sb = c; *rb = root ? c : 0; break;                       /* ireduce */
    case 3: case 14: case 15: *sb = c; *rb = c; break;                /* iallreduce, iscan, iexscan */
    case 4: *sb = c; *rb = root ? c * p : 0; break;                   /* igather */
    case 5: *sb = v[rank]; *rb = root ? sum : 0; break;               /* igatherv */
    case 6: *sb = root ? c * p : 0; *rb = c; break;                   /* iscatter */
    case 7: *sb = root ? sum : 0; *rb = v[rank]; break;               /* iscatterv */
    case 8: *sb = c; *rb = c * p; break;                              /* iallgather */
    case 9: *sb = v[rank]; *rb = sum; break;                          /* iallgatherv */
    case 10: *sb = c * p; *rb = c * p; break;                         /* ialltoall */
    case 11: case 16: *sb = sum; *rb = p * v[rank]; break;           /* ialltoallv, ialltoallw */
    case 12: case 13: *sb = c * p; *rb = c; break;                    /* ireduce_scatter(_block) */
    default: *sb = *rb = -1;
    }
}

/* the max over ranks of x, and whether x is the same on every rank */
static double max_all(double x)
{
    double m;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}
static int same_all(double x)
{
    double lo, hi;
    MPI_Allreduce(&x, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&x, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}
static int all_true(int x)
{
    int r;
    MPI_Allreduce(&x, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return r;
}

/* One op counted per call: 10 calls after 2 warm-ups at 64 B. */
static void check_counts(const char *name, int k, const mt_op_opts_t *o, int vskewed)
{
    char err[MT_ERRLEN];
    mt_cnt_t c;
    mt_op_info_t info;
    const mt_op_t *op = mt_op_find(name);
    CHECK(op != NULL);
    if (!op) return;
    int rc = mt_cnt_run(name, 64, o, 2, 10, &c, &info, err);
    CHECK(rc == MT_OK);
    if (rc != MT_OK) {
        fprintf(stderr, "%s: %s\n", name, err);
        return;
    }
    /* exactly one non-blocking collective of the op's MPI function, one wait, nothing else of ours */
    CHECK(c.nb_colls == 10 && mt_cnt_nb_of(&c, op->mpi_name) == 10 && c.waits == 10);
    CHECK(c.sent_msgs == 0 && c.recv_msgs == 0 && c.rma_ops == 0 && c.rma_syncs == 0);
    CHECK(c.persist_starts == 0 && c.neighbor == 0 && c.colls == 0);
    /* the buffers it declares (per call) */
    int *v = malloc(sizeof(int) * (size_t)size), *d = malloc(sizeof(int) * (size_t)size);
    long long count = (op->flags & MT_OP_NOSIZE) ? 0 : 64;
    mt_op_vcounts(vskewed && (op->opts & MT_OPT_VCOUNTS) ? MT_VCOUNTS_SKEWED : MT_VCOUNTS_UNIFORM, (int)count, size,
                  v, d);
    long long sb, rb;
    expect_bytes(k, count, v, &sb, &rb);
    if (c.nb_sbytes != 10 * sb || c.nb_rbytes != 10 * rb)
        fprintf(stderr, "%s rank %d: declared %lld/%lld bytes per call, expected %lld/%lld\n", name, rank,
                c.nb_sbytes / 10, c.nb_rbytes / 10, sb, rb);
    CHECK(c.nb_sbytes == 10 * sb && c.nb_rbytes == 10 * rb);
    free(v);
    free(d);
    /* info: no bandwidth; the overlap keys for the _overlap ops */
    CHECK(info.bytes == 0 && info.msgs == 0);
    if (!(op->opts & MT_OPT_COMPUTE)) {
        CHECK(!info.overlap);
        return;
    }
    CHECK(info.overlap == 1);
    CHECK(info.compute_target_s == o->compute_s && info.pure_s == 0);
    CHECK(info.compute_calls == 12LL * size && info.compute_unrecorded == 0); /* the warm-ups compute too */
    CHECK(info.compute_min_s > 0 && info.compute_min_s <= info.compute_median_s &&
          info.compute_median_s <= info.compute_max_s);
    CHECK(same_all(info.compute_median_s) && same_all(info.compute_max_s));
}

/* Prepare name with o and this rank's delay, time `calls` calls (each after a
 * barrier, after 3 warm-ups), return the max over ranks of the per-rank medians. */
static int time_op(const char *name, const mt_op_opts_t *o, double delay, int calls, double *med, mt_op_info_t *info,
                   char *err)
{
    const mt_op_t *op = mt_op_lookup(name, err);
    if (!op) return MT_EINVAL;
    mt_op_args_t a;
    mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, &timer, o);
    a.delay_s = delay;
    int rc = mt_op_prepare(op, &a, 64, err);
    if (rc != MT_OK) return rc;
    double *t = malloc(sizeof(double) * (size_t)calls);
    for (int i = -3; i < calls; i++) {
        MPI_Barrier(a.comm);
        int64_t t0 = timer.t->now();
        op->call(&a);
        int64_t t1 = timer.t->now();
        if (i >= 0) t[i] = mt_ticks_to_s(&timer, t1 - t0);
    }
    for (int i = 1; i < calls; i++) /* insertion sort: median */
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    *med = max_all(calls % 2 ? t[calls / 2] : 0.5 * (t[calls / 2 - 1] + t[calls / 2]));
    free(t);
    memset(info, 0, sizeof *info);
    if (op->info) op->info(&a, info);
    mt_op_release(&a);
    return MT_OK;
}

/* OSU's overlap (print_stats_nbc, osu_util_mpi.c) */
static double osu_overlap(double overall, double compute, double pure)
{
    return fmax(0.0, 100.0 * (1.0 - (overall - compute) / pure));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char err[MT_ERRLEN];
    CHECK(mt_timer_open("monotonic", &timer, err) == MT_OK);
    mt_op_opts_t o = mt_cnt_default_opts();

    /* 1. counts and declared buffers: the 17 i-ops and their _overlap forms (compute 5 us given) */
    mt_op_opts_t oc = o;
    oc.compute_s = 5e-6;
    for (int k = 0; k < NNBC; k++) {
        char ov[64];
        snprintf(ov, sizeof ov, "%s_overlap", nbc_names[k]);
        check_counts(nbc_names[k], k, &o, 0);
        check_counts(ov, k, &oc, 0);
    }
    /* the vector forms with --vcounts skewed: each rank's own block is counts[rank] */
    mt_op_opts_t os = o, osc = oc;
    os.vcounts = osc.vcounts = MT_VCOUNTS_SKEWED;
    for (int k = 0; k < NNBC; k++) {
        const mt_op_t *op = mt_op_find(nbc_names[k]);
        if (!op || !(op->opts & MT_OPT_VCOUNTS)) continue;
        char ov[64];
        snprintf(ov, sizeof ov, "%s_overlap", nbc_names[k]);
        check_counts(nbc_names[k], k, &os, 1);
        check_counts(ov, k, &osc, 1);
    }
    /* the synthetic ops make no MPI call */
    {
        mt_cnt_t c;
        mt_op_info_t info;
        const char *syn[] = {"idelay", "idelay_overlap", "idelay_blocking", "idelay_blocking_overlap"};
        for (int i = 0; i < 4; i++) {
            CHECK(mt_cnt_run(syn[i], 0, &oc, 1, 5, &c, &info, err) == MT_OK);
            CHECK(c.nb_colls == 0 && c.waits == 0 && c.sent_msgs == 0 && c.recv_msgs == 0);
            CHECK(info.overlap == (strstr(syn[i], "_overlap") != NULL));
        }
    }

    /* --overlap-tests 4 (OSU's -t 4): 4 MPI_Test per compute of the MPI ops, recorded apart; none in the
     * pure ops and the synthetic ones; the meta keys */
    {
        mt_cnt_t c;
        mt_op_info_t info;
        mt_op_opts_t ot = oc;
        ot.overlap_tests = 4;
        CHECK(mt_cnt_run("iallreduce_overlap", 64, &ot, 2, 10, &c, &info, err) == MT_OK);
        CHECK(c.nb_colls == 10 && c.tests == 40 && info.tests == 4 && info.test_median_s > 0);
        CHECK(same_all(info.test_median_s) && info.compute_median_s > 0);
        CHECK(mt_cnt_run("iallreduce", 64, &ot, 2, 10, &c, &info, err) == MT_OK && c.tests == 0 && info.tests == 0);
        CHECK(mt_cnt_run("idelay_overlap", 0, &ot, 1, 5, &c, &info, err) == MT_OK && c.tests == 0 && info.tests == 0);
        CHECK(mt_cnt_run("iallreduce_overlap", 64, &oc, 2, 10, &c, &info, err) == MT_OK && c.tests == 0 &&
              info.tests == 0 && info.test_median_s == 0);
        const mt_op_t *op = mt_op_find("ibcast_overlap");
        CHECK(op && (op->opts & MT_OPT_TESTS) && !(mt_op_find("ibcast")->opts & MT_OPT_TESTS));
    }

    /* 2. auto: the target is the pure time measured in setup, the same on every rank */
    {
        mt_cnt_t c;
        mt_op_info_t info;
        CHECK(mt_cnt_run("iallreduce_overlap", 64, &o, 2, 10, &c, &info, err) == MT_OK);
        CHECK(info.overlap == 1 && info.pure_s > 0 && info.compute_target_s == info.pure_s);
        CHECK(same_all(info.pure_s) && same_all(info.compute_target_s));
        CHECK(c.nb_colls == 10 && c.waits == 10);
    }

    /* 3. the calibrated compute takes the time it claims: 200 us, median within 10%
     *    (can fail on an overloaded machine: tried up to 3 times) */
    {
        mt_op_opts_t o2 = o;
        o2.compute_s = 200e-6;
        int ok = 0;
        for (int attempt = 0; attempt < 3 && !ok; attempt++) {
            mt_cnt_t c;
            mt_op_info_t info;
            int rc = mt_cnt_run("ibarrier_overlap", 0, &o2, 0, 20, &c, &info, err);
            CHECK(rc == MT_OK);
            ok = all_true(rc == MT_OK && fabs(info.compute_median_s - 200e-6) <= 20e-6);
            if (!ok && rank == 0)
                fprintf(stderr, "calibration attempt %d: median compute %.1f us for 200 us\n", attempt + 1,
                        info.compute_median_s * 1e6);
        }
        CHECK(ok);
    }

    /* 4. the overlap method on a known truth: D = 300 us, auto compute (= the pure time) */
    {
        const double D = 300e-6;
        double pure, overall;
        mt_op_info_t ip, io;
        CHECK(time_op("idelay", &o, D, 20, &pure, &ip, err) == MT_OK);
        CHECK(time_op("idelay_overlap", &o, D, 20, &overall, &io, err) == MT_OK);
        double ov = osu_overlap(overall, io.compute_median_s, pure);
        if (rank == 0)
            printf("# idelay: pure %.1f us, overall %.1f us, compute %.1f us (target %.1f): overlap %.1f%%\n",
                   pure * 1e6, overall * 1e6, io.compute_median_s * 1e6, io.compute_target_s * 1e6, ov);
        CHECK(ov >= 90);
        CHECK(io.pure_s >= D && io.pure_s < 1.1 * D);
        CHECK(time_op("idelay_blocking", &o, D, 20, &pure, &ip, err) == MT_OK);
        CHECK(time_op("idelay_blocking_overlap", &o, D, 20, &overall, &io, err) == MT_OK);
        ov = osu_overlap(overall, io.compute_median_s, pure);
        if (rank == 0)
            printf("# idelay_blocking: pure %.1f us, overall %.1f us, compute %.1f us: overlap %.1f%%\n", pure * 1e6,
                   overall * 1e6, io.compute_median_s * 1e6, ov);
        CHECK(ov <= 10);
    }

    /* 5. refused by setup in one line: an overlap op without a timer */
    {
        mt_op_args_t a;
        mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, NULL, &oc);
        err[0] = '\0';
        CHECK(mt_op_prepare(mt_op_find("iallreduce_overlap"), &a, 64, err) != MT_OK);
        CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
    }

    MPI_Finalize();
    if (rank == 0) TEST_DONE();
    return mt_test_failures ? 1 : 0;
}
