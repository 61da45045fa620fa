/* mpitempo-pingpong: the small-message latency method of Luecke et al. 2009
 * ("Measuring MPI latency and communication rates for small messages"). Run it
 * under mpirun/srun with 2 or more ranks. It studies the timer, estimates npp
 * per message size, times ntrial loops of npp ping-pongs between --source and
 * --dest (the other ranks sleep), optionally runs the loop-averaged OSU-style
 * ping-pong on the same ranks, and writes the raw timings: DIR/timings.csv +
 * DIR/meta.json (atomically) with --outdir, or one JSON document on stdout.
 * Statistics are left to `mpitempo pingpong`. File formats: docs/pingpong.md. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "pingpong/pingpong.h"
#include "run/run.h"

typedef struct pingpong {
    mt_pp_cfg_t pp;
    int64_t *sizes;
    int nsizes;
} pingpong_t;

static int parse_sweep(const char *list, mt_pp_cfg_t *pp, char *err)
{
    char **items;
    int n, rc;
    long long v;
    if ((rc = mt_split_list(list, &items, &n, err)) != MT_OK) return rc; /* the parser checked the list */
    free(pp->npp_sweep);
    if (!(pp->npp_sweep = malloc(sizeof(int64_t) * (size_t)n))) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int i = 0; i < n && rc == MT_OK; i++)
        if ((rc = mt_parse_int(items[i], "--npp-sweep value", 1, MT_PP_NPP_MAX, &v, err)) == MT_OK)
            pp->npp_sweep[i] = v;
    pp->nsweep = rc == MT_OK ? n : 0;
    mt_free_list(items, n);
    return rc;
}

static int check(mt_run_t *r, int np, char *err)
{
    const mt_params_t *p = &r->cli.p;
    pingpong_t *g = r->state = calloc(1, sizeof *g);
    if (!g) return mt_fail(err, MT_ENOMEM, "out of memory");
    mt_pp_cfg_t *pp = &g->pp;
    pp->source = (int)mt_p_int(p, MTP_source);
    pp->dest = mt_p_set(p, MTP_dest) ? (int)mt_p_int(p, MTP_dest) : -1;
    pp->ntrial = mt_p_int(p, MTP_ntrial);
    pp->npp = mt_p_set(p, MTP_npp) ? mt_p_int(p, MTP_npp) : 0;
    pp->npp_init = mt_p_int(p, MTP_npp_init);
    pp->npptrial = mt_p_int(p, MTP_npptrial);
    pp->res_npp = mt_p_num(p, MTP_res_npp);
    pp->max_pp = mt_p_set(p, MTP_max_pp) ? mt_p_int(p, MTP_max_pp) : 0;
    pp->warmup = mt_p_int(p, MTP_warmup);
    pp->loop = mt_p_bool(p, MTP_loop);
    pp->bidir = mt_p_bool(p, MTP_bidir);
    pp->barrier_all = mt_p_bool(p, MTP_barrier_all);
    pp->loop_iters = mt_p_set(p, MTP_loop_iters) ? mt_p_int(p, MTP_loop_iters) : 0;
    pp->loop_reps = mt_p_int(p, MTP_loop_reps);
    const char *bufs = mt_p_str(p, MTP_buffers);
    if (strcmp(bufs, "two") == 0)
        pp->one_buffer = 0;
    else if (strcmp(bufs, "one") == 0)
        pp->one_buffer = 1;
    else
        return mt_fail(err, MT_EINVAL, "invalid --buffers '%s' (allowed: two, one)", bufs);
    int rc = MT_OK;
    if (!(pp->res_npp > 0))
        return mt_fail(err, MT_EINVAL, "invalid --res-npp '%s': must be > 0", mt_p_raw(p, MTP_res_npp));
    if (mt_p_set(p, MTP_npp_sweep)) {
        if ((rc = parse_sweep(mt_p_str(p, MTP_npp_sweep), pp, err)) != MT_OK) return rc;
        if (pp->npp) return mt_fail(err, MT_EINVAL, "--npp and --npp-sweep exclude each other: give one of them");
    }
    if (np > 0) {
        mt_pp_defaults(pp, np);
        rc = mt_pp_validate(pp, np, err);
    } else { /* the job size is unknown: what can be checked without it */
        mt_pp_cfg_t v = *pp;
        if (v.dest < 0) v.dest = v.source + 1;
        rc = mt_pp_validate(&v, INT_MAX, err);
    }
    if (rc == MT_OK && (rc = mt_parse_size_list_ex(mt_p_str(p, MTP_msizes), 1, &g->sizes, &g->nsizes, err)) == MT_OK)
        for (int i = 0; i < g->nsizes; i++)
            if (g->sizes[i] > INT_MAX)
                return mt_fail(err, MT_EINVAL, "invalid message size %lld: at most %d bytes", (long long)g->sizes[i],
                               INT_MAX);
    r->writer = pp->source; /* the source owns the results and writes them */
    return rc;
}

static void check_json(mt_run_t *r, mt_json_t *j)
{
    pingpong_t *g = r->state;
    mt_json_key(j, "msizes_bytes");
    mt_json_arr_begin(j);
    for (int i = 0; i < g->nsizes; i++) mt_json_int(j, g->sizes[i]);
    mt_json_arr_end(j);
}

static void write_study(mt_json_t *j, const mt_timer_inst_t *ti, const mt_pp_tstudy_t *s)
{
    double n = (double)(s->n - s->negative);
    double mean = n > 0 ? s->sum_ticks / n : 0;
    double var = n > 1 ? (s->sumsq_ticks - n * mean * mean) / (n - 1) : 0;
    if (var < 0) var = 0;
    mt_json_obj_begin(j);
    mt_json_kint(j, "n", s->n);
    mt_json_knum(j, "seconds", s->seconds);
    mt_json_kint(j, "res_ticks", s->res_ticks);
    mt_json_knum(j, "res_timing_s", mt_ticks_to_s(ti, s->res_ticks));
    mt_json_kint(j, "min_ov_ticks", s->min_ov_ticks);
    mt_json_knum(j, "min_ov_s", mt_ticks_to_s(ti, s->min_ov_ticks));
    mt_json_kint(j, "max_ticks", s->max_ticks);
    mt_json_knum(j, "mean_s", mean * ti->s_per_tick);
    mt_json_knum(j, "std_s", sqrt(var) * ti->s_per_tick);
    mt_json_kint(j, "negative", s->negative);
    mt_json_kint(j, "dropped", s->nover_dropped);
    /* exact frequency table of the differences: [ticks, count] ascending */
    mt_json_key(j, "freq");
    mt_json_arr_begin(j);
    for (int64_t d = 0; d < MT_PP_HIST_BINS; d++)
        if (s->hist[d]) {
            char b[64];
            snprintf(b, sizeof b, "[%lld, %lld]", (long long)d, (long long)s->hist[d]);
            mt_json_raw(j, b);
        }
    /* the rare long ones: sort and count */
    int64_t *o = s->over;
    for (int64_t i = 1; i < s->nover; i++) { /* insertion sort: few values in practice */
        int64_t x = o[i], k = i - 1;
        while (k >= 0 && o[k] > x) { o[k + 1] = o[k]; k--; }
        o[k + 1] = x;
    }
    for (int64_t i = 0; i < s->nover;) {
        int64_t k = i;
        while (k < s->nover && o[k] == o[i]) k++;
        char b[64];
        snprintf(b, sizeof b, "[%lld, %lld]", (long long)o[i], (long long)(k - i));
        mt_json_raw(j, b);
        i = k;
    }
    mt_json_arr_end(j);
    mt_json_obj_end(j);
}

/* min/median/mean/max of one-way times: a convenience for C-only users;
 * the Python side recomputes everything from the ticks. */
static void write_quick_stats(mt_json_t *j, const mt_timer_inst_t *ti, const int64_t *ticks, int64_t n,
                              double per)
{
    double *t = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        t[i] = mt_ticks_to_s(ti, ticks[i]) / per;
        sum += t[i];
        if (t[i] < mn) mn = t[i];
        if (t[i] > mx) mx = t[i];
    }
    mt_json_knum(j, "min_s", mn);
    mt_json_knum(j, "median_s", mt_pp_median(t, n));
    mt_json_knum(j, "mean_s", n ? sum / (double)n : NAN);
    mt_json_knum(j, "max_s", mx);
    free(t);
}

static void write_ticks(mt_json_t *j, const int64_t *ticks, int64_t n)
{
    mt_json_key(j, "ticks");
    mt_json_arr_begin(j);
    for (int64_t i = 0; i < n; i++) mt_json_int(j, ticks[i]);
    mt_json_arr_end(j);
}

static void csv_rows(FILE *csv, const char *kind, int64_t msize, int64_t npp, const mt_timer_inst_t *ti,
                     const int64_t *ticks, int64_t n)
{
    if (!csv) return;
    for (int64_t i = 0; i < n; i++)
        fprintf(csv, "%s,%lld,%lld,%lld,%lld,%.10g\n", kind, (long long)msize, (long long)npp, (long long)i,
                (long long)ticks[i], mt_ticks_to_s(ti, ticks[i]) / (2.0 * (double)npp));
}

static void write_config(mt_json_t *j, const mt_pp_cfg_t *pp, const int64_t *sizes, int nsizes)
{
    mt_json_key(j, "pingpong");
    mt_json_obj_begin(j);
    mt_json_kint(j, "source", pp->source);
    mt_json_kint(j, "dest", pp->dest);
    mt_json_kint(j, "ntrial", pp->ntrial);
    mt_json_key(j, "npp");
    if (pp->npp) mt_json_int(j, pp->npp);
    else mt_json_null(j);
    mt_json_key(j, "npp_sweep");
    if (pp->nsweep) {
        mt_json_arr_begin(j);
        for (int i = 0; i < pp->nsweep; i++) mt_json_int(j, pp->npp_sweep[i]);
        mt_json_arr_end(j);
    } else {
        mt_json_null(j);
    }
    mt_json_kint(j, "npp_init", pp->npp_init);
    mt_json_kint(j, "npptrial", pp->npptrial);
    mt_json_knum(j, "res_npp", pp->res_npp);
    mt_json_kint(j, "max_pp", pp->max_pp);
    mt_json_kint(j, "warmup", pp->warmup);
    mt_json_kbool(j, "loop", pp->loop);
    mt_json_kbool(j, "bidir", pp->bidir);
    mt_json_kstr(j, "barrier", pp->barrier_all ? "all ranks" : "pair");
    mt_json_kint(j, "loop_reps", pp->loop_reps);
    mt_json_kint(j, "loop_iters", pp->loop_iters);
    mt_json_kstr(j, "datatype", "MPI_BYTE");
    mt_json_kstr(j, "buffers", pp->one_buffer ? "one" : "two");
    mt_json_kint(j, "handshake_bytes", 8);
    mt_json_kstr(j, "idle_ranks", pp->barrier_all ? "take part in every trial's MPI_Barrier on the whole job" : "sleep in MPI_Ibarrier/MPI_Test with 20 us naps");
    mt_json_key(j, "msizes");
    mt_json_arr_begin(j);
    for (int i = 0; i < nsizes; i++) mt_json_int(j, sizes[i]);
    mt_json_arr_end(j);
    mt_json_obj_end(j);
}

static int run(mt_run_t *r, char *err)
{
    pingpong_t *g = r->state;
    mt_ctx_t *ctx = &r->ctx;
    mt_pp_cfg_t *pp = &g->pp;
    const mt_timer_inst_t *ti = &ctx->timer;
    int is_src = ctx->rank == pp->source, nsizes = g->nsizes;
    const int64_t *sizes = g->sizes;
    int64_t max_msize = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > max_msize) max_msize = sizes[i];
    mt_pp_pair_t pair;
    int rc = mt_agree(ctx->comm, mt_pp_pair_init(&pair, ctx->comm, pp, ti, max_msize, err), err);
    if (rc != MT_OK) return rc;

    /* part 1: the timer study on the source, the others sleep */
    mt_pp_tstudy_t ts;
    memset(&ts, 0, sizeof ts);
    if (is_src) rc = mt_pp_timer_study(ti, mt_p_int(&r->cli.p, MTP_timer_reads), &ts, err);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) return rc;
    mt_pp_sleepy_barrier(ctx->comm);
    int64_t min_ov = ts.min_ov_ticks;
    double res_timing_s = mt_ticks_to_s(ti, ts.res_ticks);
    if (is_src && mt_run_progress(r))
        fprintf(stderr, "%s: timer %s: %lld pairs in %.2f s, res_timing %.1f ns, min_ov %.1f ns\n", r->app->prog,
                ti->t->name, (long long)ts.n, ts.seconds, res_timing_s * 1e9, mt_ticks_to_s(ti, min_ov) * 1e9);

    /* the document is streamed: header and configuration now, results as they come */
    FILE *csv = mt_run_file(r, "timings.csv");
    mt_json_t *jp = mt_run_meta_begin(r, 0);
    if (jp) {
        write_config(jp, pp, sizes, nsizes);
        mt_json_key(jp, "timer");
        mt_json_obj_begin(jp);
        mt_json_kstr(jp, "name", ti->t->name);
        mt_json_kstr(jp, "desc", ti->t->desc);
        mt_json_knum(jp, "ticks_per_s", ti->ticks_per_s);
        mt_json_knum(jp, "s_per_tick", ti->s_per_tick);
        mt_json_key(jp, "study");
        write_study(jp, ti, &ts);
        mt_json_obj_end(jp);
        mt_json_key(jp, "results");
        mt_json_arr_begin(jp);
        if (csv) fprintf(csv, "kind,msize,npp,trial,ticks,time_s\n");
    }
    mt_json_t j0, *j = jp ? jp : &j0; /* (only the source writes, and it has jp) */
    /* parts 2-4 per message size; only the pair works, the others sleep */
    int64_t maxn = pp->ntrial > pp->npptrial ? pp->ntrial : pp->npptrial;
    if (pp->loop && pp->loop_reps > maxn) maxn = pp->loop_reps;
    int64_t *ticks = malloc(sizeof(int64_t) * (size_t)maxn);
    double *ppt = malloc(sizeof(double) * (size_t)maxn);
    int64_t one_npp[1];
    rc = (ticks && ppt) ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory for %lld trials", (long long)maxn);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) return rc;
    /* with --barrier-all the idle ranks follow every trial's barrier on the whole job */
    int idle = pair.role < 0;
#define PP_TRIALS(fn, npp_, nt_) (idle ? mt_pp_idle_trials(&pair, (nt_)) : fn(&pair, msize, (npp_), (nt_), min_ov, ticks))
    for (int si = 0; si < nsizes && (!idle || pp->barrier_all); si++) {
        int64_t msize = sizes[si];
        if (!idle) mt_pp_warmup(&pair, msize, pp->warmup);
        /* part 3: npp estimate, npptrial timings of npp_init ping-pongs; when the
         * timer cannot see them at all (median 0 after subtracting its overhead),
         * 10x more ping-pongs per timing, up to MT_PP_NPP_EST_MAX, instead of
         * taking the largest npp allowed (10^8 ping-pongs per timing) */
        int64_t npp_est = pp->npp_init;
        int64_t npp_calc = 0;
        double median_ppt = 0;
        for (;;) {
            PP_TRIALS(mt_pp_trials, npp_est, pp->npptrial);
            int again = 0;
            if (is_src) {
                for (int64_t k = 0; k < pp->npptrial; k++) ppt[k] = mt_ticks_to_s(ti, ticks[k]) / (double)npp_est;
                median_ppt = mt_pp_median(ppt, pp->npptrial);
                again = !(median_ppt > 0) && npp_est < MT_PP_NPP_EST_MAX;
            }
            if (pp->barrier_all) /* the idle ranks follow the trials too */
                mt_check_mpi(MPI_Bcast(&again, 1, MPI_INT, pp->source, ctx->comm), "MPI_Bcast");
            else
                mt_check_mpi(MPI_Bcast(&again, 1, MPI_INT, 0, pair.pair), "MPI_Bcast");
            if (!again) break;
            npp_est *= 10;
        }
        if (is_src) {
            npp_calc = median_ppt > 0 ? mt_pp_npp_from(pp->res_npp, res_timing_s, median_ppt) : npp_est;
            mt_json_obj_begin(j);
            mt_json_kint(j, "msize", msize);
            mt_json_key(j, "npp_estimate");
            mt_json_obj_begin(j);
            mt_json_kint(j, "npp_init", pp->npp_init);
            mt_json_kint(j, "npp_estimate_used", npp_est);
            mt_json_kint(j, "npptrial", pp->npptrial);
            mt_json_knum(j, "median_ppt_s", median_ppt);
            mt_json_kint(j, "npp_calculated", npp_calc);
            if (!csv) write_ticks(j, ticks, pp->npptrial);
            mt_json_obj_end(j);
            csv_rows(csv, "estimate", msize, npp_est, ti, ticks, pp->npptrial);
        }
        if (pp->barrier_all)
            mt_check_mpi(MPI_Bcast(&npp_calc, 1, MPI_INT64_T, pp->source, ctx->comm), "MPI_Bcast");
        else
            mt_check_mpi(MPI_Bcast(&npp_calc, 1, MPI_INT64_T, 0, pair.pair), "MPI_Bcast");
        /* part 2: the timings, for every npp asked for */
        const int64_t *npps = pp->npp_sweep;
        int nnpp = pp->nsweep;
        if (!nnpp) {
            one_npp[0] = pp->npp ? pp->npp : npp_calc;
            npps = one_npp;
            nnpp = 1;
        }
        if (is_src) {
            mt_json_key(j, "sets");
            mt_json_arr_begin(j);
        }
        for (int q = 0; q < nnpp; q++) {
            int64_t nt = mt_pp_trials_for(pp, npps[q]);
            PP_TRIALS(mt_pp_trials, npps[q], nt);
            if (is_src) {
                mt_json_obj_begin(j);
                mt_json_kint(j, "npp", npps[q]);
                mt_json_kint(j, "ntrial", nt);
                write_quick_stats(j, ti, ticks, nt, 2.0 * (double)npps[q]);
                if (!csv) write_ticks(j, ticks, nt);
                mt_json_obj_end(j);
                csv_rows(csv, "pingpong", msize, npps[q], ti, ticks, nt);
                if (mt_run_progress(r))
                    fprintf(stderr, "%s: [%d/%d] %lld B npp %lld (calculated %lld): %lld trials\n", r->app->prog,
                            si + 1, nsizes, (long long)msize, (long long)npps[q], (long long)npp_calc, (long long)nt);
            }
        }
        if (is_src) mt_json_arr_end(j);
        /* bidirectional exchanges at the first npp of the sets */
        if (pp->bidir) {
            int64_t nt = mt_pp_trials_for(pp, npps[0]);
            PP_TRIALS(mt_pp_bidir_trials, npps[0], nt);
            if (is_src) {
                mt_json_key(j, "bidir");
                mt_json_obj_begin(j);
                mt_json_kint(j, "npp", npps[0]);
                mt_json_kint(j, "ntrial", nt);
                write_quick_stats(j, ti, ticks, nt, (double)npps[0]); /* seconds per exchange */
                if (!csv) write_ticks(j, ticks, nt);
                mt_json_obj_end(j);
                csv_rows(csv, "bidir", msize, npps[0], ti, ticks, nt);
            }
        }
        /* the loop-averaged method on the same pair, right after */
        if (pp->loop && !idle) {
            int64_t iters = mt_pp_loop_iters(pp, msize);
            int64_t skip = msize <= 8192 ? 100 : 10; /* osu_latency's skip */
            for (int64_t k = 0; k < pp->loop_reps; k++) mt_pp_loop(&pair, msize, skip, iters, &ticks[k]);
            if (is_src) {
                mt_json_key(j, "loop");
                mt_json_obj_begin(j);
                mt_json_kint(j, "iters", iters);
                mt_json_kint(j, "skip", skip);
                mt_json_kint(j, "reps", pp->loop_reps);
                write_quick_stats(j, ti, ticks, pp->loop_reps, 2.0 * (double)iters);
                if (!csv) write_ticks(j, ticks, pp->loop_reps);
                mt_json_obj_end(j);
                csv_rows(csv, "loop", msize, iters, ti, ticks, pp->loop_reps);
            }
        }
        if (is_src) mt_json_obj_end(j);
    }
#undef PP_TRIALS
    mt_pp_sleepy_barrier(ctx->comm);
    if (jp) {
        mt_json_arr_end(jp);
        mt_json_kstr(jp, "cache_policy", "warm");
    }
    mt_pp_tstudy_free(&ts);
    mt_pp_pair_free(&pair);
    free(ticks);
    free(ppt);
    return MT_OK;
}

static void done(mt_run_t *r)
{
    pingpong_t *g = r->state;
    if (!g) return;
    free(g->pp.npp_sweep);
    free(g->sizes);
    free(g);
    r->state = NULL;
}

static const mt_result_file_t files[] = {{"timings.csv", 0}, {"meta.json", 0}, {NULL, 0}};

static const mt_app_t pingpong_app = {
    .prog = "mpitempo-pingpong",
    .id = MT_APP_PINGPONG,
    .kind = "pingpong",
    .about = "Small-message ping-pong latency after Luecke et al. 2009: timer study, npp from the timer resolution, "
             "ntrial timings of npp ping-pongs per message size.",
    .output = "write DIR/timings.csv and DIR/meta.json (atomically) instead of JSON on stdout",
    .files = files,
    .meta_on_stdout = 1,
    .check = check,
    .check_json = check_json,
    .run = run,
    .done = done,
};

int main(int argc, char **argv) { return mt_run_main(&pingpong_app, argc, argv); }
