/* mpitempo-pingpong: the small-message latency method of paper 004 (Luecke
 * et al.). Run it under mpirun/srun with 2 or more ranks. It studies the
 * timer, estimates npp per message size, times ntrial loops of npp ping-pongs
 * between --source and --dest (the other ranks sleep), optionally runs the
 * loop-averaged OSU-style ping-pong on the same ranks, and writes the raw
 * timings: DIR/timings.csv + DIR/meta.json (atomically) with --outdir, or
 * one JSON document on stdout. Statistics are left to `mpitempo pingpong`.
 * File formats: docs/pingpong.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scheme/ctx.h"
#include "run/factors.h"
#include "run/files.h"
#include "base/json.h"
#include "base/mt_common.h"
#include "pingpong/pingpong.h"
#include "timer/timer.h"

#define PROG "mpitempo-pingpong"

typedef struct opts {
    mt_pp_cfg_t pp;
    const char *msizes, *timer, *outdir, *config, *launch_json, *sweep;
    long long timer_reads, run_index, expect_np;
    int quiet;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n N " PROG " [options]\n"
            "\n"
            "Small-message ping-pong latency after Luecke et al. (paper 004): timer study,\n"
            "npp from the timer resolution, ntrial timings of npp ping-pongs per message size.\n"
            "\n"
            "  --source R          rank that times the ping-pongs (default 0)\n"
            "  --dest R            the other rank (default: the last rank)\n"
            "  --msizes LIST       message sizes in bytes, 0 allowed: 0,8,1K or ranges 0-4M\n"
            "                      (powers of two; default 0-4M = 0,1,2,4,...,4M)\n"
            "  --ntrial N          timing trials per message size and npp (default 1000)\n"
            "  --npp N             ping-pongs per timing loop (default: estimated, section 3.3)\n"
            "  --npp-sweep LIST    several npp values, e.g. 1,9,18,36,72,144,15000 (Table 4.1)\n"
            "  --npp-init N        ping-pongs per loop for the npp estimate (default 20)\n"
            "  --npptrial N        timing trials for the npp estimate (default 50)\n"
            "  --res-npp X         npp = nint(max(1, X * res_timing / median_ppt)) (default 50)\n"
            "  --max-pp N          at most N ping-pongs per set: ntrial = min(ntrial, N / npp)\n"
            "  --warmup N          untimed ping-pongs before each message size (default 10)\n"
            "  --loop              also run the loop-averaged OSU/IMB-style ping-pong\n"
            "  --loop-iters N      ping-pongs in one loop-averaged timing (default 10000 up to\n"
            "                      8 KiB, 1000 above, as osu_latency)\n"
            "  --loop-reps N       loop-averaged timings per message size (default 10)\n"
            "  --timer NAME        monotonic (default), monotonic_raw, realtime, gettimeofday,\n"
            "                      rdtscp, wtime\n"
            "  --timer-reads N     back-to-back read pairs of the timer study (default 16777216)\n"
            "  --outdir DIR        write DIR/timings.csv and DIR/meta.json (atomically)\n"
            "                      instead of JSON on stdout\n"
            "  --config NAME       configuration name recorded in meta.json (default 'default')\n"
            "  --run-index N       index of this mpirun within its campaign (default 0)\n"
            "  --launch-json FILE  JSON object (launcher, command line) embedded in meta.json\n"
            "  --expect-np N       fail if the job does not have N ranks (wrong mpiexec)\n"
            "  --quiet             no progress lines on stderr\n"
            "  --version           print the version\n"
            "  -h, --help          this help\n");
}

static int parse_double(const char *s, const char *name, double *out, char *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || end == s || *end || errno == ERANGE || !isfinite(v))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a number", name, s);
    *out = v;
    return MT_OK;
}

/* Parse argv; pure (no MPI). Returns MT_OK or an error in err. */
static int parse_args(int argc, char **argv, opts_t *o, char *err)
{
    memset(o, 0, sizeof *o);
    o->pp.source = o->pp.dest = -1;
    o->pp.ntrial = 1000;
    o->pp.npp_init = 20;
    o->pp.npptrial = 50;
    o->pp.res_npp = 50.0;
    o->pp.warmup = 10;
    o->pp.loop_reps = 10;
    o->msizes = "0-4M";
    o->timer = "monotonic";
    o->config = "default";
    o->timer_reads = 1LL << 24;
    enum { O_SRC = 256, O_DST, O_MSIZES, O_NTRIAL, O_NPP, O_SWEEP, O_NPPINIT, O_NPPTRIAL, O_RESNPP, O_MAXPP,
           O_WARMUP, O_LOOP, O_LITERS, O_LREPS, O_TIMER, O_TREADS, O_OUTDIR, O_CONFIG, O_RUNIDX, O_LAUNCH,
           O_EXPECT, O_QUIET, O_VERSION };
    static const struct option lo[] = {
        {"source", required_argument, 0, O_SRC}, {"dest", required_argument, 0, O_DST},
        {"msizes", required_argument, 0, O_MSIZES}, {"ntrial", required_argument, 0, O_NTRIAL},
        {"npp", required_argument, 0, O_NPP}, {"npp-sweep", required_argument, 0, O_SWEEP},
        {"npp-init", required_argument, 0, O_NPPINIT}, {"npptrial", required_argument, 0, O_NPPTRIAL},
        {"res-npp", required_argument, 0, O_RESNPP}, {"max-pp", required_argument, 0, O_MAXPP},
        {"warmup", required_argument, 0, O_WARMUP}, {"loop", no_argument, 0, O_LOOP},
        {"loop-iters", required_argument, 0, O_LITERS}, {"loop-reps", required_argument, 0, O_LREPS},
        {"timer", required_argument, 0, O_TIMER}, {"timer-reads", required_argument, 0, O_TREADS},
        {"outdir", required_argument, 0, O_OUTDIR}, {"config", required_argument, 0, O_CONFIG},
        {"run-index", required_argument, 0, O_RUNIDX}, {"launch-json", required_argument, 0, O_LAUNCH},
        {"expect-np", required_argument, 0, O_EXPECT}, {"quiet", no_argument, 0, O_QUIET},
        {"version", no_argument, 0, O_VERSION}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, rc;
    long long v;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_SRC:
            if ((rc = mt_parse_int(optarg, "--source", 0, INT_MAX, &v, err))) return rc;
            o->pp.source = (int)v;
            break;
        case O_DST:
            if ((rc = mt_parse_int(optarg, "--dest", 0, INT_MAX, &v, err))) return rc;
            o->pp.dest = (int)v;
            break;
        case O_MSIZES: o->msizes = optarg; break;
        case O_NTRIAL:
            if ((rc = mt_parse_int(optarg, "--ntrial", 1, 1LL << 34, &v, err))) return rc;
            o->pp.ntrial = v;
            break;
        case O_NPP:
            if ((rc = mt_parse_int(optarg, "--npp", 1, MT_PP_NPP_MAX, &v, err))) return rc;
            o->pp.npp = v;
            break;
        case O_SWEEP: o->sweep = optarg; break;
        case O_NPPINIT:
            if ((rc = mt_parse_int(optarg, "--npp-init", 1, MT_PP_NPP_MAX, &v, err))) return rc;
            o->pp.npp_init = v;
            break;
        case O_NPPTRIAL:
            if ((rc = mt_parse_int(optarg, "--npptrial", 1, 1LL << 34, &v, err))) return rc;
            o->pp.npptrial = v;
            break;
        case O_RESNPP:
            if ((rc = parse_double(optarg, "--res-npp", &o->pp.res_npp, err))) return rc;
            if (!(o->pp.res_npp > 0))
                return mt_fail(err, MT_EINVAL, "invalid --res-npp '%s': must be > 0", optarg);
            break;
        case O_MAXPP:
            if ((rc = mt_parse_int(optarg, "--max-pp", 1, LLONG_MAX, &v, err))) return rc;
            o->pp.max_pp = v;
            break;
        case O_WARMUP:
            if ((rc = mt_parse_int(optarg, "--warmup", 0, 1LL << 34, &v, err))) return rc;
            o->pp.warmup = v;
            break;
        case O_LOOP: o->pp.loop = 1; break;
        case O_LITERS:
            if ((rc = mt_parse_int(optarg, "--loop-iters", 1, 1LL << 34, &v, err))) return rc;
            o->pp.loop_iters = v;
            break;
        case O_LREPS:
            if ((rc = mt_parse_int(optarg, "--loop-reps", 1, 1LL << 30, &v, err))) return rc;
            o->pp.loop_reps = v;
            break;
        case O_TIMER: o->timer = optarg; break;
        case O_TREADS:
            if ((rc = mt_parse_int(optarg, "--timer-reads", 1, 1LL << 34, &o->timer_reads, err))) return rc;
            break;
        case O_OUTDIR: o->outdir = optarg; break;
        case O_CONFIG: o->config = optarg; break;
        case O_RUNIDX: if ((rc = mt_parse_int(optarg, "--run-index", 0, INT_MAX, &o->run_index, err))) return rc; break;
        case O_LAUNCH: o->launch_json = optarg; break;
        case O_EXPECT: if ((rc = mt_parse_int(optarg, "--expect-np", 1, INT_MAX, &o->expect_np, err))) return rc; break;
        case O_QUIET: o->quiet = 1; break;
        case O_VERSION: printf(PROG " %s\n", MT_VERSION); exit(0);
        case 'h': usage(stdout); exit(0);
        default:
            if (optopt) return mt_fail(err, MT_EINVAL, "option '%s' needs a value (see --help)", argv[optind - 1]);
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    if (o->sweep) {
        char **items;
        int n;
        if ((rc = mt_split_list(o->sweep, &items, &n, err)) != MT_OK)
            return mt_fail(err, MT_EINVAL, "invalid --npp-sweep '%s': %s", o->sweep, err);
        o->pp.npp_sweep = malloc(sizeof(int64_t) * (size_t)n);
        if (!o->pp.npp_sweep) {
            mt_free_list(items, n);
            return mt_fail(err, MT_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            if ((rc = mt_parse_int(items[i], "--npp-sweep value", 1, MT_PP_NPP_MAX, &v, err))) {
                mt_free_list(items, n);
                return rc;
            }
            o->pp.npp_sweep[i] = v;
        }
        o->pp.nsweep = n;
        mt_free_list(items, n);
        if (o->pp.npp)
            return mt_fail(err, MT_EINVAL, "--npp and --npp-sweep exclude each other: give one of them");
    }
    return MT_OK;
}

/* All ranks agree on success. On failure every rank gets the message of the
 * lowest failing rank in err and MT_EINVAL/.. is returned everywhere. */
static int agree(MPI_Comm comm, int rc, char *err)
{
    int rank, size, first;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int mine = rc == MT_OK ? size : rank;
    mt_check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == size) return MT_OK;
    int code = rc;
    mt_check_mpi(MPI_Bcast(err, MT_ERRLEN, MPI_CHAR, first, comm), "MPI_Bcast");
    mt_check_mpi(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast");
    return code;
}

static int finish_error(int rank, const char *err) { return mt_finish_error(rank, PROG, err); }



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


int main(int argc, char **argv)
{
    opts_t o;
    char err[MT_ERRLEN] = "";
    int rc = parse_args(argc, argv, &o, err);
    mt_check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
    mt_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.comm = MPI_COMM_WORLD;
    mt_check_mpi(MPI_Comm_rank(ctx.comm, &ctx.rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(ctx.comm, &ctx.size), "MPI_Comm_size");
    if (rc != MT_OK) return finish_error(ctx.rank, err);

    char start_iso[64];
    mt_iso_now(start_iso, sizeof start_iso);
    mt_pp_cfg_t *pp = &o.pp;
    mt_pp_pair_t pair;
    int64_t *sizes = NULL;
    int nsizes = 0;
    if (o.expect_np && o.expect_np != ctx.size)
        rc = ctx.size == 1 ? mt_fail(err, MT_EINVAL,
                                     "expected %lld ranks but this process sees a job of 1: it was probably started "
                                     "by the mpiexec of a different MPI library than the one it was built with",
                                     o.expect_np)
                           : mt_fail(err, MT_EINVAL, "expected %lld ranks but the job has %d", o.expect_np, ctx.size);
    if (rc == MT_OK) {
        mt_pp_defaults(pp, ctx.size);
        rc = mt_pp_validate(pp, ctx.size, err);
    }
    if (rc == MT_OK && (rc = mt_parse_size_list_ex(o.msizes, 1, &sizes, &nsizes, err)) == MT_OK)
        for (int i = 0; i < nsizes; i++)
            if (sizes[i] > INT_MAX) {
                rc = mt_fail(err, MT_EINVAL, "invalid message size %lld: at most %d bytes", (long long)sizes[i],
                             INT_MAX);
                break;
            }
    if (rc == MT_OK) rc = mt_timer_open(o.timer, &ctx.timer, err);
    if ((rc = agree(ctx.comm, rc, err)) != MT_OK) return finish_error(ctx.rank, err);

    int is_src = ctx.rank == pp->source;
    const mt_timer_inst_t *ti = &ctx.timer;

    /* output: the source owns the results and writes them */
    mt_outfile_t csvo = {0}, metao = {0};
    FILE *csv = NULL, *out = NULL;
    char *launch = NULL;
    if (is_src && o.outdir) {
        static const char *const results[] = {"timings.csv", "meta.json", NULL};
        rc = mt_outdir_check(o.outdir, results, err);
        if (rc == MT_OK) rc = mt_outfile_open(&csvo, o.outdir, "timings.csv", err);
        if (rc == MT_OK) rc = mt_outfile_open(&metao, o.outdir, "meta.json", err);
        csv = csvo.f;
        out = metao.f;
    } else if (is_src) {
        out = stdout;
    }
    if (is_src && rc == MT_OK && o.launch_json && !(launch = mt_read_json_object(o.launch_json, "--launch-json", err))) rc = MT_EIO;
    /* agree before the collective MPI_Comm_split in mt_pp_pair_init */
    if ((rc = agree(ctx.comm, rc, err)) == MT_OK) {
        int64_t max_msize = 0;
        for (int i = 0; i < nsizes; i++)
            if (sizes[i] > max_msize) max_msize = sizes[i];
        rc = agree(ctx.comm, mt_pp_pair_init(&pair, ctx.comm, pp, ti, max_msize, err), err);
    }
    if (rc != MT_OK) {
        mt_outfile_abort(&csvo);
        mt_outfile_abort(&metao);
        return finish_error(ctx.rank, err);
    }

    /* placement of every rank */
    char rec[MT_RANKREC_LEN];
    mt_factors_rank_record(&ctx, rec, sizeof rec);
    char *recs = is_src ? malloc((size_t)ctx.size * MT_RANKREC_LEN) : NULL;
    mt_check_mpi(MPI_Gather(rec, MT_RANKREC_LEN, MPI_CHAR, recs, MT_RANKREC_LEN, MPI_CHAR, pp->source, ctx.comm),
                 "MPI_Gather");

    /* part 1: the timer study on the source, the others sleep */
    mt_pp_tstudy_t ts;
    memset(&ts, 0, sizeof ts);
    rc = MT_OK;
    if (is_src) rc = mt_pp_timer_study(ti, o.timer_reads, &ts, err);
    if ((rc = agree(ctx.comm, rc, err)) != MT_OK) return finish_error(ctx.rank, err);
    mt_pp_sleepy_barrier(ctx.comm);
    int64_t min_ov = ts.min_ov_ticks;
    double res_timing_s = mt_ticks_to_s(ti, ts.res_ticks);
    if (is_src && o.outdir && !o.quiet)
        fprintf(stderr, PROG ": timer %s: %lld pairs in %.2f s, res_timing %.1f ns, min_ov %.1f ns\n", ti->t->name,
                (long long)ts.n, ts.seconds, res_timing_s * 1e9, mt_ticks_to_s(ti, min_ov) * 1e9);

    mt_json_t j;
    if (is_src) {
        mt_json_init(&j, out);
        mt_json_obj_begin(&j);
        mt_factors_write_run_header(&j, PROG " " MT_VERSION, o.config, o.run_index, start_iso, NULL, argc, argv,
                                    launch, ctx.size, recs);
        mt_json_kstr(&j, "kind", "pingpong");
        mt_json_key(&j, "pingpong");
        mt_json_obj_begin(&j);
        mt_json_kint(&j, "source", pp->source);
        mt_json_kint(&j, "dest", pp->dest);
        mt_json_kint(&j, "ntrial", pp->ntrial);
        mt_json_key(&j, "npp");
        if (pp->npp) mt_json_int(&j, pp->npp);
        else mt_json_null(&j);
        mt_json_key(&j, "npp_sweep");
        if (pp->nsweep) {
            mt_json_arr_begin(&j);
            for (int i = 0; i < pp->nsweep; i++) mt_json_int(&j, pp->npp_sweep[i]);
            mt_json_arr_end(&j);
        } else {
            mt_json_null(&j);
        }
        mt_json_kint(&j, "npp_init", pp->npp_init);
        mt_json_kint(&j, "npptrial", pp->npptrial);
        mt_json_knum(&j, "res_npp", pp->res_npp);
        mt_json_kint(&j, "max_pp", pp->max_pp);
        mt_json_kint(&j, "warmup", pp->warmup);
        mt_json_kbool(&j, "loop", pp->loop);
        mt_json_kint(&j, "loop_reps", pp->loop_reps);
        mt_json_kint(&j, "loop_iters", pp->loop_iters);
        mt_json_kstr(&j, "datatype", "MPI_BYTE");
        mt_json_kint(&j, "handshake_bytes", 8);
        mt_json_kstr(&j, "idle_ranks", "sleep in MPI_Ibarrier/MPI_Test with 20 us naps");
        mt_json_key(&j, "msizes");
        mt_json_arr_begin(&j);
        for (int i = 0; i < nsizes; i++) mt_json_int(&j, sizes[i]);
        mt_json_arr_end(&j);
        mt_json_obj_end(&j);
        mt_json_key(&j, "timer");
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "name", ti->t->name);
        mt_json_kstr(&j, "desc", ti->t->desc);
        mt_json_knum(&j, "ticks_per_s", ti->ticks_per_s);
        mt_json_knum(&j, "s_per_tick", ti->s_per_tick);
        mt_json_key(&j, "study");
        write_study(&j, ti, &ts);
        mt_json_obj_end(&j);
        mt_json_key(&j, "results");
        mt_json_arr_begin(&j);
        if (csv) fprintf(csv, "kind,msize,npp,trial,ticks,time_s\n");
    }

    /* parts 2-4 per message size; only the pair works, the others sleep */
    int64_t maxn = pp->ntrial > pp->npptrial ? pp->ntrial : pp->npptrial;
    if (pp->loop && pp->loop_reps > maxn) maxn = pp->loop_reps;
    int64_t *ticks = malloc(sizeof(int64_t) * (size_t)maxn);
    double *ppt = malloc(sizeof(double) * (size_t)maxn);
    int64_t one_npp[1];
    rc = (ticks && ppt) ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory for %lld trials", (long long)maxn);
    if ((rc = agree(ctx.comm, rc, err)) != MT_OK) return finish_error(ctx.rank, err);
    for (int si = 0; si < nsizes && pair.role >= 0; si++) {
        int64_t msize = sizes[si];
        mt_pp_warmup(&pair, msize, pp->warmup);
        /* part 3: npp estimate, npptrial timings of npp_init ping-pongs */
        mt_pp_trials(&pair, msize, pp->npp_init, pp->npptrial, min_ov, ticks);
        int64_t npp_calc = 0;
        double median_ppt = 0;
        if (is_src) {
            for (int64_t k = 0; k < pp->npptrial; k++) ppt[k] = mt_ticks_to_s(ti, ticks[k]) / (double)pp->npp_init;
            median_ppt = mt_pp_median(ppt, pp->npptrial);
            npp_calc = mt_pp_npp_from(pp->res_npp, res_timing_s, median_ppt);
            mt_json_obj_begin(&j);
            mt_json_kint(&j, "msize", msize);
            mt_json_key(&j, "npp_estimate");
            mt_json_obj_begin(&j);
            mt_json_kint(&j, "npp_init", pp->npp_init);
            mt_json_kint(&j, "npptrial", pp->npptrial);
            mt_json_knum(&j, "median_ppt_s", median_ppt);
            mt_json_kint(&j, "npp_calculated", npp_calc);
            if (!csv) write_ticks(&j, ticks, pp->npptrial);
            mt_json_obj_end(&j);
            csv_rows(csv, "estimate", msize, pp->npp_init, ti, ticks, pp->npptrial);
        }
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
            mt_json_key(&j, "sets");
            mt_json_arr_begin(&j);
        }
        for (int q = 0; q < nnpp; q++) {
            int64_t nt = mt_pp_trials_for(pp, npps[q]);
            mt_pp_trials(&pair, msize, npps[q], nt, min_ov, ticks);
            if (is_src) {
                mt_json_obj_begin(&j);
                mt_json_kint(&j, "npp", npps[q]);
                mt_json_kint(&j, "ntrial", nt);
                write_quick_stats(&j, ti, ticks, nt, 2.0 * (double)npps[q]);
                if (!csv) write_ticks(&j, ticks, nt);
                mt_json_obj_end(&j);
                csv_rows(csv, "pingpong", msize, npps[q], ti, ticks, nt);
                if (o.outdir && !o.quiet)
                    fprintf(stderr, PROG ": [%d/%d] %lld B npp %lld (calculated %lld): %lld trials\n", si + 1, nsizes,
                            (long long)msize, (long long)npps[q], (long long)npp_calc, (long long)nt);
            }
        }
        if (is_src) mt_json_arr_end(&j);
        /* the loop-averaged method on the same pair, right after */
        if (pp->loop) {
            int64_t iters = mt_pp_loop_iters(pp, msize);
            int64_t skip = msize <= 8192 ? 100 : 10; /* osu_latency's skip */
            for (int64_t r = 0; r < pp->loop_reps; r++) mt_pp_loop(&pair, msize, skip, iters, &ticks[r]);
            if (is_src) {
                mt_json_key(&j, "loop");
                mt_json_obj_begin(&j);
                mt_json_kint(&j, "iters", iters);
                mt_json_kint(&j, "skip", skip);
                mt_json_kint(&j, "reps", pp->loop_reps);
                write_quick_stats(&j, ti, ticks, pp->loop_reps, 2.0 * (double)iters);
                if (!csv) write_ticks(&j, ticks, pp->loop_reps);
                mt_json_obj_end(&j);
                csv_rows(csv, "loop", msize, iters, ti, ticks, pp->loop_reps);
            }
        }
        if (is_src) mt_json_obj_end(&j);
    }
    mt_pp_sleepy_barrier(ctx.comm);

    rc = MT_OK;
    if (is_src) {
        char end_iso[64];
        mt_iso_now(end_iso, sizeof end_iso);
        mt_json_arr_end(&j);
        mt_json_kstr(&j, "end_time", end_iso);
        mt_json_kstr(&j, "cache_policy", "warm");
        mt_json_key(&j, "machine");
        mt_factors_write_machine(&j);
        mt_json_key(&j, "build");
        mt_factors_write_build(&j);
        mt_json_key(&j, "environment");
        mt_factors_write_env(&j);
        mt_json_obj_end(&j);
        fputc('\n', out);
        if (csv) {
            /* the CSV first: meta.json's presence marks a complete run */
            rc = mt_outfile_commit(&csvo, err);
            if (rc == MT_OK) rc = mt_outfile_commit(&metao, err);
            else mt_outfile_abort(&metao);
        } else {
            fflush(stdout);
        }
    }
    mt_pp_tstudy_free(&ts);
    mt_pp_pair_free(&pair);
    free(ticks);
    free(ppt);
    free(recs);
    free(launch);
    free(sizes);
    free(pp->npp_sweep);
    if ((rc = agree(ctx.comm, rc, err)) != MT_OK) return finish_error(ctx.rank, err);
    mt_check_mpi(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
