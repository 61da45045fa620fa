/* mpitempo-bench: the measurement executable. Run it under mpirun/srun.
 * It measures a shuffled list of experiments (operation x message size) with
 * one scheme and writes measurements.csv and meta.json (see docs/file-formats.md),
 * or prints a table when no --outdir is given. The run itself (options, MPI,
 * files, meta.json's common parts) belongs to the run driver (run/run.c). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mt_common.h"
#include "base/stoprule.h"
#include "clock/session.h"
#include "op/cache.h"
#include "op/op.h"
#include "run/perrank.h"
#include "run/run.h"
#include "scheme/scheme.h"

/* the sync used when a clock-based scheme is chosen without --sync */
#define MT_DEFAULT_SYNC "hca3"

typedef struct exp_result {
    mt_meas_info_t info;  /* what the scheme observed */
    int n, nvalid;
    double wall_s, median_s, min_s, max_s;
    mt_op_info_t opinfo;  /* what a call moved; the overlap compute */
    int warmup_calls;     /* warm-up calls made before the measurements */
    int warmup_capped;    /* --warmup auto stopped at its cap without a steady state */
    int inner_used;       /* loop with --inner-min-time: calls per measurement (0: not that case) */
    mt_stop_t stop;       /* why measuring stopped (fixed: --precision off) */
    int looks;            /* looks of the stopping rule made */
    double ci_rel;        /* relative half-width of the median's interval at the last look (level ci_level) */
    double ci_level;
} exp_result_t;

typedef struct bench {
    mt_exp_t *exps;
    int nexp;
    mt_scheme_inst_t scheme;
    mt_sync_spec_t sync;
    int sync_defaulted;
    const mt_dtype_t *dtype;
    const mt_redop_t *redop;
    mt_op_opts_t opts;     /* --bw-window, --rma-sync, ... */
    unsigned opts_used;    /* MT_OPT_* read by the ops of this run */
    int cache_policy;
    long long min_valid;
    uint64_t seed;
    exp_result_t *res;     /* rank 0, per experiment (canonical order) */
    int few_valid;
    int warmup_capped;     /* experiments whose --warmup auto hit the cap */
    long long invalid;
    uint64_t per_rank_meas; /* measurements written to perrank.bin */
} bench_t;

static int check(mt_run_t *r, int np, char *err)
{
    const mt_params_t *p = &r->cli.p;
    char allowed[1024];
    double d;
    bench_t *b = r->state = calloc(1, sizeof *b);
    if (!b) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = mt_scheme_open(mt_p_str(p, MTP_scheme), p, &b->scheme, err);
    if (rc == MT_OK) rc = mt_scheme_check_params(b->scheme.s, p, err);
    if (rc != MT_OK) return rc;
    if (!(b->dtype = mt_dtype_find(mt_p_str(p, MTP_datatype)))) {
        mt_dtype_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown datatype '%s' (allowed: %s)", mt_p_str(p, MTP_datatype), allowed);
    }
    if (!(b->redop = mt_redop_find(mt_p_str(p, MTP_redop)))) {
        mt_redop_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown reduction op '%s' (allowed: %s)", mt_p_str(p, MTP_redop), allowed);
    }
    if ((b->cache_policy = mt_cache_policy(mt_p_str(p, MTP_cache))) < 0) {
        mt_cache_policy_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown cache policy '%s' (allowed: %s)", mt_p_str(p, MTP_cache), allowed);
    }
    if ((rc = mt_op_delay_for_rank(mt_p_str(p, MTP_delay), 0, &d, err)) != MT_OK) return rc;
    if ((rc = mt_sync_spec_parse(mt_p_str(p, MTP_sync), &b->sync, err)) != MT_OK) return rc;
    if (b->sync.none && b->scheme.s->needs_global_clock) { /* a clock-based scheme needs a global clock */
        mt_sync_spec_parse(MT_DEFAULT_SYNC, &b->sync, err);
        b->sync_defaulted = 1;
    }
    int skew_rank;
    if (mt_p_set(p, MTP_barrier_skew) &&
        (rc = mt_barrier_skew_parse(mt_p_str(p, MTP_barrier_skew), np, &skew_rank, &d, err)) != MT_OK)
        return rc;
    if (mt_p_bool(p, MTP_timestamps) && !b->scheme.s->needs_global_clock) {
        mt_scheme_clock_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "--timestamps needs a scheme that times on the global clock (%s), not '%s'",
                       allowed, b->scheme.s->name);
    }
    if (mt_p_bool(p, MTP_timestamps) && !r->cli.outdir)
        return mt_fail(err, MT_EINVAL, "--timestamps needs --outdir (timestamps.csv is written there)");
    if (mt_p_bool(p, MTP_per_rank) && !r->cli.outdir)
        return mt_fail(err, MT_EINVAL, "--per-rank needs --outdir (perrank.bin is written there)");
    if (mt_p_set(p, MTP_warmup_max_time) && mt_p_int(p, MTP_warmup) == MT_P_AUTO)
        return mt_fail(err, MT_EINVAL, "--warmup-max-time limits a fixed --warmup N; --warmup auto stops at a steady "
                                       "state instead (give one of them)");
    long long root = mt_p_int(p, MTP_root);
    if (np > 0 && root >= np)
        return mt_fail(err, MT_EINVAL, "invalid --root %lld: the job has %d ranks (allowed: 0..%d)", root, np, np - 1);
    long long nrep = mt_p_int(p, MTP_nrep);
    b->min_valid = mt_p_set(p, MTP_min_valid) ? mt_p_int(p, MTP_min_valid) : (nrep < 10 ? nrep : 10);
    if (b->min_valid > nrep) /* never met: every experiment would fail after the whole run */
        return mt_fail(err, MT_EINVAL, "invalid --min-valid %lld: more than --nrep %lld, the most measurements an "
                       "experiment has (allowed: 0..%lld)", b->min_valid, nrep, nrep);
    mt_sim_t sim; /* the simulated clock's syntax, from the options or MPITEMPO_SIM_* (each rank's values come in the run) */
    if ((rc = mt_sim_from_env(mt_p_str(p, MTP_sim_offsets), mt_p_str(p, MTP_sim_drifts), mt_p_str(p, MTP_sim_random), 0,
                              np > 0 ? np : 1, &sim, err)) != MT_OK)
        return rc;
    free(b->exps);
    rc = mt_exp_build(mt_p_str(p, MTP_ops), mt_p_str(p, MTP_msizes), np, &b->exps, &b->nexp, err);
    if (rc == MT_OK) rc = mt_op_opts_read(p, &b->opts, err);
    if (rc == MT_OK) { /* an op option that no op of the run reads is a mistake, not a factor */
        const mt_op_t **ops = malloc(sizeof(*ops) * (size_t)(b->nexp + 1));
        if (!ops) return mt_fail(err, MT_ENOMEM, "out of memory");
        b->opts_used = 0;
        for (int k = 0; k < b->nexp; k++) {
            ops[k] = b->exps[k].op;
            b->opts_used |= ops[k]->opts;
            if (rc == MT_OK && ops[k]->check) rc = ops[k]->check(&b->opts, np, err);
        }
        if (rc != MT_OK) {
            free(ops);
            return rc;
        }
        /* a window of W messages is W x msize bytes of buffers per rank: refuse what cannot fit */
        double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
        for (int k = 0; k < b->nexp && mem > 0; k++) {
            int single = b->opts.rbuf_single && (b->exps[k].op->opts & MT_OPT_RBUF);
            double need = (double)(single ? 1 : b->opts.window) * (double)b->exps[k].msize;
            if ((b->exps[k].op->opts & MT_OPT_WINDOW) && need > mem / 4) {
                free(ops);
                return mt_fail(err, MT_EINVAL, "--bw-window %d x message size %lld B = %.1f GiB of buffers per rank "
                               "(op %s) is more than a quarter of this host's memory (%.1f GiB): use a smaller window "
                               "or message size", b->opts.window, (long long)b->exps[k].msize, need / 1073741824.0,
                               b->exps[k].op->name, mem / 1073741824.0);
            }
        }
        rc = mt_op_opts_check_used(p, ops, b->nexp, err);
        free(ops);
    }
    /* passive one-sided sync completes only when the target enters MPI (both libraries here):
     * a scheme that keeps ranks waiting outside MPI measures the target's progress instead */
    int passive = b->opts.rma_sync == MT_RMA_LOCK || b->opts.rma_sync == MT_RMA_FLUSH || b->opts.rma_sync == MT_RMA_LOCK_ALL ||
                  b->opts.rma_sync == MT_RMA_FLUSH_LOCAL;
    if (rc == MT_OK && b->scheme.s->waits_outside_mpi && (b->opts_used & MT_OPT_RMA_SYNC) && passive &&
        b->opts.rma_win != MT_WIN_ALLOCATE) {
        rc = mt_fail(err, MT_EINVAL, "scheme '%s' keeps ranks waiting outside MPI, where the target of passive "
                     "one-sided sync (--rma-sync %s) on --rma-win %s makes no progress: use --rma-win allocate, "
                     "--rma-sync fence or pscw, or another scheme", b->scheme.s->name, mt_p_str(p, MTP_rma_sync),
                     mt_p_str(p, MTP_rma_win));
    }
    /* what mt_op_prepare would refuse in every mpirun is refused here, before any is started */
    for (int k = 0; rc == MT_OK && k < b->nexp; k++) {
        const mt_exp_t *e = &b->exps[k];
        if (e->op->flags & MT_OP_NOSIZE) continue;
        if (e->msize > 0 && e->msize < b->dtype->size)
            rc = mt_fail(err, MT_EINVAL, "message size %lld B is smaller than one element of datatype '%s' (%d B; op %s)",
                         (long long)e->msize, b->dtype->name, b->dtype->size, e->op->name);
        else if (e->msize / b->dtype->size > INT32_MAX)
            rc = mt_fail(err, MT_EINVAL, "message size %lld B is too large for an int count (datatype '%s': at most "
                         "%lld B; op %s)", (long long)e->msize, b->dtype->name, (long long)INT32_MAX * b->dtype->size,
                         e->op->name);
    }
    return rc;
}

static void check_json(mt_run_t *r, mt_json_t *j)
{
    bench_t *b = r->state;
    char spec[1024];
    mt_sync_spec_format(&b->sync, spec, sizeof spec);
    mt_json_kstr(j, "scheme", b->scheme.s->name);
    mt_json_kstr(j, "sync", b->sync.none ? "none" : spec);
    mt_json_kbool(j, "sync_defaulted", b->sync_defaulted);
    mt_json_kint(j, "min_valid", b->min_valid);
    mt_json_key(j, "experiments");
    mt_json_arr_begin(j);
    for (int k = 0; k < b->nexp; k++) {
        mt_json_obj_begin(j);
        mt_json_kstr(j, "op", b->exps[k].op->name);
        mt_json_kint(j, "msize", b->exps[k].msize);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
}

static void list(mt_json_t *j)
{
    mt_op_write_list(j);
    mt_scheme_write_list(j);
    mt_dtype_write_list(j);
}

static int early(mt_run_t *r)
{
    if (!r->cli.flag[0]) return -1; /* --timer-study */
    if (r->ctx.rank == 0) mt_timer_study_all(stdout, mt_p_int(&r->cli.p, MTP_timer_reads));
    return 0;
}

/* rank 0 after experiment k (number `done` in the shuffled order): CSV rows, checks, table or progress */
static int record(mt_run_t *r, int k, int done, const mt_op_args_t *a, const mt_meas_t *m, double wall, char *err)
{
    bench_t *b = r->state;
    const mt_scheme_t *s = b->scheme.s;
    const mt_exp_t *e = &b->exps[k];
    exp_result_t *x = &b->res[k];
    FILE *csv = mt_run_file(r, "measurements.csv"), *tsf = mt_run_file(r, "timestamps.csv");
    x->info = m->info;
    x->n = m->n;
    x->wall_s = wall;
    for (int i = 0; i < m->n; i++) {
        x->nvalid += m->valid[i];
        if (csv)
            fprintf(csv, "%s,%lld,%d,%s,%d,%d,%.10g,%d,%.10g\n", e->op->name, (long long)a->msize, r->ctx.size,
                    s->name, done, i, m->runtime_s[i], m->valid[i], m->local_max_s[i]);
    }
    b->invalid += m->n - x->nvalid;
    int allow = mt_p_bool(&r->cli.p, MTP_allow_few_valid);
    char note[512];
    if (x->nvalid < b->min_valid) {
        b->few_valid++;
        fprintf(stderr, "%s: %s: %s %lld B: only %d of %d measurements are valid (minimum %lld)%s\n", r->app->prog,
                allow ? "warning" : "error", e->op->name, (long long)a->msize, x->nvalid, m->n, b->min_valid,
                s->few_valid_advice ? s->few_valid_advice : "");
    } else if (s->exp_note && !r->cli.quiet &&
               s->exp_note(b->scheme.cfg, &m->info, x->nvalid, m->n, note, sizeof note)) {
        fprintf(stderr, "%s: note: %s %lld B: %s\n", r->app->prog, e->op->name, (long long)a->msize, note);
    }
    if (tsf && m->ts_start) { /* rank-major: ts[q * n + i] */
        for (int i = 0; i < m->n; i++)
            for (int q = 0; q < r->ctx.size; q++) {
                size_t at = (size_t)q * (size_t)m->n + (size_t)i;
                fprintf(tsf, "%s,%lld,%d,%d,%d,%.12g,%.12g,%d\n", e->op->name, (long long)a->msize, done, i, q,
                        m->ts_start[at], m->ts_end[at], m->valid[i]);
            }
        if (mt_run_file_error(r, "timestamps.csv", err) != MT_OK) return MT_EIO;
    }
    FILE *prf = mt_run_file(r, "perrank.bin");
    if (prf && m->ts_start) {
        if (mt_perrank_write(prf, done, m->n, r->ctx.size, m->valid, m->ts_start, m->ts_end) != 0)
            return mt_fail(err, MT_ENOMEM, "out of memory writing perrank.bin");
        b->per_rank_meas += (uint64_t)m->n;
        if (mt_run_file_error(r, "perrank.bin", err) != MT_OK) return MT_EIO;
    }
    x->median_s = mt_median_valid(m->runtime_s, m->valid, m->n);
    if (!r->cli.outdir) {
        double mn = INFINITY, mx = -INFINITY;
        for (int i = 0; i < m->n; i++)
            if (m->valid[i]) {
                mn = m->runtime_s[i] < mn ? m->runtime_s[i] : mn;
                mx = m->runtime_s[i] > mx ? m->runtime_s[i] : mx;
            }
        x->min_s = mn; /* the table is printed sorted at the end (print_table) */
        x->max_s = mx;
        if (!r->cli.quiet && isatty(fileno(stderr)))
            fprintf(stderr, "\r%s: [%d/%d] %s %lld B ", r->app->prog, done + 1, b->nexp, e->op->name,
                    (long long)a->msize);
    } else if (mt_run_progress(r)) {
        char why[64] = "";
        if (x->stop != MT_REPSTOP_FIXED) snprintf(why, sizeof why, "; stop: %s", mt_stop_name(x->stop));
        fprintf(stderr, "%s: [%d/%d] %s %lld B: median %.3f us (%d/%d valid)%s\n", r->app->prog, done + 1, b->nexp,
                e->op->name, (long long)a->msize, x->median_s * 1e6, x->nvalid, m->n, why);
    }
    return MT_OK;
}

/* calls per measurement: --inner for the schemes that read it, else 1 */
static int per_rank_calls(mt_run_t *r)
{
    const bench_t *b = r->state;
    for (const int *q = b->scheme.s->params; *q >= 0; q++)
        if (*q == MTP_inner) return (int)mt_p_int(&r->cli.p, MTP_inner);
    return 1;
}

/* by op (in the order the ops were given: first appearance), then message size */
static int exp_before(const mt_exp_t *exps, const mt_exp_t *a, const mt_exp_t *b)
{
    if (a->op != b->op) {
        for (const mt_exp_t *e = exps;; e++)
            if (e->op == a->op || e->op == b->op) return e->op == a->op;
    }
    return a->msize < b->msize;
}

/* The table of a run without --outdir, sorted by op and message size (experiments run shuffled). */
static void print_table(mt_run_t *r)
{
    bench_t *b = r->state;
    int *idx = malloc((size_t)b->nexp * sizeof *idx);
    if (!idx) mt_check_mpi(MPI_ERR_NO_MEM, "table");
    for (int k = 0; k < b->nexp; k++) { /* insertion sort: a few hundred experiments at most */
        int j = k;
        for (; j > 0 && exp_before(b->exps, &b->exps[k], &b->exps[idx[j - 1]]); j--) idx[j] = idx[j - 1];
        idx[j] = k;
    }
    if (!r->cli.quiet && isatty(fileno(stderr))) fprintf(stderr, "\r%60s\r", "");
    for (int i = 0; i < b->nexp; i++) {
        const exp_result_t *x = &b->res[idx[i]];
        if (!x->n) continue; /* not measured (stopped early) */
        printf("%-22s %10lld %6d %12.3f %12.3f %12.3f\n", b->exps[idx[i]].op->name, (long long)b->exps[idx[i]].msize,
               x->nvalid, x->min_s * 1e6, x->median_s * 1e6, x->max_s * 1e6);
    }
    fflush(stdout);
    free(idx);
}

static int exp_looks(const mt_params_t *p, const bench_t *b, int cap, int *sched, int *early);

static void write_meta(mt_run_t *r, mt_json_t *j, const mt_gclock_t *gc, const mt_cache_t *cache, const int *order)
{
    bench_t *b = r->state;
    const mt_params_t *p = &r->cli.p;
    const mt_scheme_t *s = b->scheme.s;
    mt_json_key(j, "timer");
    mt_run_write_timer(r, j);
    mt_json_key(j, "clock");
    mt_json_obj_begin(j);
    mt_gclock_write_meta(gc, j, b->sync_defaulted, mt_p_num(p, MTP_resync_age));
    mt_json_obj_end(j);
    mt_json_key(j, "scheme");
    mt_json_obj_begin(j);
    mt_json_kstr(j, "name", s->name);
    mt_json_kstr(j, "desc", s->desc);
    mt_json_kint(j, "nrep", r->ctx.nrep);
    if (mt_p_num(p, MTP_precision) > 0) { /* adaptive repetitions: nrep is the cap */
        int sched[MT_REPSTOP_MAXLOOKS], early;
        int K = exp_looks(p, b, r->ctx.nrep, sched, &early);
        mt_json_key(j, "adaptive");
        mt_json_obj_begin(j);
        mt_json_knum(j, "precision", mt_p_num(p, MTP_precision));
        mt_json_kint(j, "nrep_min", sched[early]);
        if (early) mt_json_kint(j, "early_look", sched[0]);
        else {
            mt_json_key(j, "early_look");
            mt_json_null(j);
        }
        mt_json_kint(j, "nrep_max", r->ctx.nrep);
        mt_json_knum(j, "exp_time_s", mt_p_set(p, MTP_exp_time) ? mt_p_num(p, MTP_exp_time) : NAN);
        mt_json_key(j, "looks");
        mt_json_arr_begin(j);
        for (int k = 0; k < K; k++) mt_json_int(j, sched[k]);
        mt_json_arr_end(j);
        mt_json_knum(j, "ci_level", 1 - 0.05 / K);
        mt_json_kstr(j, "statistic", "distribution-free interval of the median of the valid measurements, "
                                     "level 1 - 0.05/looks (Bonferroni over the looks)");
        mt_json_obj_end(j);
    }
    if (r->ctx.warmup == MT_WARMUP_AUTO) {
        mt_json_kstr(j, "warmup", "auto");
        mt_json_key(j, "warmup_auto");   /* the steady-state test (docs/methods.md#warm-up) */
        mt_json_obj_begin(j);
        mt_json_kint(j, "window", MT_WARMUP_WINDOW);
        mt_json_knum(j, "rel_tol", MT_WARMUP_REL_TOL);
        mt_json_knum(j, "abs_tol_s", MT_WARMUP_ABS_TOL_S);
        mt_json_kint(j, "agree", MT_WARMUP_AGREE);
        mt_json_kint(j, "cap", MT_WARMUP_CAP);
        mt_json_kstr(j, "statistic", "max over ranks of the median call time of a window");
        mt_json_obj_end(j);
        mt_json_kint(j, "warmup_capped_experiments", b->warmup_capped);
    } else {
        mt_json_kint(j, "warmup", r->ctx.warmup);
        if (r->ctx.warmup_max_s > 0) mt_json_knum(j, "warmup_max_time_s", r->ctx.warmup_max_s);
    }
    if (s->write_meta) s->write_meta(j, b->scheme.cfg, &r->ctx);
    mt_json_kbool(j, "timestamps", mt_p_bool(p, MTP_timestamps));
    mt_json_kbool(j, "per_rank", mt_p_bool(p, MTP_per_rank));
    if (mt_p_bool(p, MTP_per_rank)) {
        mt_json_kstr(j, "per_rank_clock", r->ctx.gclock ? "global" : "local");
        mt_json_kint(j, "per_rank_measurements", (int64_t)b->per_rank_meas);
        mt_json_kint(j, "per_rank_calls", per_rank_calls(r));
    }
    mt_json_kbool(j, "oversubscribed", r->ctx.oversubscribed);
    if (mt_p_set(p, MTP_barrier_skew)) mt_json_kstr(j, "barrier_skew", mt_p_str(p, MTP_barrier_skew));
    mt_json_kint(j, "min_valid", b->min_valid);
    mt_json_kint(j, "experiments_with_too_few_valid", b->few_valid);
    mt_json_obj_end(j);
    mt_json_key(j, "operation_params");
    mt_json_obj_begin(j);
    mt_json_kstr(j, "datatype", b->dtype->name);
    mt_json_kint(j, "datatype_size", b->dtype->size);
    mt_json_kstr(j, "redop", b->redop->name);
    mt_json_kint(j, "root", mt_p_int(p, MTP_root));
    mt_json_kstr(j, "delay", mt_p_str(p, MTP_delay));
    mt_op_opts_write_meta(j, &b->opts, b->opts_used);
    mt_json_obj_end(j);
    mt_json_kstr(j, "cache_policy", mt_cache_policy_name(cache->policy));
    mt_json_key(j, "cache");
    mt_json_obj_begin(j);
    mt_json_kstr(j, "policy", mt_cache_policy_name(cache->policy));
    if (cache->policy != MT_CACHE_WARM) {
        mt_json_kint(j, "size_bytes", (int64_t)cache->size);
        mt_json_kstr(j, "size_source", cache->size_src);
    }
    mt_json_obj_end(j);
    mt_json_kint(j, "seed", (int64_t)b->seed);
    mt_json_key(j, "experiments");
    mt_json_arr_begin(j);
    for (int k = 0; k < b->nexp; k++) {
        const mt_exp_t *e = &b->exps[order[k]];
        const exp_result_t *x = &b->res[order[k]];
        int cnt = e->msize ? (int)(e->msize / b->dtype->size) : 0;
        mt_json_obj_begin(j);
        mt_json_kint(j, "exp", k);
        mt_json_kstr(j, "op", e->op->name);
        mt_json_kstr(j, "mpi_name", e->op->mpi_name);
        mt_json_kint(j, "msize", e->msize);
        mt_json_kint(j, "count", cnt);
        mt_json_kint(j, "effective_bytes", (int64_t)cnt * b->dtype->size);
        mt_json_knum(j, "median_s", x->median_s);
        mt_json_kint(j, "measurements", x->n);
        mt_json_kint(j, "valid", x->nvalid);
        mt_json_kbool(j, "too_few_valid", x->nvalid < b->min_valid);
        mt_json_knum(j, "wall_s", x->wall_s);
        mt_json_kint(j, "warmup_calls", x->warmup_calls);
        mt_json_kbool(j, "warmup_capped", x->warmup_capped);
        if (x->inner_used > 0) mt_json_kint(j, "inner", x->inner_used);
        mt_json_kstr(j, "stop", mt_stop_name(x->stop));
        if (x->stop != MT_REPSTOP_FIXED) {
            mt_json_kint(j, "looks", x->looks);
            mt_json_knum(j, "ci_level", x->ci_level);
            mt_json_knum(j, "ci_rel", x->ci_rel); /* null: no interval at that level yet */
        }
        mt_op_info_write(j, &x->opinfo);
        if (s->write_exp_meta) s->write_exp_meta(j, &x->info);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
    mt_json_kint(j, "invalid_measurements", b->invalid);
}

/* The looks of an experiment's stopping rule (base/stoprule.h): from --nrep-min doubling to the cap; with
 * an --exp-time, an early look before the floor (at the smallest n >= min_valid with an interval at the
 * level), where the rule stops on time only: calls so long that the floor alone would exceed
 * --exp-time get fewer measurements. Returns K; *early = 1 when sched[0] is the early look. */
static int exp_looks(const mt_params_t *p, const bench_t *b, int cap, int *sched, int *early)
{
    int n_min = (int)mt_p_int(p, MTP_nrep_min);
    if (!mt_p_set(p, MTP_exp_time)) {
        *early = 0;
        return mt_stop_looks(n_min, cap, sched);
    }
    return mt_stop_looks_early(n_min, cap, b->min_valid > 1 ? (int)b->min_valid : 1, 0.05, sched, early);
}

/* The measurements of one experiment: exactly --nrep, or with --precision in blocks up to the looks of
 * the stopping rule (base/stoprule.h): after each block rank 0 computes the interval of the median of
 * the valid measurements so far at level 1 - 0.05 / K and every rank stops when it is within
 * +-precision (precision), at the last look (cap), or once --exp-time has passed (time). The warm-up
 * runs before the first block only. Block results are appended; per-rank timestamps (rank-major in
 * each block) are put together rank-major over the whole experiment at the end. */
static int measure_exp(mt_run_t *r, const mt_exp_t *e, mt_op_args_t *a, mt_meas_t *m, exp_result_t *x, char *err)
{
    bench_t *b = r->state;
    mt_ctx_t *ctx = &r->ctx;
    const mt_params_t *p = &r->cli.p;
    const mt_scheme_t *s = b->scheme.s;
    int cap = (int)mt_p_int(p, MTP_nrep);
    double prec = mt_p_num(p, MTP_precision);
    x->stop = MT_REPSTOP_FIXED;
    x->looks = 0;
    x->ci_rel = x->ci_level = NAN;
    ctx->nrep = cap;
    if (!(prec > 0)) {
        if (mt_meas_alloc(m, cap) != MT_OK) mt_check_mpi(MPI_ERR_NO_MEM, "measurements");
        return s->measure(ctx, b->scheme.cfg, e->op, a, m, err);
    }
    int sched[MT_REPSTOP_MAXLOOKS], early;
    int K = exp_looks(p, b, cap, sched, &early);
    double alpha = 0.05 / K, tmax = mt_p_set(p, MTP_exp_time) ? mt_p_num(p, MTP_exp_time) : INFINITY;
    x->ci_level = 1 - alpha;
    int root = ctx->rank == 0, warm = ctx->warmup, asked = 0, n = 0, capn = 0, rc = MT_OK;
    double *bts[MT_REPSTOP_MAXLOOKS][2] = {{NULL}};
    int bn[MT_REPSTOP_MAXLOOKS] = {0}, nb = 0;
    double *sorted = NULL;
    memset(m, 0, sizeof *m);
    int64_t t0 = ctx->timer.t->now();
    for (int k = 0; k < K && rc == MT_OK; k++) {
        mt_meas_t blk;
        ctx->nrep = sched[k] - asked;
        asked = sched[k];
        if (mt_meas_alloc(&blk, ctx->nrep) != MT_OK) mt_check_mpi(MPI_ERR_NO_MEM, "measurements");
        if (k > 0) ctx->warmup = 0;
        rc = mt_agree(ctx->comm, s->measure(ctx, b->scheme.cfg, e->op, a, &blk, err), err);
        int decision = 0;
        if (rc == MT_OK && root) {
            if (n + blk.n > capn) {
                capn = 2 * (n + blk.n);
                m->runtime_s = realloc(m->runtime_s, sizeof(double) * (size_t)capn);
                m->local_max_s = realloc(m->local_max_s, sizeof(double) * (size_t)capn);
                m->valid = realloc(m->valid, sizeof(int) * (size_t)capn);
                sorted = realloc(sorted, sizeof(double) * (size_t)capn);
                if (!m->runtime_s || !m->local_max_s || !m->valid || !sorted)
                    mt_check_mpi(MPI_ERR_NO_MEM, "measurements");
            }
            memcpy(m->runtime_s + n, blk.runtime_s, sizeof(double) * (size_t)blk.n);
            memcpy(m->local_max_s + n, blk.local_max_s, sizeof(double) * (size_t)blk.n);
            memcpy(m->valid + n, blk.valid, sizeof(int) * (size_t)blk.n);
            if (k == 0) m->info = blk.info;
            else m->info.elapsed_s += blk.info.elapsed_s;
            if (blk.ts_start) { /* kept: assembled at the end */
                bts[nb][0] = blk.ts_start;
                bts[nb][1] = blk.ts_end;
                bn[nb++] = blk.n;
                blk.ts_start = blk.ts_end = NULL;
            }
            n += blk.n;
            int nv = 0;
            for (int i = 0; i < n; i++)
                if (m->valid[i]) sorted[nv++] = m->runtime_s[i];
            qsort(sorted, (size_t)nv, sizeof(double), mt_cmp_double);
            x->ci_rel = mt_median_ci_rel(sorted, nv, alpha, NULL, NULL);
            x->looks = k + 1;
            double elapsed = mt_ticks_to_s(&ctx->timer, ctx->timer.t->now() - t0);
            if (early && k == 0) { /* the early look: stop on time only, when the floor would take too long */
                if (elapsed * sched[1] / (n > 0 ? n : 1) >= tmax) decision = MT_REPSTOP_TIME;
            } else if (x->ci_rel <= prec) decision = MT_REPSTOP_PRECISION;
            else if (k == K - 1) decision = MT_REPSTOP_CAP;
            else if (elapsed >= tmax) decision = MT_REPSTOP_TIME;
        }
        mt_meas_free(&blk);
        if (rc != MT_OK) break;
        mt_check_mpi(MPI_Bcast(&decision, 1, MPI_INT, 0, ctx->comm), "MPI_Bcast");
        if (decision) {
            x->stop = (mt_stop_t)decision;
            break;
        }
    }
    ctx->warmup = warm;
    ctx->nrep = cap;
    m->n = n;
    if (root && nb > 0) { /* rank-major over the experiment: ts[q * n + i] */
        size_t tot = (size_t)n * (size_t)ctx->size;
        m->ts_start = malloc(sizeof(double) * (tot ? tot : 1));
        m->ts_end = malloc(sizeof(double) * (tot ? tot : 1));
        if (!m->ts_start || !m->ts_end) mt_check_mpi(MPI_ERR_NO_MEM, "timestamps");
        int off = 0;
        for (int j = 0; j < nb; j++) {
            for (int q = 0; q < ctx->size; q++) {
                memcpy(m->ts_start + (size_t)q * n + off, bts[j][0] + (size_t)q * bn[j], sizeof(double) * (size_t)bn[j]);
                memcpy(m->ts_end + (size_t)q * n + off, bts[j][1] + (size_t)q * bn[j], sizeof(double) * (size_t)bn[j]);
            }
            off += bn[j];
        }
    }
    for (int j = 0; j < nb; j++) {
        free(bts[j][0]);
        free(bts[j][1]);
    }
    free(sorted);
    return rc;
}

static int run(mt_run_t *r, char *err)
{
    bench_t *b = r->state;
    mt_ctx_t *ctx = &r->ctx;
    const mt_params_t *p = &r->cli.p;
    if (b->sync_defaulted && ctx->rank == 0)
        fprintf(stderr, "%s: note: scheme '%s' needs a global clock; synchronising with '%s' (choose with --sync)\n",
                r->app->prog, b->scheme.s->name, MT_DEFAULT_SYNC);
    /* global clock: sync once per mpirun (re-syncing before every experiment
     * costs far more than it gains); checked now and after the last experiment */
    mt_gclock_t gc;
    int rc = mt_gclock_init(&gc, ctx->comm, &ctx->timer, mt_p_str(p, MTP_sim_offsets), mt_p_str(p, MTP_sim_drifts),
                            mt_p_str(p, MTP_sim_random), ctx->lazy, err);
    if (rc == MT_OK) rc = mt_gclock_sync(&gc, &b->sync, err);
    if (rc != MT_OK) return rc;
    ctx->gclock = mt_gclock_clock(&gc);
    ctx->nrep = (int)mt_p_int(p, MTP_nrep);
    ctx->warmup = mt_p_int(p, MTP_warmup) == MT_P_AUTO ? MT_WARMUP_AUTO : (int)mt_p_int(p, MTP_warmup);
    ctx->warmup_max_s = mt_p_set(p, MTP_warmup_max_time) ? mt_p_num(p, MTP_warmup_max_time) : 0;
    int per_rank = mt_p_bool(p, MTP_per_rank);
    ctx->want_timestamps = mt_p_bool(p, MTP_timestamps) || per_rank;
    ctx->pr_epoch = ctx->timer.t->now();
    mt_check_mpi(MPI_Bcast(&ctx->pr_epoch, 1, MPI_INT64_T, 0, ctx->comm), "MPI_Bcast");
    if (mt_p_set(p, MTP_barrier_skew))
        mt_barrier_skew_parse(mt_p_str(p, MTP_barrier_skew), 0, &ctx->skew_rank, &ctx->skew_s, err);
    mt_cache_t cache;
    size_t cache_bytes = mt_p_set(p, MTP_cache_size) ? (size_t)mt_p_size(p, MTP_cache_size) : 0; /* 0: from sysfs */
    rc = mt_cache_init(&cache, b->cache_policy, cache_bytes, err);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) return rc;
    ctx->cache = &cache;
    double my_delay = 0;
    mt_op_delay_for_rank(mt_p_str(p, MTP_delay), ctx->rank, &my_delay, err);
    b->seed = (uint64_t)mt_p_int(p, MTP_seed);
    int *order = mt_exp_order(ctx->comm, b->nexp, mt_p_set(p, MTP_seed), &b->seed);
    if (mt_p_bool(p, MTP_timestamps)) rc = mt_run_open_file(r, "timestamps.csv", err);
    if (rc == MT_OK && per_rank) rc = mt_run_open_file(r, "perrank.bin", err);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) return rc;
    FILE *prf = mt_run_file(r, "perrank.bin");
    if (prf) mt_perrank_header(prf, ctx->size, per_rank_calls(r), ctx->gclock != NULL,
                               (uint64_t)b->nexp * (uint64_t)ctx->nrep);
    FILE *csv = mt_run_file(r, "measurements.csv"), *tsf = mt_run_file(r, "timestamps.csv");
    if (csv) fprintf(csv, "op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s\n");
    if (tsf) fprintf(tsf, "op,msize,exp,rep,rank,start_s,end_s,valid\n");
    if (ctx->rank == 0 && !(b->res = calloc((size_t)b->nexp + 1, sizeof *b->res)))
        mt_check_mpi(MPI_ERR_NO_MEM, "results");
    if (ctx->rank == 0 && !r->cli.outdir)
        printf("# %s %s: %d ranks, scheme %s, timer %s, nrep %d, seed %llu\n%-22s %10s %6s %12s %12s %12s\n",
               r->app->prog, MT_VERSION, ctx->size, b->scheme.s->name, ctx->timer.t->name, ctx->nrep,
               (unsigned long long)b->seed, "op", "bytes", "valid", "min[us]", "median[us]", "max[us]");
    for (int k = 0; k < b->nexp && rc == MT_OK; k++) {
        const mt_exp_t *e = &b->exps[order[k]];
        if (k > 0 && (rc = mt_gclock_resync_if_old(&gc, mt_p_num(p, MTP_resync_age), err)) != MT_OK) break;
        /* a long run checks its clocks between experiments and re-syncs when a rank is off (session.h) */
        if (k > 0 && (rc = mt_gclock_check_if_due(&gc, err)) != MT_OK) break;
        mt_op_args_t a = {.comm = ctx->comm, .rank = ctx->rank, .size = ctx->size, .root = (int)mt_p_int(p, MTP_root),
                          .dtype = b->dtype, .redop = b->redop->op, .timer = &ctx->timer, .delay_s = my_delay,
                          .opts = &b->opts};
        rc = mt_op_prepare(e->op, &a, e->msize, err);
        if (rc == MT_OK) rc = mt_cache_setup_buffers(&cache, &a, err);
        if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) break;
        mt_meas_t m;
        exp_result_t xs = {0};
        int64_t w0 = ctx->timer.t->now();
        ctx->warmup_calls = ctx->warmup_capped = ctx->inner_used = 0;
        rc = measure_exp(r, e, &a, &m, &xs, err);
        double wall = mt_ticks_to_s(&ctx->timer, ctx->timer.t->now() - w0);
        rc = mt_agree(ctx->comm, rc, err);
        /* the clock error the scheme tolerates: its window (Round-Time: its slack) */
        if (rc == MT_OK && ctx->gclock && m.info.window_s > 0)
            mt_gclock_scheme_gap(&gc, m.info.window_s, strcmp(b->scheme.s->name, "window") == 0 ? "window" : "slack");
        mt_op_info_t info = {0};
        if (rc == MT_OK && e->op->info) e->op->info(&a, &info); /* collective: every rank */
        if (rc == MT_OK && ctx->rank == 0) {
            b->res[order[k]].stop = xs.stop;
            b->res[order[k]].looks = xs.looks;
            b->res[order[k]].ci_rel = xs.ci_rel;
            b->res[order[k]].ci_level = xs.ci_level;
            b->res[order[k]].opinfo = info;
            b->res[order[k]].warmup_calls = ctx->warmup_calls;
            b->res[order[k]].warmup_capped = ctx->warmup_capped;
            b->res[order[k]].inner_used = ctx->inner_used;
            if (ctx->warmup_capped) {
                b->warmup_capped++;
                fprintf(stderr, "%s: warning: %s %lld B: --warmup auto found no steady state in %d calls (the cap): "
                                "the first measurements may still be warming up (meta.json warmup_capped)\n",
                        r->app->prog, e->op->name, (long long)e->msize, ctx->warmup_calls);
            }
            rc = record(r, order[k], k, &a, &m, wall, err);
        }
        mt_meas_free(&m);
        mt_op_release(&a);
        rc = mt_agree(ctx->comm, rc, err); /* e.g. the disk is full: stop now, leave nothing that looks complete */
    }
    if (prf) mt_perrank_finish(prf, b->per_rank_meas);
    if (ctx->rank == 0 && !r->cli.outdir) print_table(r);
    if (rc == MT_OK) rc = mt_gclock_finish(&gc, err);
    mt_json_t *j = rc == MT_OK ? mt_run_meta_begin(r, 1) : NULL;
    if (j) write_meta(r, j, &gc, &cache, order);
    /* the files are complete; too few valid measurements is still a failure unless allowed */
    if (b->few_valid && !mt_p_bool(p, MTP_allow_few_valid)) r->exit_code = 3;
    mt_check_mpi(MPI_Bcast(&r->exit_code, 1, MPI_INT, 0, ctx->comm), "MPI_Bcast");
    mt_cache_free(&cache);
    mt_gclock_free(&gc);
    free(order);
    return rc;
}

static void done(mt_run_t *r)
{
    bench_t *b = r->state;
    if (!b) return;
    mt_scheme_close(&b->scheme);
    free(b->exps);
    free(b->res);
    free(b);
    r->state = NULL;
}

static const mt_choices_t choices[] = {
    {MTP_ops, mt_op_names, "ops", NULL},           {MTP_scheme, mt_scheme_names, NULL, NULL},
    {MTP_datatype, mt_dtype_names, NULL, NULL},     {MTP_redop, mt_redop_names, NULL, NULL},
    {MTP_cache, mt_cache_policy_names, NULL, NULL}, {MTP_sync, mt_sync_names, "algorithms", "SPEC"},
    {MTP_barrier_skew, NULL, NULL, "R:T"},         {MTP_sim_random, NULL, NULL, "SPEC"},
    {-1, NULL, NULL, NULL}};
static const mt_cli_flag_t flags[] = {
    {"timer-study", NULL, "print resolution and overhead of every timer as JSON", -1}, {NULL, NULL, NULL, -1}};
static const mt_result_file_t files[] = {
    {"measurements.csv", 0}, {"timestamps.csv", 1}, {"perrank.bin", 1}, {"meta.json", 0}, {NULL, 0}};

static const mt_app_t bench_app = {
    .prog = "mpitempo-bench",
    .id = MT_APP_BENCH,
    .kind = "bench",
    .about = "Measures MPI operations (op x message size, shuffled) with one measurement scheme.",
    .output = "write DIR/measurements.csv and DIR/meta.json (atomically; with --timestamps also "
              "DIR/timestamps.csv, with --per-rank DIR/perrank.bin); without it a table goes to stdout",
    .choices = choices,
    .flags = flags,
    .files = files,
    .timer_study = 1,
    .list = list,
    .check = check,
    .check_json = check_json,
    .early = early,
    .run = run,
    .done = done,
};

int main(int argc, char **argv) { return mt_run_main(&bench_app, argc, argv); }
