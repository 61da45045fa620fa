/* mpitempo: Round-Time (Hunold and Carpen-Amarie 2018, Algorithm 5). Per experiment: estimate the
 * MPI_Bcast latency; then rounds until the time slice is used up or nrep valid
 * measurements exist: rank 0 picks start = now + B x latency on the global
 * clock and broadcasts it, every rank waits for it (already past at the first
 * look: invalid), measures one call, checks its time slice; the invalid and
 * out-of-time flags are allreduced every round. Invalid rounds are kept (valid
 * = 0) so that their number is visible; they do not count towards nrep.
 * Beyond the paper (--rt-adapt, on by default): the allreduce carries how late
 * the latest rank was, and after an invalid round the slack grows by twice that
 * (at most 1000 x latency), so that a rank that always receives the start time
 * late - a remaining clock offset, an oversubscribed node - does not invalidate
 * every round; every valid round takes 10% of the extra slack away again. With --no-rt-adapt the slack stays B x latency (Alg. 5 exactly).
 * runtime = max(end) - min(start) over ranks on the global clock. */
#include "base/mt_common.h"
#include "scheme/scheme.h"

#include <stdio.h>
#include <stdlib.h>

static int grow(double **ls, double **le, int **late, int *cap)
{
    int nc = *cap * 2;
    double *a = realloc(*ls, sizeof(double) * (size_t)nc);
    if (a) *ls = a;
    double *b = realloc(*le, sizeof(double) * (size_t)nc);
    if (b) *le = b;
    int *c = realloc(*late, sizeof(int) * (size_t)nc);
    if (c) *late = c;
    if (!a || !b || !c) return -1;
    *cap = nc;
    return 0;
}

typedef struct rt_cfg {
    double slack;        /* B: start = now + B x Bcast latency (>= 1) */
    int adapt;           /* grow the slack after an invalid round */
    double time_slice_s; /* time per experiment */
} rt_cfg_t;

static const int rt_params[] = {MTP_rt_slack, MTP_no_rt_adapt, MTP_time_slice, -1};

static int rt_configure(const mt_params_t *p, void *cfg, char *err)
{
    rt_cfg_t *c = cfg;
    c->slack = mt_p_num(p, MTP_rt_slack);
    c->adapt = !mt_p_bool(p, MTP_no_rt_adapt);
    c->time_slice_s = mt_p_num(p, MTP_time_slice);
    if (!(c->slack >= 1.0))
        return mt_fail(err, MT_EINVAL, "invalid --rt-slack '%s': B must be a number >= 1", mt_p_raw(p, MTP_rt_slack));
    if (!(c->time_slice_s > 0))
        return mt_fail(err, MT_EINVAL, "invalid --time-slice '%s': must be > 0", mt_p_raw(p, MTP_time_slice));
    return MT_OK;
}

static int rt_measure(mt_ctx_t *ctx, const void *cfg, const mt_op_t *op, mt_op_args_t *a, mt_meas_t *m, char *err)
{
    const rt_cfg_t *c = cfg;
    const mt_clock_t *g = ctx->gclock;
    int max_nrep = ctx->nrep;
    /* rounds that are all invalid cannot go on for ever: cap the record at
     * 4 x nrep + 1000 rounds (the time slice usually ends it much earlier) */
    int max_rounds = 4 * max_nrep + 1000;
    int cap = max_nrep + 16;
    double *ls = malloc(sizeof(double) * (size_t)cap), *le = malloc(sizeof(double) * (size_t)cap);
    int *late = malloc(sizeof(int) * (size_t)cap);
    if (!ls || !le || !late) {
        free(ls);
        free(le);
        free(late);
        return mt_fail(err, MT_ENOMEM, "out of memory for %d measurements", cap);
    }
    int (*call)(mt_op_args_t *) = op->call;
    mt_warmup(ctx, op, a);
    double lat = mt_bcast_latency(ctx);
    double base_slack = c->slack * lat, slack = base_slack, max_slack = 1000.0 * lat;
    int rounds = 0, nvalid = 0;
    double t_begin = mt_clock_now(g);
    for (;;) {
        double start = 0;
        if (ctx->rank == 0) start = mt_clock_now(g) + slack;
        int rc = MPI_Bcast(&start, 1, MPI_DOUBLE, 0, ctx->comm);
        if (rc != MPI_SUCCESS) mt_check_mpi(rc, "MPI_Bcast");
        double flags[2];
        flags[0] = mt_wait_until_late(g, start, ctx->oversubscribed);
        double t0 = mt_clock_now(g);
        rc = call(a);
        double t1 = mt_clock_now(g);
        if (rc != MPI_SUCCESS) mt_check_mpi(rc, op->mpi_name);
        flags[1] = (t1 - t_begin) >= c->time_slice_s ? 1.0 : 0.0;
        ls[rounds] = t0;
        le[rounds] = t1;
        double out[2];
        rc = MPI_Allreduce(flags, out, 2, MPI_DOUBLE, MPI_MAX, ctx->comm);
        if (rc != MPI_SUCCESS) mt_check_mpi(rc, "MPI_Allreduce");
        late[rounds] = out[0] > 0;
        rounds++;
        if (out[0] == 0) {
            nvalid++;
            /* back towards B x latency once rounds are on time again (a single
             * preempted round must not slow every later round down) */
            if (c->adapt && slack > base_slack) slack = base_slack + 0.9 * (slack - base_slack);
        } else if (c->adapt && slack < max_slack) {
            slack += 2.0 * out[0];
            if (slack > max_slack) slack = max_slack;
        }
        if (out[1] || nvalid == max_nrep || rounds == max_rounds) break;
        if (rounds == cap && grow(&ls, &le, &late, &cap) != 0) {
            fprintf(stderr, "%s: error: out of memory after %d rounds\n", mt_prog(), rounds);
            MPI_Abort(ctx->comm, 5);
        }
        mt_cache_next_any(ctx, a);
    }
    m->info.elapsed_s = mt_clock_now(g) - t_begin;
    m->info.lat_s = lat;
    m->info.window_s = slack; /* for Round-Time: the slack at the end (B x latency unless adapted) */
    int rc = mt_global_finish(ctx, ls, le, late, rounds, m, err);
    free(ls);
    free(le);
    free(late);
    return rc;
}

static void rt_write_meta(mt_json_t *j, const void *cfg, const mt_ctx_t *ctx)
{
    const rt_cfg_t *c = cfg;
    mt_json_knum(j, "rt_slack_B", c->slack);
    mt_json_kbool(j, "rt_adapt", c->adapt);
    mt_json_knum(j, "time_slice_s", c->time_slice_s);
    mt_json_kint(j, "max_nrep", ctx->nrep);
}

static void rt_write_exp_meta(mt_json_t *j, const mt_meas_info_t *m)
{
    mt_global_write_exp_meta(j, m);
    mt_json_knum(j, "slack_end_s", m->window_s);
}

const mt_scheme_t mt_scheme_roundtime = {
    .name = "roundtime",
    .desc = "Round-Time (Hunold and Carpen-Amarie 2018, Alg. 5): start = now + B x Bcast latency, broadcast; late "
            "ranks invalidate the round; until the time slice or nrep valid; runtime = max(end) - min(start) on the "
            "global clock",
    .needs_global_clock = 1,
    .params = rt_params,
    .cfg_size = sizeof(rt_cfg_t),
    .configure = rt_configure,
    .measure = rt_measure,
    .write_meta = rt_write_meta,
    .write_exp_meta = rt_write_exp_meta,
    .few_valid_advice = "; try a larger --rt-slack or --time-slice",
};
