/* mpitempo-logp: LogP/LogGP parameters of a communicator (Culler et al. 1993;
 * Alexandrov et al. 1995), measured between rank 0 and every other rank (or
 * the last one) with the method of logp/logp.h, for the barrier study of
 * Hoefler et al. 2005 (`mpitempo barrier`). Writes DIR/logp.csv (every timing)
 * and DIR/meta.json with --outdir, else the meta.json document on stdout.
 * A pair that fails the sanity checks (L < 0, g < o_s) is reported with a
 * one-line error and exit code 3 after the files are written.
 * --check-barriers instead checks every barrier op (op/barrier/check.h) and
 * prints one JSON document; exit code 3 when any check failed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "logp/logp.h"
#include "op/barrier/check.h"
#include "run/run.h"

#define DEFAULT_CHECK_OPS                                                                                        \
    "barrier,barrier:central,barrier:combining:2,barrier:combining:3,barrier:combining:4,barrier:combining:5,"   \
    "barrier:fway:2,barrier:fway:3,barrier:fway:4,barrier:mcs,barrier:tournament,barrier:bst,"                  \
    "barrier:butterfly,barrier:pairwise,barrier:dissemination"

typedef struct logp_app {
    mt_logp_cfg_t cfg;
    int last_only;
    const mt_op_t *ops[64];
    int nops;
} logp_app_t;

static int check(mt_run_t *r, int np, char *err)
{
    const mt_params_t *p = &r->cli.p;
    logp_app_t *g = r->state = calloc(1, sizeof *g);
    if (!g) return mt_fail(err, MT_ENOMEM, "out of memory");
    g->cfg.nrep = mt_p_int(p, MTP_nrep);
    g->cfg.warmup = mt_p_int(p, MTP_warmup);
    g->cfg.train = (int)mt_p_int(p, MTP_train);
    const char *orm = mt_p_str(p, MTP_o_r_method);
    if (strcmp(orm, "probe") == 0) g->cfg.or_probe = 1;
    else if (strcmp(orm, "wait") == 0) g->cfg.or_probe = 0;
    else return mt_fail(err, MT_EINVAL, "invalid --o-r-method '%s' (allowed: probe, wait)", orm);
    const char *peers = mt_p_str(p, MTP_peers);
    if (strcmp(peers, "all") == 0) g->last_only = 0;
    else if (strcmp(peers, "last") == 0) g->last_only = 1;
    else return mt_fail(err, MT_EINVAL, "invalid --peers '%s' (allowed: all, last)", peers);
    int rc;
    if (mt_p_set(p, MTP_msizes) && mt_p_str(p, MTP_msizes)[0]) {
        if ((rc = mt_parse_size_list(mt_p_str(p, MTP_msizes), &g->cfg.msizes, &g->cfg.nsizes, err)) != MT_OK)
            return rc;
        if (g->cfg.nsizes > 64)
            return mt_fail(err, MT_EINVAL, "invalid --msizes '%s': %d sizes, at most 64 for G", mt_p_str(p, MTP_msizes),
                           g->cfg.nsizes);
        if (g->cfg.nsizes == 1)
            return mt_fail(err, MT_EINVAL, "invalid --msizes '%s': G is a slope and needs at least 2 sizes",
                           mt_p_str(p, MTP_msizes));
        for (int i = 0; i < g->cfg.nsizes; i++)
            if (g->cfg.msizes[i] > (1 << 30))
                return mt_fail(err, MT_EINVAL, "invalid message size %lld: at most 1 GiB",
                               (long long)g->cfg.msizes[i]);
    }
    const char *ops = mt_p_set(p, MTP_check_ops) && mt_p_str(p, MTP_check_ops)[0] ? mt_p_str(p, MTP_check_ops)
                                                                                   : DEFAULT_CHECK_OPS;
    char **names;
    int n;
    if ((rc = mt_split_list(ops, &names, &n, err)) != MT_OK) return rc;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        const mt_op_t *op = mt_op_lookup(names[i], err);
        if (!op) rc = MT_EINVAL;
        else if (!(op->flags & MT_OP_NOSIZE)) /* barriers, and "delay" (no barrier: the check must fail) */
            rc = mt_fail(err, MT_EINVAL, "invalid --check-ops item '%s': not a barrier op", names[i]);
        else if (g->nops < 64) g->ops[g->nops++] = op;
    }
    mt_free_list(names, n);
    if (rc == MT_OK && np == 1 && !r->cli.flag[0])
        rc = mt_fail(err, MT_EINVAL, "LogP needs a pair of ranks: run with at least 2 ranks");
    return rc;
}

static void check_json(mt_run_t *r, mt_json_t *j)
{
    logp_app_t *g = r->state;
    mt_json_key(j, "msizes_bytes");
    mt_json_arr_begin(j);
    for (int i = 0; i < g->cfg.nsizes; i++) mt_json_int(j, g->cfg.msizes[i]);
    mt_json_arr_end(j);
    mt_json_key(j, "check_ops");
    mt_json_arr_begin(j);
    for (int i = 0; i < g->nops; i++) mt_json_str(j, g->ops[i]->name);
    mt_json_arr_end(j);
}

/* --check-barriers: every op, one JSON document on stdout (rank 0) */
static int early(mt_run_t *r)
{
    if (!r->cli.flag[0]) return -1;
    const mt_params_t *p = &r->cli.p;
    mt_ctx_t *ctx = &r->ctx;
    char err[MT_ERRLEN];
    int bad = 0;
    mt_json_t j;
    /* the driver validates after this hook: the options are checked here */
    int rc0 = check(r, ctx->size, err);
    logp_app_t *g = r->state;
    if (rc0 == MT_OK) rc0 = mt_timer_open(mt_p_str(p, MTP_timer), &ctx->timer, err);
    if ((rc0 = mt_agree(ctx->comm, rc0, err)) != MT_OK) {
        if (ctx->rank == 0) fprintf(stderr, "%s: error: %s\n", r->app->prog, err);
        return 2;
    }
    if (ctx->rank == 0) {
        mt_json_init(&j, stdout);
        mt_json_obj_begin(&j);
        mt_json_kint(&j, "nprocs", ctx->size);
        mt_json_kint(&j, "calls", mt_p_int(p, MTP_check_calls));
        mt_json_knum(&j, "max_delay_s", mt_p_num(p, MTP_check_delay));
        mt_json_kstr(&j, "clock", "the timer on one host (CLOCK_MONOTONIC for monotonic): global for ranks on one host");
        mt_json_key(&j, "ops");
        mt_json_arr_begin(&j);
    }
    for (int i = 0; i < g->nops; i++) {
        mt_bar_check_t c;
        int rc = mt_bar_check(ctx->comm, &ctx->timer, g->ops[i], (int)mt_p_int(p, MTP_check_calls),
                              mt_p_num(p, MTP_check_delay), (uint64_t)mt_p_int(p, MTP_seed) + (uint64_t)i, &c, err);
        if (rc != MT_OK) {
            if (ctx->rank == 0) fprintf(stderr, "%s: error: %s\n", r->app->prog, err);
            return 2;
        }
        int ok = c.violations == 0 && c.mismatched == 0;
        bad += !ok;
        if (ctx->rank == 0) {
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "op", c.op->name);
            mt_json_kbool(&j, "ok", ok);
            mt_json_kint(&j, "violations", c.violations);
            mt_json_knum(&j, "min_slack_s", c.min_slack_s);
            mt_json_kint(&j, "mismatched", c.mismatched);
            mt_json_key(&j, "sent_per_call_min");
            if (c.counted) mt_json_int(&j, c.sent_min);
            else mt_json_null(&j);
            mt_json_key(&j, "sent_per_call_max");
            if (c.counted) mt_json_int(&j, c.sent_max);
            else mt_json_null(&j);
            mt_json_obj_end(&j);
        }
    }
    if (ctx->rank == 0) {
        mt_json_arr_end(&j);
        mt_json_kbool(&j, "ok", bad == 0);
        mt_json_obj_end(&j);
        fputc('\n', stdout);
        fflush(stdout);
        if (bad) fprintf(stderr, "%s: error: %d barrier op(s) failed the check\n", r->app->prog, bad);
    }
    return bad ? 3 : 0;
}

/* The ranks not in the current pair wait here. On real ranks they poll with 20 us naps, leaving the
 * CPU to the pair; under SMPI a simulated rank needs no CPU of its own and every nap is a wake-up of
 * the simulator (a 1024-rank run spent its host time in them), so it blocks in MPI_Barrier. */
static void sleepy_barrier(MPI_Comm comm)
{
    if (MT_SIMULATED) {
        mt_check_mpi(MPI_Barrier(comm), "MPI_Barrier");
        return;
    }
    MPI_Request req;
    int done = 0;
    struct timespec nap = {0, 20000};
    mt_check_mpi(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
    for (;;) {
        mt_check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) break;
        nanosleep(&nap, NULL);
    }
}

static const char *const qnames[MT_LOGP_NPARAM] = {"rtt", "o_s", "o_r", "train_1", "train_k"};

static void write_pair(mt_json_t *j, const mt_logp_pair_t *q, const mt_logp_cfg_t *c, int sane, const char *why)
{
    mt_json_obj_begin(j);
    mt_json_kint(j, "rank_a", q->a);
    mt_json_kint(j, "rank_b", q->b);
    mt_json_knum(j, "rtt_s", q->rtt);
    mt_json_knum(j, "rtt_iqr_s", q->rtt_iqr);
    mt_json_knum(j, "o_s_s", q->o_s);
    mt_json_knum(j, "o_s_iqr_s", q->o_s_iqr);
    mt_json_knum(j, "o_r_s", q->o_r);
    mt_json_knum(j, "o_r_iqr_s", q->o_r_iqr);
    mt_json_knum(j, "L_s", q->L);
    mt_json_knum(j, "g_s", q->g);
    mt_json_knum(j, "g_iqr_s", q->g_iqr);
    mt_json_key(j, "G_s_per_byte");
    if (isnan(q->G)) mt_json_null(j);
    else mt_json_num(j, q->G);
    mt_json_key(j, "rtt_by_size");
    mt_json_arr_begin(j);
    for (int i = 0; i < c->nsizes; i++) {
        mt_json_obj_begin(j);
        mt_json_kint(j, "msize", c->msizes[i]);
        mt_json_knum(j, "rtt_s", q->rtt_m[i]);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
    mt_json_kbool(j, "sane", sane);
    if (!sane) mt_json_kstr(j, "sanity_problem", why);
    mt_json_obj_end(j);
}

static double median_of(double *v, int n)
{
    double m, iq;
    mt_logp_median_iqr(v, n, &m, &iq);
    return m;
}

static int run(mt_run_t *r, char *err)
{
    logp_app_t *g = r->state;
    mt_ctx_t *ctx = &r->ctx;
    /* every timing includes about one read of the timer: measure its overhead (min of back-to-back
     * reads, Luecke et al. 2009) on each rank and subtract it, else L = RTT/2 - o_s - o_r is biased by
     * -1.5 reads, which on shared memory is a sizeable part of L */
    mt_timer_quality_t tq;
    mt_timer_study(&ctx->timer, 20000, &tq);
    g->cfg.timer_ov_s = tq.min_ov_s;
    double ov_max = 0;
    mt_check_mpi(MPI_Reduce(&tq.min_ov_s, &ov_max, 1, MPI_DOUBLE, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
    const mt_logp_cfg_t *c = &g->cfg;
    int np = ctx->size, me = ctx->rank;
    int first = g->last_only ? np - 1 : 1, npairs = np - first;
    int64_t n = c->nrep;
    double *samples = malloc(sizeof(double) * (size_t)(MT_LOGP_NPARAM * n));
    mt_logp_pair_t *pairs = calloc((size_t)(npairs > 0 ? npairs : 1), sizeof *pairs);
    int rc = samples && pairs ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory for %lld timings", (long long)n);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) return rc;
    FILE *csv = mt_run_file(r, "logp.csv");
    if (csv) fprintf(csv, "rank_a,rank_b,quantity,rep,value_s\n");
    int nbad = 0;
    char why[MT_ERRLEN] = "", first_why[MT_ERRLEN] = "";
    mt_json_t *j = NULL;
    for (int k = 0; k < npairs; k++) {
        int b = first + k;
        if (me == 0 || me == b) {
            rc = mt_logp_measure_pair(ctx->comm, 0, b, c, &ctx->timer, samples, &pairs[k], err);
            if (rc != MT_OK) mt_check_mpi(MPI_ERR_NO_MEM, err);
        }
        if (me == 0) {
            if (csv)
                for (int q = 0; q < MT_LOGP_NPARAM; q++)
                    for (int64_t i = 0; i < n; i++)
                        fprintf(csv, "0,%d,%s,%lld,%.10g\n", b, qnames[q], (long long)i, samples[q * n + i]);
            if (mt_run_progress(r))
                fprintf(stderr, "%s: [%d/%d] ranks 0-%d: RTT %.3f us, o_s %.3f us, o_r %.3f us, L %.3f us, g %.3f us\n",
                        r->app->prog, k + 1, npairs, b, pairs[k].rtt * 1e6, pairs[k].o_s * 1e6, pairs[k].o_r * 1e6,
                        pairs[k].L * 1e6, pairs[k].g * 1e6);
        }
        sleepy_barrier(ctx->comm);
    }
    if (me == 0) {
        j = mt_run_meta_begin(r, 1);
        double *v = malloc(sizeof(double) * (size_t)npairs);
        mt_json_t dummy, *jj = j ? j : &dummy;
        if (j) {
            mt_json_key(j, "logp_config");
            mt_json_obj_begin(j);
            mt_json_kint(j, "nrep", n);
            mt_json_kint(j, "warmup", c->warmup);
            mt_json_kint(j, "train", c->train);
            mt_json_kstr(j, "peers", g->last_only ? "last" : "all");
            mt_json_kint(j, "message_bytes", 4);
            mt_json_kstr(j, "o_r_method", c->or_probe ? "probe" : "wait");
            mt_json_knum(j, "timer_overhead_s", c->timer_ov_s);
            mt_json_knum(j, "timer_overhead_max_s", ov_max);
            mt_json_kstr(j, "method", "RTT ping-pong; o_s: time in MPI_Send; o_r: time in MPI_Recv of an arrived "
                                      "message; L = RTT/2 - o_s - o_r; g = (T(K) - T(1)) / (K - 1) of message "
                                      "trains; G = slope of RTT(m)/2 (least squares); every timing minus the "
                                      "timer's read overhead of its rank (timer_overhead_s: rank 0's)");
            mt_json_obj_end(j);
            mt_json_key(j, "pairs");
            mt_json_arr_begin(j);
        }
        for (int k = 0; k < npairs; k++) {
            int sane = mt_logp_sane(&pairs[k], why) == MT_OK;
            if (!sane && !nbad++) snprintf(first_why, sizeof first_why, "%s", why);
            if (j) write_pair(j, &pairs[k], c, sane, why);
        }
        if (j) mt_json_arr_end(j);
        /* the communicator's parameters: medians over the pairs */
        if (j && v) {
            mt_json_key(jj, "logp");
            mt_json_obj_begin(jj);
#define MED(field, key)                                                                                           \
    do {                                                                                                          \
        for (int k = 0; k < npairs; k++) v[k] = pairs[k].field;                                                   \
        mt_json_knum(jj, key, median_of(v, npairs));                                                              \
    } while (0)
            MED(L, "L_s");
            MED(o_s, "o_s_s");
            MED(o_r, "o_r_s");
            MED(g, "g_s");
            MED(rtt, "rtt_s");
            MED(o_s_iqr, "o_s_iqr_s");
            MED(o_r_iqr, "o_r_iqr_s");
            MED(g_iqr, "g_iqr_s");
            MED(rtt_iqr, "rtt_iqr_s");
            if (c->nsizes >= 2) MED(G, "G_s_per_byte");
            else {
                mt_json_key(jj, "G_s_per_byte");
                mt_json_null(jj);
            }
#undef MED
            mt_json_kint(jj, "pairs", npairs);
            mt_json_kbool(jj, "sane", nbad == 0);
            if (nbad) mt_json_kstr(jj, "sanity_problem", first_why);
            mt_json_obj_end(jj);
        }
        free(v);
        if (nbad) {
            fprintf(stderr, "%s: error: %s\n", r->app->prog, first_why);
            r->exit_code = 3;
        }
    }
    mt_check_mpi(MPI_Bcast(&r->exit_code, 1, MPI_INT, 0, ctx->comm), "MPI_Bcast");
    for (int k = 0; k < npairs; k++) free(pairs[k].rtt_m);
    free(pairs);
    free(samples);
    return MT_OK;
}

static void done(mt_run_t *r)
{
    logp_app_t *g = r->state;
    if (!g) return;
    free(g->cfg.msizes);
    free(g);
    r->state = NULL;
}

static void list(mt_json_t *j) { mt_op_write_list(j); }

static const mt_cli_flag_t flags[] = {
    {"check-barriers", NULL, "check every barrier op instead (entries vs exits, cross-matching, messages) and print JSON",
     -1},
    {NULL, NULL, NULL, -1}};
static const mt_choices_t choices[] = {{MTP_check_ops, NULL, NULL, "OPS"}, {-1, NULL, NULL, NULL}};
static const mt_result_file_t files[] = {{"logp.csv", 0}, {"meta.json", 0}, {NULL, 0}};

static const mt_app_t logp_app = {
    .prog = "mpitempo-logp",
    .id = MT_APP_LOGP,
    .kind = "logp",
    .about = "LogP/LogGP parameters (L, o_s, o_r, g, and G with --msizes) between rank 0 and the other ranks, for the "
             "barrier study of Hoefler et al. 2005; or, with --check-barriers, the correctness check of every barrier "
             "op.",
    .output = "write DIR/logp.csv and DIR/meta.json (atomically) instead of JSON on stdout",
    .choices = choices,
    .flags = flags,
    .files = files,
    .meta_on_stdout = 1,
    .list = list,
    .check = check,
    .check_json = check_json,
    .early = early,
    .run = run,
    .done = done,
};

int main(int argc, char **argv) { return mt_run_main(&logp_app, argc, argv); }
