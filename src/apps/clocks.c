/* mpitempo-clocks: evaluates clock-sync algorithms in one job (Hunold and
 * Carpen-Amarie 2018, Algorithm 6 and Fig. 3). For every spec: synchronise,
 * then measure the offset of every rank's global clock to rank 0's right away
 * and after each wait time. One JSON array, one object per algorithm x wait
 * time (docs/clocks.md): on stdout, or with --outdir in DIR/clocks.json beside
 * DIR/meta.json. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "clock/session.h"
#include "run/run.h"

typedef struct clocks {
    char **specs;               /* as given (split) */
    mt_sync_spec_t *parsed;
    int nspec;
    double *waits;              /* ascending, unique */
    int nwait;
    const mt_offset_alg_t *coff;
} clocks_t;

/* --wait "0,1,10": seconds, ascending and unique */
static int parse_waits(const char *s, double **out, int *n, char *err)
{
    char **items;
    int ni, rc;
    if ((rc = mt_split_list(s, &items, &ni, err)) != MT_OK) return rc; /* the parser checked the list */
    double *v = malloc(sizeof(double) * (size_t)ni);
    if (!v) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int i = 0; i < ni && rc == MT_OK; i++) {
        char *end = NULL;
        errno = 0;
        v[i] = strtod(items[i], &end);
        if (end == items[i] || *end || errno == ERANGE || !isfinite(v[i]))
            rc = mt_fail(err, MT_EINVAL, "invalid --wait '%s': '%s' is not a number of seconds", s, items[i]);
        else if (v[i] < 0)
            rc = mt_fail(err, MT_EINVAL, "invalid --wait '%s': wait times must be >= 0 (got %s)", s, items[i]);
        else if (v[i] > 86400)
            rc = mt_fail(err, MT_EINVAL, "invalid --wait '%s': wait times must be at most 86400 s", s);
    }
    mt_free_list(items, ni);
    if (rc != MT_OK) {
        free(v);
        return rc;
    }
    qsort(v, (size_t)ni, sizeof(double), mt_cmp_double);
    int k = 0;
    for (int i = 0; i < ni; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    *out = v;
    *n = k;
    return MT_OK;
}

static int check(mt_run_t *r, int np, char *err)
{
    const mt_params_t *p = &r->cli.p;
    clocks_t *c = r->state = calloc(1, sizeof *c);
    if (!c) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = mt_sync_spec_split(mt_p_str(p, MTP_algorithms), &c->specs, &c->nspec, err);
    if (rc == MT_OK && !(c->parsed = calloc((size_t)c->nspec, sizeof *c->parsed)))
        rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int i = 0; i < c->nspec && rc == MT_OK; i++) rc = mt_sync_spec_parse(c->specs[i], &c->parsed[i], err);
    for (int i = 1; i < c->nspec && rc == MT_OK; i++) { /* the same sync twice would be pooled as one */
        char a[1024], b[1024];
        mt_sync_spec_format(&c->parsed[i], a, sizeof a);
        for (int k = 0; k < i && rc == MT_OK; k++) {
            mt_sync_spec_format(&c->parsed[k], b, sizeof b);
            if (strcmp(a, b) == 0)
                rc = mt_fail(err, MT_EINVAL,
                             "invalid --algorithms '%s': '%s' and '%s' are the same spec (%s); give each once "
                             "(more syncs with more mpiruns)", mt_p_str(p, MTP_algorithms), c->specs[k], c->specs[i], a);
        }
    }
    if (rc == MT_OK) rc = parse_waits(mt_p_str(p, MTP_wait), &c->waits, &c->nwait, err);
    if (rc == MT_OK && !(c->coff = mt_offset_find(mt_p_str(p, MTP_check_offset)))) {
        char names[128];
        mt_offset_names(names, sizeof names);
        rc = mt_fail(err, MT_EINVAL, "unknown --check-offset '%s' (allowed: %s)", mt_p_str(p, MTP_check_offset), names);
    }
    mt_sim_t sim; /* the settings' syntax, from the options or MPITEMPO_SIM_* (each rank's values come in run) */
    if (rc == MT_OK)
        rc = mt_sim_from_env(mt_p_str(p, MTP_sim_offsets), mt_p_str(p, MTP_sim_drifts), mt_p_str(p, MTP_sim_random), 0,
                             np > 0 ? np : 1, &sim, err);
    return rc;
}

static void check_json(mt_run_t *r, mt_json_t *j)
{
    clocks_t *c = r->state;
    mt_json_key(j, "specs");
    mt_json_arr_begin(j);
    for (int i = 0; i < c->nspec; i++) {
        char buf[1024];
        mt_sync_spec_format(&c->parsed[i], buf, sizeof buf);
        mt_json_obj_begin(j);
        mt_json_kstr(j, "given", c->specs[i]);
        mt_json_kstr(j, "canonical", buf);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
    mt_json_key(j, "wait_s");
    mt_json_arr_begin(j);
    for (int i = 0; i < c->nwait; i++) mt_json_num(j, c->waits[i]);
    mt_json_arr_end(j);
}

static void list(mt_json_t *j)
{
    mt_json_key(j, "algorithms");
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_nsync_algs; i++) {
        const mt_sync_alg_t *a = mt_sync_algs[i];
        mt_sync_spec_t s;
        char buf[512], err[MT_ERRLEN];
        mt_sync_spec_parse(a->name, &s, err);
        mt_sync_spec_format(&s, buf, sizeof buf);
        mt_json_obj_begin(j);
        mt_json_kstr(j, "name", a->name);
        mt_json_kstr(j, "desc", a->desc);
        mt_json_kstr(j, "defaults", buf);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
    mt_json_key(j, "offset_algorithms");
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_noffset_algs; i++) mt_json_str(j, mt_offset_algs[i]->name);
    mt_json_arr_end(j);
}

/* per-rank facts gathered to rank 0 after each sync */
enum { F_DRIFT, F_TRUE_DRIFT, F_SLOPE_STATE, F_FIT_SLOPE, F_FIT_SE, F_FIT_WINDOW, F_LREF, F_LCLIENT, F_MSGS,
       F_OFFSETS, F_DEPTH, F_DURATION, F_PREEMPTED, F_SPREAD, F_MEASURED, F_SPREAD_SUM, F_WINDOWS,
       F_FIT_POINTS, F_FIT_CI, F_FIT_STOP, F_UNRESOLVED, F_REF_BELOW, F_UNC, F_REFITS, NF };

static void facts_of(const mt_sync_result_t *res, const mt_sim_t *sim, double d0, double *f)
{
    f[F_DRIFT] = mt_clock_drift(&res->clock);
    /* o(t_c) = t_c - t_0 for sim clocks t = T (1 + d) + off: slope 1 - (1 + d0) / (1 + dc) */
    f[F_TRUE_DRIFT] = sim->on ? 1.0 - (1.0 + d0) / (1.0 + sim->drift) : 0.0;
    f[F_SLOPE_STATE] = res->st.slope_state;
    f[F_FIT_SLOPE] = res->st.fit_slope;
    f[F_FIT_SE] = res->st.fit_slope_se;
    f[F_FIT_WINDOW] = res->st.fit_window_s;
    f[F_WINDOWS] = res->st.slope_windows;
    f[F_FIT_POINTS] = res->st.fit_points;
    f[F_FIT_CI] = res->st.fit_ci_ppm;
    f[F_FIT_STOP] = res->st.fit_stop;
    f[F_LREF] = res->st.learn_ref;
    f[F_LCLIENT] = res->st.learn_client;
    f[F_MSGS] = (double)res->st.msgs_sent;
    f[F_OFFSETS] = res->st.offsets;
    f[F_DEPTH] = res->clock.depth;
    f[F_DURATION] = res->duration_s;
    f[F_PREEMPTED] = res->st.rtt_preempted;
    f[F_SPREAD] = res->st.spread_max_s;
    f[F_MEASURED] = res->st.rtt_measured;
    f[F_SPREAD_SUM] = res->st.spread_sum_s;
    f[F_UNRESOLVED] = res->st.slope_unresolved;
    f[F_REF_BELOW] = res->st.ref_below;
    f[F_UNC] = res->st.drift_unc + res->st.drift_unc_ref;
    f[F_REFITS] = res->st.refits;
}

static int below_accuracy(const double *fr)
{
    return mt_meanrtt_below_accuracy((int)fr[F_MEASURED], (int)fr[F_PREEMPTED], fr[F_SPREAD_SUM]);
}

/* the clock of the rank is below its stated accuracy for any reason (mt_sync_below_accuracy) */
static int clock_below_accuracy(const double *fr)
{
    return below_accuracy(fr) || fr[F_UNRESOLVED] != 0 || fr[F_REF_BELOW] != 0;
}

/* rank 0: the objects of one spec, one per wait time */
static void write_spec(mt_run_t *r, mt_json_t *j, int s, const mt_check_t *chk, const double *facts,
                       const mt_gclock_t *gc)
{
    clocks_t *c = r->state;
    int size = r->ctx.size;
    char canon[1024];
    mt_sync_spec_format(&c->parsed[s], canon, sizeof canon);
    double dur = 0, spread = 0;
    int preempted = 0, below = 0, unresolved = 0, inherited = 0;
    for (int q = 0; q < size; q++) {
        if (facts[q * NF + F_DURATION] > dur) dur = facts[q * NF + F_DURATION];
        preempted += below_accuracy(facts + (size_t)q * NF);
        below += clock_below_accuracy(facts + (size_t)q * NF);
        unresolved += facts[q * NF + F_UNRESOLVED] != 0;
        inherited += facts[q * NF + F_REF_BELOW] != 0;
        if (facts[q * NF + F_SPREAD] > spread) spread = facts[q * NF + F_SPREAD];
    }
    if (preempted)
        fprintf(stderr, "%s: warning: %s: Mean-RTT-Offset saw preempted round trips on %d rank(s) (more than %.0f%% "
                        "of a rank's measurements with round trips over %.3g us beyond the fastest; up to %.3g us): "
                        "this sync is below its stated accuracy (oversubscribed or loaded ranks; offset=skampi uses minima)\n",
                mt_prog(), c->specs[s], preempted, 100 * MT_MEANRTT_MAX_PREEMPTED, 2 * MT_MEANRTT_TOL_S * 1e6,
                spread * 1e6);
    /* the horizon: the sync -> the last check (the largest wait time) */
    double horizon = c->nwait > 0 ? c->waits[c->nwait - 1] : 0;
    if (unresolved || inherited)
        fprintf(stderr, "%s: warning: %s: the clocks of %d rank(s) are below their stated accuracy: the drift not "
                        "known to within %.3g ppm (%.3g us over the horizon of %.3g s; slope_unresolved) on %d, the "
                        "error of the clock they were synchronised to inherited on %d\n",
                mt_prog(), c->specs[s], below, mt_drift_bound(horizon) * 1e6, MT_SYNC_ACCURACY_S * 1e6,
                horizon > MT_HORIZON_MIN_S ? horizon : MT_HORIZON_MIN_S, unresolved, inherited);
    double end_mx = 0, end_md = 0;
    if (c->nwait > 0) mt_check_summary(chk, c->nwait - 1, &end_mx, &end_md);
    for (int w = 0; w < c->nwait; w++) {
        double mx, md;
        mt_check_summary(chk, w, &mx, &md);
        mt_json_obj_begin(j);
        mt_json_kstr(j, "algorithm", c->specs[s]);
        mt_json_kstr(j, "spec", canon);
        mt_json_kint(j, "nprocs", size);
        mt_json_kint(j, "mpirun", r->cli.run_index);
        mt_json_kstr(j, "timer", r->ctx.timer.t->name);
        mt_json_kbool(j, "simulated", gc->sim.on);
        mt_json_knum(j, "wait_s", c->waits[w]);
        mt_json_knum(j, "sync_duration_s", dur);
        mt_json_knum(j, "max_abs_offset_s", mx);
        mt_json_knum(j, "median_abs_offset_s", md);
        mt_json_kint(j, "checked_ranks", chk->nsample);
        mt_json_kstr(j, "check_offset", c->coff->name);
        mt_json_kint(j, "check_pp", mt_p_int(&r->cli.p, MTP_check_pp));
        mt_json_kint(j, "rounds_root", (int64_t)facts[F_LREF]);
        mt_json_kint(j, "rtt_preempted_ranks", preempted);
        mt_json_knum(j, "rtt_spread_max_s", spread);
        mt_json_kint(j, "below_accuracy_ranks", below);
        /* the horizon-based drift bound and the error measured at the end (the last wait time) */
        mt_json_knum(j, "horizon_s", horizon);
        mt_json_knum(j, "drift_bound_ppm", mt_drift_bound(horizon) * 1e6);
        mt_json_knum(j, "end_max_abs_offset_s", end_mx);
        mt_json_kbool(j, "sync_inaccurate", below > 0 || end_mx > MT_SYNC_ACCURACY_S);
        mt_json_key(j, "per_rank");
        mt_json_arr_begin(j);
        for (int q = 0; q < size; q++) {
            const double *fr = facts + (size_t)q * NF;
            double off = q == 0 ? 0.0 : NAN;
            for (int i = 0; i < chk->nsample; i++)
                if (chk->sample[i] == q) off = chk->offset_s[(size_t)w * chk->nsample + i];
            mt_json_obj_begin(j);
            mt_json_kint(j, "rank", q);
            mt_json_knum(j, "offset_s", off);
            mt_json_knum(j, "drift_ppm", fr[F_DRIFT] * 1e6);
            if (gc->sim.on) {
                mt_json_knum(j, "true_drift_ppm", fr[F_TRUE_DRIFT] * 1e6);
                mt_json_knum(j, "sim_offset_s", gc->simall[2 * q]);
                mt_json_knum(j, "sim_drift_ppm", gc->simall[2 * q + 1] * 1e6);
            }
            int ss = (int)fr[F_SLOPE_STATE];
            mt_json_kstr(j, "slope", ss == MT_SLOPE_KEPT ? "kept" : ss == MT_SLOPE_DROPPED ? "dropped" : "none");
            if (ss != MT_SLOPE_NONE) {
                mt_json_knum(j, "fit_slope_ppm", fr[F_FIT_SLOPE] * 1e6);
                mt_json_knum(j, "fit_slope_se_ppm", fr[F_FIT_SE] * 1e6);
                mt_json_knum(j, "fit_window_s", fr[F_FIT_WINDOW]);
                mt_json_kint(j, "slope_windows", (int64_t)fr[F_WINDOWS]);
                mt_json_kint(j, "fit_points", (int64_t)fr[F_FIT_POINTS]);
                mt_json_knum(j, "fit_ci_ppm", fr[F_FIT_CI]);
                int fs = (int)fr[F_FIT_STOP];
                mt_json_kstr(j, "fit_stop", fs == MT_STOP_CI ? "ci" : fs == MT_STOP_MAX ? "window" : "fixed");
            }
            mt_json_kint(j, "learn_ref", (int64_t)fr[F_LREF]);
            mt_json_kint(j, "learn_client", (int64_t)fr[F_LCLIENT]);
            mt_json_kint(j, "msgs_sent", (int64_t)fr[F_MSGS]);
            mt_json_kint(j, "offset_measurements", (int64_t)fr[F_OFFSETS]);
            mt_json_kint(j, "model_depth", (int64_t)fr[F_DEPTH]);
            mt_json_kint(j, "rtt_measurements", (int64_t)fr[F_MEASURED]);
            mt_json_kint(j, "rtt_preempted", (int64_t)fr[F_PREEMPTED]);
            mt_json_kbool(j, "rtt_below_accuracy", below_accuracy(fr));
            mt_json_kbool(j, "slope_unresolved", fr[F_UNRESOLVED] != 0);
            mt_json_kbool(j, "ref_below_accuracy", fr[F_REF_BELOW] != 0);
            mt_json_kbool(j, "below_accuracy", clock_below_accuracy(fr));
            mt_json_knum(j, "drift_unc_ppm", fr[F_UNC] * 1e6);
            mt_json_kint(j, "refits", (int64_t)fr[F_REFITS]);
            mt_json_knum(j, "rtt_spread_mean_s", fr[F_MEASURED] > 0 ? fr[F_SPREAD_SUM] / fr[F_MEASURED] : 0.0);
            mt_json_knum(j, "rtt_spread_max_s", fr[F_SPREAD]);
            mt_json_obj_end(j);
        }
        mt_json_arr_end(j);
        mt_json_obj_end(j);
    }
    fflush(j->f);
}

static void write_meta(mt_run_t *r, mt_json_t *j, const mt_gclock_t *gc)
{
    clocks_t *c = r->state;
    const mt_params_t *p = &r->cli.p;
    check_json(r, j); /* specs, wait_s */
    mt_json_key(j, "check");
    mt_json_obj_begin(j);
    mt_json_kstr(j, "offset", c->coff->name);
    mt_json_kint(j, "pp", mt_p_int(p, MTP_check_pp));
    mt_json_key(j, "sample");
    if (mt_p_set(p, MTP_check_sample)) mt_json_int(j, mt_p_int(p, MTP_check_sample));
    else mt_json_null(j);
    mt_json_kint(j, "seed", mt_p_int(p, MTP_seed));
    mt_json_kint(j, "tries", MT_CHECK_TRIES);
    mt_json_obj_end(j);
    mt_json_kbool(j, "oversubscribed", r->ctx.oversubscribed);
    mt_json_kbool(j, "lazy_waits", r->ctx.lazy);
    mt_json_key(j, "simulated");
    mt_sim_write_json(j, r->ctx.size, gc->sim.on ? gc->simall : NULL);
    mt_json_key(j, "timer");
    mt_run_write_timer(r, j);
}

static int run(mt_run_t *r, char *err)
{
    clocks_t *c = r->state;
    mt_ctx_t *ctx = &r->ctx;
    const mt_params_t *p = &r->cli.p;
    mt_gclock_t gc;
    int rc = mt_gclock_init(&gc, ctx->comm, &ctx->timer, mt_p_str(p, MTP_sim_offsets), mt_p_str(p, MTP_sim_drifts),
                            mt_p_str(p, MTP_sim_random), ctx->lazy, err);
    if (rc != MT_OK) return rc;
    FILE *out = r->cli.outdir ? mt_run_file(r, "clocks.json") : stdout;
    mt_json_t j;
    if (ctx->rank == 0) {
        mt_json_init(&j, out);
        mt_json_arr_begin(&j);
    }
    double *facts = ctx->rank == 0 ? malloc(sizeof(double) * NF * (size_t)ctx->size) : NULL;
    double d0 = gc.sim.drift;
    mt_check_mpi(MPI_Bcast(&d0, 1, MPI_DOUBLE, 0, ctx->comm), "MPI_Bcast");
    for (int s = 0; s < c->nspec && rc == MT_OK; s++) {
        mt_clock_t in;
        mt_clock_init(&in, &gc.base);
        mt_sync_result_t res;
        if ((rc = mt_sync_run(&c->parsed[s], ctx->comm, &in, ctx->lazy, &res, err)) != MT_OK) break;
        mt_check_t chk;
        rc = mt_check_run(ctx->comm, &res.clock, c->coff, (int)mt_p_int(p, MTP_check_pp), c->waits, c->nwait,
                          mt_p_set(p, MTP_check_sample) ? (int)mt_p_int(p, MTP_check_sample) : 0,
                          (uint64_t)mt_p_int(p, MTP_seed), ctx->lazy, &chk, err);
        if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) break;
        double f[NF];
        /* the drift bound follows from the horizon this run used: the largest wait time */
        mt_sync_at_horizon(&res.st, c->nwait > 0 ? c->waits[c->nwait - 1] : 0);
        facts_of(&res, &gc.sim, d0, f);
        mt_check_mpi(MPI_Gather(f, NF, MPI_DOUBLE, facts, NF, MPI_DOUBLE, 0, ctx->comm), "MPI_Gather");
        if (ctx->rank == 0) write_spec(r, &j, s, &chk, facts, &gc);
        mt_check_free(&chk);
    }
    if (ctx->rank == 0) { /* the array is closed even after an error: what was measured stays readable */
        mt_json_arr_end(&j);
        if (!r->cli.outdir) printf("\n");
        fflush(out);
    }
    mt_json_t *m = rc == MT_OK ? mt_run_meta_begin(r, 1) : NULL;
    if (m) write_meta(r, m, &gc);
    free(facts);
    mt_gclock_free(&gc);
    return rc;
}

static void done(mt_run_t *r)
{
    clocks_t *c = r->state;
    if (!c) return;
    free(c->parsed);
    free(c->waits);
    mt_free_list(c->specs, c->nspec);
    free(c);
    r->state = NULL;
}

static const mt_choices_t choices[] = {{MTP_algorithms, mt_sync_names, "algorithms", "SPECS"},
                                       {MTP_check_offset, mt_offset_names, NULL, NULL},
                                       {MTP_sim_random, NULL, NULL, "SPEC"},
                                       {-1, NULL, NULL, NULL}};
static const mt_cli_flag_t flags[] = {{"mpirun", NULL, NULL, MT_OPT_RUN_INDEX}, /* the old spelling of --run-index */
                                      {NULL, NULL, NULL, -1}};
static const mt_result_file_t files[] = {{"clocks.json", 0}, {"meta.json", 0}, {NULL, 0}};

static const mt_app_t clocks_app = {
    .prog = "mpitempo-clocks",
    .id = MT_APP_CLOCKS,
    .kind = "clocks",
    .about = "Evaluates clock-synchronisation algorithms: sync duration and the offset of every rank's global clock "
             "to rank 0's right after sync and after each wait time (JSON; Hunold and Carpen-Amarie 2018, Alg. 6).",
    .output = "write DIR/clocks.json (the JSON array otherwise printed on stdout) and DIR/meta.json (atomically)",
    .choices = choices,
    .flags = flags,
    .files = files,
    .timer_study = 1,
    .list = list,
    .check = check,
    .check_json = check_json,
    .run = run,
    .done = done,
};

int main(int argc, char **argv) { return mt_run_main(&clocks_app, argc, argv); }
