/* mpitempo-bench: the measurement executable. Run it under mpirun/srun.
 * It measures a shuffled list of experiments (operation x message size) with
 * one scheme and writes measurements.csv and meta.json (see docs/file-formats.md),
 * or prints a table when no --outdir is given. */
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
#include <time.h>
#include <unistd.h>

#include "op/cache.h"
#include "scheme/ctx.h"
#include "run/factors.h"
#include "run/files.h"
#include "base/json.h"
#include "base/mt_common.h"
#include "op/op.h"
#include "scheme/scheme.h"
#include "clock/sync.h"

/* the sync used when a clock-based scheme is chosen without --sync */
#define MT_DEFAULT_SYNC "hca3"
#include "timer/timer.h"

typedef struct opts {
    const char *ops, *msizes, *timer, *scheme, *datatype, *redop;
    const char *outdir, *config, *launch_json, *cache, *cache_size, *delay;
    const char *sync, *sim_offsets, *sim_drifts, *sim_random;
    double resync_age; /* --resync-age: re-sync between experiments when the model is older (s); 0 = never */
    long long nrep, warmup, inner, root, run_index, expect_np, timer_reads, seed, window_chunk, min_valid;
    int have_seed, list, timer_study, quiet, timestamps, allow_few_valid, no_rt_adapt;
    const char *rt_slack, *time_slice, *window, *barrier_skew;
} opts_t;

typedef struct exp {
    const mt_op_t *op;
    int64_t msize;
} exp_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n N mpitempo-bench [options]\n"
            "\n"
            "Measures MPI operations (op x message size, shuffled) with one measurement scheme.\n"
            "\n"
            "  --ops LIST          operations, comma-separated (default allreduce); see --list\n"
            "  --msizes LIST       message sizes in bytes: 8,64,1K or ranges 8-1M (powers of two)\n"
            "                      (default 8,64,512,4K); barrier ignores sizes (recorded as 0)\n"
            "  --nrep N            measurements per experiment (default 100)\n"
            "  --warmup N          untimed calls before each experiment (default 10)\n"
            "  --inner N           calls per measurement in the loop scheme (default 10)\n"
            "  --scheme NAME       barrier (MS1, default), loop (MS2) or barrier_loop (MS3)\n"
            "  --cache POLICY      warm (default), cold (evict after each measurement) or cycle\n"
            "                      (mpptest-style moving buffers)\n"
            "  --cache-size SIZE   cache size to defeat (default: largest private cache in sysfs)\n"
            "  --delay LIST        busy-wait of the synthetic op 'delay' per rank, e.g. 20us or\n"
            "                      10us,50us (rank i gets item i mod n; units s, ms, us, ns)\n"
            "  --timer NAME        monotonic (default), monotonic_raw, realtime, gettimeofday,\n"
            "                      rdtscp, wtime\n"
            "  --timer-reads N     back-to-back reads for the timer resolution study (default 1000000)\n"
            "  --datatype NAME     byte (default), char, int, long, int64, float, double;\n"
            "                      count = floor(msize / type size)\n"
            "  --redop NAME        reduction operator: sum (default), prod, max, min\n"
            "  --root R            root of rooted collectives (default 0)\n"
            "  --sync SPEC         synchronise a global clock once before measuring (default none),\n"
            "                      e.g. hca3 or h2:hca3/prop; spec syntax in docs/clocks.md. Its spec,\n"
            "                      duration and accuracy (after sync and at the end) go to meta.json\n"
            "  --resync-age S      with --sync: re-synchronise between experiments (never inside a timed\n"
            "                      region) when the model is older than S seconds (default 0: never)\n"
            "  --sim-offsets LIST  SIMULATED clock: offset in s per rank (testing only; recorded)\n"
            "  --sim-drifts LIST   SIMULATED clock: drift in ppm per rank\n"
            "  --sim-random SPEC   SIMULATED clock: SEED[:MAXOFF_S[:MAXDRIFT_PPM]]\n"
            "  --rt-slack B        Round-Time: start = now + B x Bcast latency (B >= 1, default 2)\n"
            "  --no-rt-adapt       Round-Time: keep the slack at B x latency even after late rounds\n"
            "                      (Alg. 5 exactly; by default it grows by 2 x the lateness seen)\n"
            "  --time-slice T      Round-Time: time per experiment, e.g. 1s, 200ms (default 1s);\n"
            "                      --nrep is then the maximum number of valid measurements\n"
            "  --window T          window scheme: window size (default: from a pilot)\n"
            "  --window-chunk N    window scheme: re-anchor the grid every N windows (default 10)\n"
            "  --timestamps        write timestamps.csv: per-rank start and end of every\n"
            "                      measurement on the global clock (clock-based schemes)\n"
            "  --min-valid N       an experiment with fewer valid measurements is an error\n"
            "                      (exit code 3 after writing the files; default 10 or nrep)\n"
            "  --allow-few-valid   report too few valid measurements but exit 0\n"
            "  --barrier-skew R:T  emulate an imbalanced barrier: after each MPI_Barrier of the\n"
            "                      barrier-based schemes rank R waits T (e.g. 1:20us)\n"
            "  --seed N            seed of the experiment shuffle (default: from the clock, recorded)\n"
            "  --outdir DIR        write DIR/measurements.csv and DIR/meta.json (atomically)\n"
            "  --config NAME       configuration name recorded in meta.json (default 'default')\n"
            "  --run-index N       index of this mpirun within its campaign (default 0)\n"
            "  --launch-json FILE  JSON object (launcher, command line) embedded in meta.json\n"
            "  --expect-np N       fail if the job does not have N ranks (wrong mpiexec)\n"
            "  --quiet             no progress lines on stderr\n"
            "  --list              print the registries (timers, ops, schemes, datatypes) as JSON\n"
            "  --timer-study       print resolution and overhead of every timer as JSON\n"
            "  --version           print the version\n"
            "  -h, --help          this help\n");
}

static void print_list(void)
{
    mt_json_t j;
    mt_json_init(&j, stdout);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "version", MT_VERSION);
    mt_json_key(&j, "timers");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_ntimers; i++) {
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "name", mt_timers[i]->name);
        mt_json_kstr(&j, "desc", mt_timers[i]->desc);
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    mt_json_key(&j, "ops");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_nops; i++) {
        const mt_op_t *op = mt_ops[i];
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "name", op->name);
        mt_json_kstr(&j, "mpi_name", op->mpi_name);
        mt_json_kint(&j, "min_procs", op->min_procs);
        mt_json_kbool(&j, "rooted", (op->flags & MT_OP_ROOTED) != 0);
        mt_json_kbool(&j, "reduction", (op->flags & MT_OP_REDUCTION) != 0);
        mt_json_kbool(&j, "sizeless", (op->flags & MT_OP_NOSIZE) != 0);
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    mt_json_key(&j, "schemes");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_nschemes; i++) {
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "name", mt_schemes[i]->name);
        mt_json_kstr(&j, "desc", mt_schemes[i]->desc);
        mt_json_kbool(&j, "needs_global_clock", mt_schemes[i]->needs_global_clock);
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    mt_json_key(&j, "datatypes");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_ndtypes; i++) mt_json_str(&j, mt_dtypes[i].name);
    mt_json_arr_end(&j);
    mt_json_key(&j, "redops");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_nredops; i++) mt_json_str(&j, mt_redops[i].name);
    mt_json_arr_end(&j);
    mt_json_obj_end(&j);
}

/* Parse argv; returns MT_OK, or an error in err. Pure: no MPI. */
static int parse_args(int argc, char **argv, opts_t *o, char *err)
{
    memset(o, 0, sizeof *o);
    o->ops = "allreduce";
    o->msizes = "8,64,512,4K";
    o->timer = "monotonic";
    o->scheme = "barrier";
    o->datatype = "byte";
    o->redop = "sum";
    o->config = "default";
    o->cache = "warm";
    o->delay = "10us";
    o->nrep = 100;
    o->warmup = 10;
    o->inner = 10;
    o->timer_reads = 1000000;
    o->sync = "none";
    o->rt_slack = "2";
    o->time_slice = "1s";
    o->window_chunk = 10;
    o->min_valid = -1;
    enum { O_OPS = 256, O_MSIZES, O_NREP, O_WARMUP, O_INNER, O_SCHEME, O_TIMER, O_TREADS, O_DTYPE, O_REDOP,
           O_ROOT, O_SEED, O_OUTDIR, O_CONFIG, O_RUNIDX, O_LAUNCH, O_EXPECT, O_QUIET, O_LIST, O_TSTUDY,
           O_VERSION, O_CACHE, O_CACHESIZE, O_DELAY, O_SYNC, O_SOFF, O_SDRIFT, O_SRAND,
           O_RTSLACK, O_SLICE, O_WINDOW, O_WCHUNK, O_TSTAMPS, O_MINVALID, O_ALLOWFEW, O_BSKEW, O_NOADAPT, O_RESYNC };
    static const struct option lo[] = {
        {"ops", required_argument, 0, O_OPS}, {"msizes", required_argument, 0, O_MSIZES},
        {"nrep", required_argument, 0, O_NREP}, {"warmup", required_argument, 0, O_WARMUP},
        {"inner", required_argument, 0, O_INNER}, {"scheme", required_argument, 0, O_SCHEME},
        {"timer", required_argument, 0, O_TIMER}, {"timer-reads", required_argument, 0, O_TREADS},
        {"datatype", required_argument, 0, O_DTYPE}, {"redop", required_argument, 0, O_REDOP},
        {"root", required_argument, 0, O_ROOT}, {"seed", required_argument, 0, O_SEED},
        {"outdir", required_argument, 0, O_OUTDIR}, {"config", required_argument, 0, O_CONFIG},
        {"run-index", required_argument, 0, O_RUNIDX}, {"launch-json", required_argument, 0, O_LAUNCH},
        {"expect-np", required_argument, 0, O_EXPECT}, {"quiet", no_argument, 0, O_QUIET},
        {"list", no_argument, 0, O_LIST}, {"timer-study", no_argument, 0, O_TSTUDY},
        {"version", no_argument, 0, O_VERSION}, {"cache", required_argument, 0, O_CACHE},
        {"cache-size", required_argument, 0, O_CACHESIZE}, {"delay", required_argument, 0, O_DELAY},
        {"sync", required_argument, 0, O_SYNC}, {"resync-age", required_argument, 0, O_RESYNC},
        {"sim-offsets", required_argument, 0, O_SOFF}, {"sim-drifts", required_argument, 0, O_SDRIFT},
        {"sim-random", required_argument, 0, O_SRAND}, {"rt-slack", required_argument, 0, O_RTSLACK},
        {"time-slice", required_argument, 0, O_SLICE}, {"window", required_argument, 0, O_WINDOW},
        {"window-chunk", required_argument, 0, O_WCHUNK}, {"timestamps", no_argument, 0, O_TSTAMPS},
        {"min-valid", required_argument, 0, O_MINVALID}, {"allow-few-valid", no_argument, 0, O_ALLOWFEW},
        {"barrier-skew", required_argument, 0, O_BSKEW}, {"no-rt-adapt", no_argument, 0, O_NOADAPT},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_OPS: o->ops = optarg; break;
        case O_MSIZES: o->msizes = optarg; break;
        case O_NREP: if ((rc = mt_parse_int(optarg, "--nrep", 1, 100000000, &o->nrep, err))) return rc; break;
        case O_WARMUP: if ((rc = mt_parse_int(optarg, "--warmup", 0, 100000000, &o->warmup, err))) return rc; break;
        case O_INNER: if ((rc = mt_parse_int(optarg, "--inner", 1, 100000000, &o->inner, err))) return rc; break;
        case O_SCHEME: o->scheme = optarg; break;
        case O_TIMER: o->timer = optarg; break;
        case O_TREADS:
            if ((rc = mt_parse_int(optarg, "--timer-reads", 1, (long long)1 << 34, &o->timer_reads, err))) return rc;
            break;
        case O_DTYPE: o->datatype = optarg; break;
        case O_REDOP: o->redop = optarg; break;
        case O_ROOT: if ((rc = mt_parse_int(optarg, "--root", 0, INT_MAX, &o->root, err))) return rc; break;
        case O_SEED:
            if ((rc = mt_parse_int(optarg, "--seed", 0, LLONG_MAX, &o->seed, err))) return rc;
            o->have_seed = 1;
            break;
        case O_OUTDIR: o->outdir = optarg; break;
        case O_CONFIG: o->config = optarg; break;
        case O_RUNIDX: if ((rc = mt_parse_int(optarg, "--run-index", 0, INT_MAX, &o->run_index, err))) return rc; break;
        case O_LAUNCH: o->launch_json = optarg; break;
        case O_EXPECT: if ((rc = mt_parse_int(optarg, "--expect-np", 1, INT_MAX, &o->expect_np, err))) return rc; break;
        case O_QUIET: o->quiet = 1; break;
        case O_CACHE: o->cache = optarg; break;
        case O_CACHESIZE: o->cache_size = optarg; break;
        case O_DELAY: o->delay = optarg; break;
        case O_SYNC: o->sync = optarg; break;
        case O_RESYNC: {
            char *end = NULL;
            o->resync_age = strtod(optarg, &end);
            if (end == optarg || *end || !(o->resync_age >= 0) || o->resync_age > 1e9)
                return mt_fail(err, MT_EINVAL, "invalid --resync-age '%s': expected seconds >= 0", optarg);
            break;
        }
        case O_SOFF: o->sim_offsets = optarg; break;
        case O_SDRIFT: o->sim_drifts = optarg; break;
        case O_SRAND: o->sim_random = optarg; break;
        case O_RTSLACK: o->rt_slack = optarg; break;
        case O_SLICE: o->time_slice = optarg; break;
        case O_WINDOW: o->window = optarg; break;
        case O_WCHUNK:
            if ((rc = mt_parse_int(optarg, "--window-chunk", 1, 100000000, &o->window_chunk, err))) return rc;
            break;
        case O_TSTAMPS: o->timestamps = 1; break;
        case O_MINVALID:
            if ((rc = mt_parse_int(optarg, "--min-valid", 0, 100000000, &o->min_valid, err))) return rc;
            break;
        case O_ALLOWFEW: o->allow_few_valid = 1; break;
        case O_BSKEW: o->barrier_skew = optarg; break;
        case O_NOADAPT: o->no_rt_adapt = 1; break;
        case O_LIST: o->list = 1; break;
        case O_TSTUDY: o->timer_study = 1; break;
        case O_VERSION: printf("mpitempo-bench %s\n", MT_VERSION); exit(0);
        case 'h': usage(stdout); exit(0);
        default:
            if (optopt) return mt_fail(err, MT_EINVAL, "option '%s' needs a value (see --help)", argv[optind - 1]);
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    return MT_OK;
}

/* "R:T" -> rank and seconds */
static int parse_skew(const char *s, int *rank, double *t, char *err)
{
    const char *colon = strchr(s, ':');
    long long r;
    char rs[32];
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof rs)
        return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': expected RANK:TIME, e.g. 1:20us", s);
    memcpy(rs, s, (size_t)(colon - s));
    rs[colon - s] = '\0';
    if (mt_parse_int(rs, "--barrier-skew rank", 0, INT_MAX, &r, err) != MT_OK) return MT_EINVAL;
    if (mt_parse_duration(colon + 1, t, err) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': expected RANK:TIME, e.g. 1:20us", s);
    *rank = (int)r;
    return MT_OK;
}

/* Validate the names and build the experiment list (in canonical order). */
static int build_experiments(const opts_t *o, int nprocs, exp_t **out, int *nexp, char *err)
{
    char **names;
    int nn, rc;
    char allowed[1024];
    if ((rc = mt_split_list(o->ops, &names, &nn, err)) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid --ops '%s': %s", o->ops, err);
    int64_t *sizes = NULL;
    int ns = 0;
    if ((rc = mt_parse_size_list(o->msizes, &sizes, &ns, err)) != MT_OK) {
        mt_free_list(names, nn);
        return rc;
    }
    exp_t *e = malloc(sizeof(exp_t) * (size_t)(nn * ns + 1));
    int k = 0;
    for (int i = 0; i < nn; i++) {
        const mt_op_t *op = mt_op_find(names[i]);
        if (!op) {
            mt_op_names(allowed, sizeof allowed);
            rc = mt_fail(err, MT_EINVAL, "unknown op '%s' (allowed: %s)", names[i], allowed);
            goto fail;
        }
        if (nprocs < op->min_procs) {
            rc = mt_fail(err, MT_EINVAL, "op '%s' needs at least %d ranks, but the job has %d", op->name,
                         op->min_procs, nprocs);
            goto fail;
        }
        for (int j = 0; j < k; j++)
            if (e[j].op == op) {
                rc = mt_fail(err, MT_EINVAL, "op '%s' is listed twice in --ops", op->name);
                goto fail;
            }
        if (op->flags & MT_OP_NOSIZE) {
            e[k].op = op;
            e[k++].msize = 0;
        } else
            for (int j = 0; j < ns; j++) {
                e[k].op = op;
                e[k++].msize = sizes[j];
            }
    }
    mt_free_list(names, nn);
    free(sizes);
    *out = e;
    *nexp = k;
    return MT_OK;
fail:
    mt_free_list(names, nn);
    free(sizes);
    free(e);
    return rc;
}

static int validate(const opts_t *o, int nprocs, char *err)
{
    char allowed[1024];
    if (!mt_timer_find(o->timer)) {
        mt_timer_inst_t ti;
        return mt_timer_open(o->timer, &ti, err); /* produces the message with allowed names */
    }
    if (!mt_scheme_find(o->scheme)) {
        mt_scheme_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown scheme '%s' (allowed: %s)", o->scheme, allowed);
    }
    if (!mt_dtype_find(o->datatype)) {
        mt_dtype_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown datatype '%s' (allowed: %s)", o->datatype, allowed);
    }
    if (!mt_redop_find(o->redop)) {
        mt_redop_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown reduction op '%s' (allowed: %s)", o->redop, allowed);
    }
    if (mt_cache_policy(o->cache) < 0)
        return mt_fail(err, MT_EINVAL, "unknown cache policy '%s' (allowed: warm, cold, cycle)", o->cache);
    if (o->cache_size) {
        int64_t cs;
        int rc = mt_parse_size(o->cache_size, &cs, err);
        if (rc != MT_OK) return mt_fail(err, rc, "invalid --cache-size: %s", err);
    }
    {
        char **items;
        int n, rc = mt_split_list(o->delay, &items, &n, err);
        if (rc != MT_OK) return mt_fail(err, rc, "invalid --delay '%s': %s", o->delay, err);
        for (int i = 0; i < n && rc == MT_OK; i++) {
            double d;
            rc = mt_parse_duration(items[i], &d, err);
        }
        mt_free_list(items, n);
        if (rc != MT_OK) return rc;
    }
    mt_sync_spec_t sp;
    int src = mt_sync_spec_parse(o->sync, &sp, err);
    if (src != MT_OK) return src;
    {
        char *end = NULL;
        double b = strtod(o->rt_slack, &end);
        if (end == o->rt_slack || *end || !(b >= 1.0))
            return mt_fail(err, MT_EINVAL, "invalid --rt-slack '%s': B must be a number >= 1", o->rt_slack);
        double t;
        int rc = mt_parse_duration(o->time_slice, &t, err);
        if (rc != MT_OK) return mt_fail(err, rc, "invalid --time-slice: %s", err);
        if (!(t > 0)) return mt_fail(err, MT_EINVAL, "invalid --time-slice '%s': must be > 0", o->time_slice);
        if (o->window) {
            rc = mt_parse_duration(o->window, &t, err);
            if (rc != MT_OK) return mt_fail(err, rc, "invalid --window: %s", err);
            if (!(t > 0)) return mt_fail(err, MT_EINVAL, "invalid --window '%s': the window size must be > 0", o->window);
        }
    }
    if (o->barrier_skew) {
        int r;
        double t;
        if (parse_skew(o->barrier_skew, &r, &t, err) != MT_OK) return MT_EINVAL;
        if (r >= nprocs)
            return mt_fail(err, MT_EINVAL, "invalid --barrier-skew '%s': rank %d is not in the job (0..%d)",
                           o->barrier_skew, r, nprocs - 1);
    }
    if (o->timestamps && !mt_scheme_find(o->scheme)->needs_global_clock)
        return mt_fail(err, MT_EINVAL,
                       "--timestamps needs a scheme that times on the global clock (window, roundtime), not '%s'",
                       o->scheme);
    if (o->root >= nprocs)
        return mt_fail(err, MT_EINVAL, "invalid --root %lld: the job has %d ranks (allowed: 0..%d)", o->root,
                       nprocs, nprocs - 1);
    if (o->expect_np && o->expect_np != nprocs) {
        if (nprocs == 1)
            return mt_fail(err, MT_EINVAL,
                           "expected %lld ranks but this process sees a job of 1: it was probably started by "
                           "the mpiexec of a different MPI library than the one it was built with",
                           o->expect_np);
        return mt_fail(err, MT_EINVAL, "expected %lld ranks but the job has %d", o->expect_np, nprocs);
    }
    return MT_OK;
}

/* this rank's value of a per-rank list "a,b,c" (rank i gets item i mod n); validated before */
static double rank_delay(const char *list, int rank)
{
    char **items;
    int n;
    double d = 0;
    char err[MT_ERRLEN];
    if (mt_split_list(list, &items, &n, err) != MT_OK) return 0;
    mt_parse_duration(items[rank % n], &d, err);
    mt_free_list(items, n);
    return d;
}

static double median_of(const double *v, const int *valid, int n)
{
    double *c = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; i < n; i++)
        if (valid[i]) c[m++] = v[i];
    double r = NAN;
    if (m > 0) {
        /* insertion sort is fine for the table output only */
        for (int i = 1; i < m; i++) {
            double x = c[i];
            int j = i - 1;
            while (j >= 0 && c[j] > x) { c[j + 1] = c[j]; j--; }
            c[j + 1] = x;
        }
        r = (m % 2) ? c[m / 2] : 0.5 * (c[m / 2 - 1] + c[m / 2]);
    }
    free(c);
    return r;
}

static int timer_study_all(long long nreads)
{
    mt_json_t j;
    mt_json_init(&j, stdout);
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_ntimers; i++) {
        mt_timer_inst_t ti;
        char err[MT_ERRLEN];
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "timer", mt_timers[i]->name);
        if (mt_timer_open(mt_timers[i]->name, &ti, err) != MT_OK) {
            mt_json_kbool(&j, "available", 0);
            mt_json_kstr(&j, "error", err);
        } else {
            mt_timer_quality_t q;
            mt_timer_study(&ti, nreads, &q);
            mt_json_kbool(&j, "available", 1);
            mt_json_knum(&j, "ticks_per_s", ti.ticks_per_s);
            mt_json_kint(&j, "nreads", q.nreads);
            mt_json_knum(&j, "resolution_s", q.res_s);
            mt_json_knum(&j, "min_overhead_s", q.min_ov_s);
            mt_json_knum(&j, "mean_read_s", q.mean_read_s);
        }
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    return 0;
}

/* all ranks agree on success: returns 1 when every rank had rc == MT_OK */
static int all_ok(int rc)
{
    int mine = rc == MT_OK, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static int finish_error(int rank, const char *err) { return mt_finish_error(rank, "mpitempo-bench", err); }

int main(int argc, char **argv)
{
    opts_t o;
    char err[MT_ERRLEN] = "";
    int rc = parse_args(argc, argv, &o, err);
    if (rc == MT_OK && o.list) {
        print_list();
        return 0;
    }
    MPI_Init(&argc, &argv);
    mt_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(ctx.comm, &ctx.rank);
    MPI_Comm_size(ctx.comm, &ctx.size);
    if (rc != MT_OK) return finish_error(ctx.rank, err);

    if (o.timer_study) {
        if (ctx.rank == 0) timer_study_all(o.timer_reads);
        MPI_Finalize();
        return 0;
    }

    char start_iso[64];
    mt_iso_now(start_iso, sizeof start_iso);
    exp_t *exps = NULL;
    int nexp = 0;
    rc = validate(&o, ctx.size, err);
    if (rc == MT_OK) rc = build_experiments(&o, ctx.size, &exps, &nexp, err);
    if (rc != MT_OK) return finish_error(ctx.rank, err);

    /* timer: every rank opens and calibrates its own */
    rc = mt_timer_open(o.timer, &ctx.timer, err);
    if (!all_ok(rc)) {
        if (ctx.rank == 0 && rc == MT_OK) snprintf(err, sizeof err, "timer '%s' failed on another rank", o.timer);
        return finish_error(ctx.rank, err);
    }
    /* global clock: sync once per mpirun (the lesson of issue 3: re-syncing
     * before every job costs far more than it gains); check its accuracy now
     * and again after the last experiment */
    mt_sync_spec_t sspec;
    mt_sync_spec_parse(o.sync, &sspec, err);
    int sync_defaulted = 0;
    if (sspec.none && mt_scheme_find(o.scheme)->needs_global_clock) {
        /* a clock-based scheme without --sync: use the default algorithm and say so */
        mt_sync_spec_parse(MT_DEFAULT_SYNC, &sspec, err);
        sync_defaulted = 1;
        if (ctx.rank == 0)
            fprintf(stderr, "mpitempo-bench: note: scheme '%s' needs a global clock; synchronising with '%s' "
                            "(choose with --sync)\n", o.scheme, MT_DEFAULT_SYNC);
    }
    mt_sim_t sim;
    rc = mt_sim_from_env(o.sim_offsets, o.sim_drifts, o.sim_random, ctx.rank, ctx.size, &sim, err);
    if (!all_ok(rc)) {
        if (ctx.rank == 0 && rc == MT_OK) snprintf(err, sizeof err, "simulated-clock settings failed on another rank");
        return finish_error(ctx.rank, err);
    }
    mt_baseclock_t base;
    mt_sync_result_t sres;
    double t_synced = 0; /* --resync-age: base-clock time of the last sync (rank 0) */
    int nresync = 0, *slopes = ctx.rank == 0 ? calloc((size_t)ctx.size, sizeof(int)) : NULL;
    mt_check_t chk0, chk1;
    memset(&chk0, 0, sizeof chk0);
    memset(&chk1, 0, sizeof chk1);
    memset(&sres, 0, sizeof sres);
    double simv[2] = {sim.offset_s, sim.drift}, *simall = ctx.rank == 0 ? malloc(sizeof(double) * 2 * (size_t)ctx.size) : NULL;
    mt_check_mpi(MPI_Gather(simv, 2, MPI_DOUBLE, simall, 2, MPI_DOUBLE, 0, ctx.comm), "MPI_Gather");
    if ((rc = mt_baseclock_init(&base, &ctx.timer, &sim, ctx.comm, err))) return finish_error(ctx.rank, err);
    if (ctx.rank == 0 && sim.on)
        fprintf(stderr, "mpitempo-bench: note: SIMULATED clocks (per-rank offset and drift) on top of '%s'\n", o.timer);
    if (!sspec.none) {
        mt_clock_t in;
        mt_clock_init(&in, &base);
        if ((rc = mt_sync_run(&sspec, ctx.comm, &in, &sres, err))) return finish_error(ctx.rank, err);
        double w0 = 0;
        rc = mt_check_run(ctx.comm, &sres.clock, &mt_offset_skampi, 100, &w0, 1, 0, 1, &chk0, err);
        if (!all_ok(rc)) return finish_error(ctx.rank, err);
        ctx.gclock = &sres.clock;
        t_synced = mt_clock_now(&in);
        double dmax = 0;
        mt_check_mpi(MPI_Reduce(&sres.duration_s, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, ctx.comm), "MPI_Reduce");
        sres.duration_s = dmax;
    }
    ctx.nrep = (int)o.nrep;
    ctx.warmup = (int)o.warmup;
    ctx.inner = (int)o.inner;
    ctx.rt_slack = strtod(o.rt_slack, NULL);
    ctx.rt_adapt = !o.no_rt_adapt;
    mt_parse_duration(o.time_slice, &ctx.time_slice_s, err);
    ctx.window_s = 0;
    if (o.window) mt_parse_duration(o.window, &ctx.window_s, err);
    ctx.window_chunk = (int)o.window_chunk;
    ctx.want_timestamps = o.timestamps;
    ctx.skew_rank = -1;
    {
        /* oversubscribed: more ranks on this host than it has CPUs */
        MPI_Comm node;
        int nlocal = 1;
        mt_check_mpi(MPI_Comm_split_type(ctx.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
        MPI_Comm_size(node, &nlocal);
        MPI_Comm_free(&node);
        int mine = nlocal > (int)sysconf(_SC_NPROCESSORS_ONLN), any = 0;
        mt_check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, ctx.comm), "MPI_Allreduce");
        ctx.oversubscribed = any;
    }
    if (o.barrier_skew) parse_skew(o.barrier_skew, &ctx.skew_rank, &ctx.skew_s, err);
    long long min_valid = o.min_valid >= 0 ? o.min_valid : (o.nrep < 10 ? o.nrep : 10);
    mt_cache_t cache;
    int64_t cache_bytes = 0;
    if (o.cache_size) mt_parse_size(o.cache_size, &cache_bytes, err);
    rc = mt_cache_init(&cache, mt_cache_policy(o.cache), (size_t)cache_bytes, err);
    if (!all_ok(rc)) return finish_error(ctx.rank, err);
    ctx.cache = &cache;
    double my_delay = rank_delay(o.delay, ctx.rank);
    const mt_scheme_t *scheme = mt_scheme_find(o.scheme);
    const mt_dtype_t *dtype = mt_dtype_find(o.datatype);
    const mt_redop_t *redop = mt_redop_find(o.redop);

    /* seed: given, or drawn by rank 0 and broadcast */
    uint64_t seed = (uint64_t)o.seed;
    if (!o.have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000003ULL) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
        seed &= (uint64_t)LLONG_MAX;
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, ctx.comm);
    int *order = malloc(sizeof(int) * (size_t)nexp);
    for (int i = 0; i < nexp; i++) order[i] = i;
    mt_rng_t rng;
    mt_rng_seed(&rng, seed);
    mt_shuffle_int(&rng, order, nexp);

    /* output files: rank 0 opens the temporary CSV before measuring */
    mt_outfile_t csvo = {0}, tso = {0}, metao = {0};
    char *launch = NULL;
    rc = MT_OK;
    if (ctx.rank == 0 && o.outdir) {
        static const char *const results[] = {"measurements.csv", "meta.json", "timestamps.csv", NULL};
        rc = mt_outdir_check(o.outdir, results, err);
        if (rc == MT_OK) rc = mt_outfile_open(&csvo, o.outdir, "measurements.csv", err);
        if (rc == MT_OK && o.launch_json && !(launch = mt_read_json_object(o.launch_json, "--launch-json", err)))
            rc = MT_EIO;
        if (rc == MT_OK && o.timestamps) rc = mt_outfile_open(&tso, o.outdir, "timestamps.csv", err);
    }
    if (rc == MT_OK && o.timestamps && !o.outdir)
        rc = mt_fail(err, MT_EINVAL, "--timestamps needs --outdir (timestamps.csv is written there)");
    if (!all_ok(rc)) {
        mt_outfile_abort(&csvo);
        mt_outfile_abort(&tso);
        return finish_error(ctx.rank, err);
    }

    /* the timer's quality, on every rank at once (they all run the same loop) */
    mt_timer_quality_t tq;
    mt_timer_study(&ctx.timer, o.timer_reads, &tq);
    double tq_res_max = 0, tq_ov_max = 0;
    MPI_Reduce(&tq.res_s, &tq_res_max, 1, MPI_DOUBLE, MPI_MAX, 0, ctx.comm);
    MPI_Reduce(&tq.min_ov_s, &tq_ov_max, 1, MPI_DOUBLE, MPI_MAX, 0, ctx.comm);

    /* per-rank records: placement and binding as the OS reports them */
    char rec[MT_RANKREC_LEN];
    mt_factors_rank_record(&ctx, rec, sizeof rec);
    char *recs = ctx.rank == 0 ? malloc((size_t)ctx.size * MT_RANKREC_LEN) : NULL;
    MPI_Gather(rec, MT_RANKREC_LEN, MPI_CHAR, recs, MT_RANKREC_LEN, MPI_CHAR, 0, ctx.comm);

    FILE *csv = csvo.f, *tsf = tso.f; /* NULL on ranks other than 0 and without --outdir */
    if (csv) fprintf(csv, "op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s\n");
    if (tsf) fprintf(tsf, "op,msize,exp,rep,rank,start_s,end_s,valid\n");
    /* per experiment, for meta.json: what the scheme observed */
    double *x_lat = calloc((size_t)nexp, sizeof(double)), *x_win = calloc((size_t)nexp, sizeof(double)),
           *x_el = calloc((size_t)nexp, sizeof(double)), *x_pilot = calloc((size_t)nexp, sizeof(double));
    int *x_n = calloc((size_t)nexp, sizeof(int)), *x_valid = calloc((size_t)nexp, sizeof(int));
    double *x_wall = calloc((size_t)nexp, sizeof(double));
    int few_valid = 0;
    if (ctx.rank == 0 && !o.outdir)
        printf("# mpitempo-bench %s: %d ranks, scheme %s, timer %s, nrep %lld, seed %llu\n"
               "%-22s %10s %6s %12s %12s %12s\n",
               MT_VERSION, ctx.size, scheme->name, ctx.timer.t->name, o.nrep, (unsigned long long)seed, "op",
               "bytes", "valid", "min[us]", "median[us]", "max[us]");

    long long total_invalid = 0;
    double *exp_median = ctx.rank == 0 ? calloc((size_t)nexp, sizeof(double)) : NULL;
    for (int k = 0; k < nexp; k++) {
        exp_t *e = &exps[order[k]];
        if (ctx.gclock && o.resync_age > 0 && k > 0) { /* between experiments, never inside a timed region */
            int did = 0;
            rc = mt_sync_resync_if_old(&sspec, ctx.comm, &base, o.resync_age, &t_synced, &sres, &did, err);
            if (!all_ok(rc)) return finish_error(ctx.rank, err);
            nresync += did;
        }
        mt_op_args_t a;
        memset(&a, 0, sizeof a);
        a.comm = ctx.comm;
        a.rank = ctx.rank;
        a.size = ctx.size;
        a.root = (int)o.root;
        a.dtype = dtype;
        a.redop = redop->op;
        a.timer = &ctx.timer;
        a.delay_s = my_delay;
        rc = mt_op_prepare(e->op, &a, e->msize, err);
        if (rc == MT_OK) rc = mt_cache_setup_buffers(&cache, &a, err);
        if (!all_ok(rc)) {
            mt_outfile_abort(&csvo);
            mt_outfile_abort(&tso);
            return finish_error(ctx.rank, err);
        }
        mt_meas_t m;
        if (mt_meas_alloc(&m, ctx.nrep) != MT_OK) {
            fprintf(stderr, "mpitempo-bench: error: out of memory\n");
            MPI_Abort(ctx.comm, 5);
        }
        int64_t w0 = ctx.timer.t->now();
        rc = scheme->measure(&ctx, e->op, &a, &m, err);
        double wall = mt_ticks_to_s(&ctx.timer, ctx.timer.t->now() - w0);
        if (!all_ok(rc)) {
            mt_outfile_abort(&csvo);
            mt_outfile_abort(&tso);
            return finish_error(ctx.rank, err);
        }
        if (ctx.rank == 0) {
            int nvalid = 0;
            for (int i = 0; i < m.n; i++) {
                nvalid += m.valid[i];
                if (csv)
                    fprintf(csv, "%s,%lld,%d,%s,%d,%d,%.10g,%d,%.10g\n", e->op->name, (long long)a.msize, ctx.size,
                            scheme->name, k, i, m.runtime_s[i], m.valid[i], m.local_max_s[i]);
            }
            total_invalid += m.n - nvalid;
            x_lat[order[k]] = m.lat_s;
            x_win[order[k]] = m.window_s;
            x_el[order[k]] = m.elapsed_s;
            x_pilot[order[k]] = m.pilot_s;
            x_n[order[k]] = m.n;
            x_wall[order[k]] = wall;
            x_valid[order[k]] = nvalid;
            if (nvalid < min_valid) {
                few_valid++;
                fprintf(stderr, "mpitempo-bench: %s: %s %lld B: only %d of %d measurements are valid (minimum %lld)%s\n",
                        o.allow_few_valid ? "warning" : "error", e->op->name, (long long)a.msize, nvalid, m.n,
                        min_valid, scheme == &mt_scheme_window ? "; try a larger --window" :
                        scheme == &mt_scheme_roundtime ? "; try a larger --rt-slack or --time-slice" : "");
            } else if (scheme == &mt_scheme_window && nvalid < 0.9 * m.n && !o.quiet) {
                fprintf(stderr, "mpitempo-bench: note: %s %lld B: window %.3f us kept %d of %d measurements; "
                                "a window of %.3f us would lose fewer\n", e->op->name, (long long)a.msize,
                        m.window_s * 1e6, nvalid, m.n, 2e6 * m.window_s);
            }
            if (tsf && m.ts_start) {
                for (int i = 0; i < m.n; i++)
                    for (int r = 0; r < ctx.size; r++)
                        fprintf(tsf, "%s,%lld,%d,%d,%d,%.12g,%.12g,%d\n", e->op->name, (long long)a.msize, k, i, r,
                                m.ts_start[(size_t)r * (size_t)m.n + (size_t)i],
                                m.ts_end[(size_t)r * (size_t)m.n + (size_t)i], m.valid[i]);
                if (ferror(tsf)) {
                    rc = mt_fail(err, MT_EIO, "writing %s failed: %s", tso.tmp, strerror(errno));
                }
            }
            exp_median[order[k]] = median_of(m.runtime_s, m.valid, m.n);
            if (!o.outdir) {
                double mn = INFINITY, mx = -INFINITY;
                for (int i = 0; i < m.n; i++)
                    if (m.valid[i]) {
                        if (m.runtime_s[i] < mn) mn = m.runtime_s[i];
                        if (m.runtime_s[i] > mx) mx = m.runtime_s[i];
                    }
                printf("%-22s %10lld %6d %12.3f %12.3f %12.3f\n", e->op->name, (long long)a.msize, nvalid, mn * 1e6,
                       exp_median[order[k]] * 1e6, mx * 1e6);
                fflush(stdout);
            } else if (!o.quiet) {
                fprintf(stderr, "mpitempo-bench: [%d/%d] %s %lld B: median %.3f us (%d/%d valid)\n", k + 1, nexp,
                        e->op->name, (long long)a.msize, exp_median[order[k]] * 1e6, nvalid, m.n);
            }
        }
        mt_meas_free(&m);
        mt_op_release(&a);
        if (!all_ok(rc)) { /* e.g. the disk is full: stop now, leave nothing that looks complete */
            mt_outfile_abort(&csvo);
            mt_outfile_abort(&tso);
            return finish_error(ctx.rank, err);
        }
    }

    if (ctx.gclock) {
        double w0 = 0;
        rc = mt_check_run(ctx.comm, ctx.gclock, &mt_offset_skampi, 100, &w0, 1, 0, 1, &chk1, err);
        if (!all_ok(rc)) return finish_error(ctx.rank, err);
        mt_sync_gather_slopes(ctx.comm, &sres, slopes);
    }

    /* finish the files: CSV (and timestamps) first, then meta.json (its presence marks a complete run) */
    rc = MT_OK;
    if (ctx.rank == 0) {
        rc = mt_outfile_commit(&tso, err);
        if (rc == MT_OK) rc = mt_outfile_commit(&csvo, err);
        else mt_outfile_abort(&csvo);
    }
    if (ctx.rank == 0 && o.outdir && rc == MT_OK) {
        rc = mt_outfile_open(&metao, o.outdir, "meta.json", err);
        FILE *mf = metao.f;
        if (rc == MT_OK) {
            char end_iso[64];
            mt_iso_now(end_iso, sizeof end_iso);
            mt_json_t j;
            mt_json_init(&j, mf);
            mt_json_obj_begin(&j);
            mt_factors_write_run_header(&j, "mpitempo-bench " MT_VERSION, o.config, o.run_index, start_iso, end_iso,
                                        argc, argv, launch, ctx.size, recs);
            mt_json_key(&j, "timer");
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "name", ctx.timer.t->name);
            mt_json_kstr(&j, "desc", ctx.timer.t->desc);
            mt_json_knum(&j, "ticks_per_s", ctx.timer.ticks_per_s);
            mt_json_kint(&j, "study_reads", tq.nreads);
            mt_json_knum(&j, "resolution_s", tq.res_s);
            mt_json_knum(&j, "min_overhead_s", tq.min_ov_s);
            mt_json_knum(&j, "mean_read_s", tq.mean_read_s);
            mt_json_knum(&j, "resolution_max_over_ranks_s", tq_res_max);
            mt_json_knum(&j, "min_overhead_max_over_ranks_s", tq_ov_max);
            mt_json_obj_end(&j);
            mt_json_key(&j, "clock");
            mt_json_obj_begin(&j);
            mt_sync_write_json(&j, &sspec, &base, sres.duration_s, ctx.gclock ? &chk0 : NULL, ctx.size,
                               sim.on ? simall : NULL);
            mt_json_kbool(&j, "defaulted", sync_defaulted);
            if (ctx.gclock) {
                double mx, md;
                mt_check_summary(&chk1, 0, &mx, &md);
                mt_json_key(&j, "quality_end");
                mt_json_obj_begin(&j);
                mt_json_knum(&j, "max_abs_offset_s", mx);
                mt_json_knum(&j, "median_abs_offset_s", md);
                mt_json_obj_end(&j);
                mt_json_knum(&j, "resync_age_s", o.resync_age);
                mt_json_kint(&j, "resyncs", nresync);
                mt_sync_write_slopes(&j, slopes, ctx.size);
            } else {
                mt_json_kstr(&j, "note", "local timer only; runtimes are max over ranks of local runtimes");
            }
            mt_json_obj_end(&j);
            mt_json_key(&j, "scheme");
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "name", scheme->name);
            mt_json_kstr(&j, "desc", scheme->desc);
            mt_json_kint(&j, "nrep", o.nrep);
            mt_json_kint(&j, "warmup", o.warmup);
            if (scheme == &mt_scheme_loop || scheme == &mt_scheme_barrier_loop) mt_json_kint(&j, "inner", o.inner);
            if (scheme == &mt_scheme_roundtime) {
                mt_json_knum(&j, "rt_slack_B", ctx.rt_slack);
                mt_json_kbool(&j, "rt_adapt", ctx.rt_adapt);
                mt_json_knum(&j, "time_slice_s", ctx.time_slice_s);
                mt_json_kint(&j, "max_nrep", o.nrep);
            }
            if (scheme == &mt_scheme_window) {
                mt_json_knum(&j, "window_s", ctx.window_s);
                mt_json_kstr(&j, "window_source", ctx.window_s > 0 ? "given" : "pilot: 3 x median + 2 x Bcast latency");
                mt_json_kint(&j, "window_chunk", ctx.window_chunk);
            }
            mt_json_kbool(&j, "timestamps", o.timestamps);
            mt_json_kbool(&j, "oversubscribed", ctx.oversubscribed);
            if (o.barrier_skew) mt_json_kstr(&j, "barrier_skew", o.barrier_skew);
            mt_json_kint(&j, "min_valid", min_valid);
            mt_json_kint(&j, "experiments_with_too_few_valid", few_valid);
            mt_json_obj_end(&j);
            mt_json_key(&j, "operation_params");
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "datatype", dtype->name);
            mt_json_kint(&j, "datatype_size", dtype->size);
            mt_json_kstr(&j, "redop", redop->name);
            mt_json_kint(&j, "root", o.root);
            mt_json_kstr(&j, "delay", o.delay);
            mt_json_obj_end(&j);
            mt_json_kstr(&j, "cache_policy", mt_cache_policy_name(cache.policy));
            mt_json_key(&j, "cache");
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "policy", mt_cache_policy_name(cache.policy));
            if (cache.policy != MT_CACHE_WARM) {
                mt_json_kint(&j, "size_bytes", (int64_t)cache.size);
                mt_json_kstr(&j, "size_source", cache.size_src);
            }
            mt_json_obj_end(&j);
            mt_json_kint(&j, "seed", (int64_t)seed);
            mt_json_key(&j, "experiments");
            mt_json_arr_begin(&j);
            for (int k = 0; k < nexp; k++) {
                exp_t *e = &exps[order[k]];
                int cnt = e->msize ? (int)(e->msize / dtype->size) : 0;
                mt_json_obj_begin(&j);
                mt_json_kint(&j, "exp", k);
                mt_json_kstr(&j, "op", e->op->name);
                mt_json_kstr(&j, "mpi_name", e->op->mpi_name);
                mt_json_kint(&j, "msize", e->msize);
                mt_json_kint(&j, "count", cnt);
                mt_json_kint(&j, "effective_bytes", (int64_t)cnt * dtype->size);
                mt_json_knum(&j, "median_s", exp_median[order[k]]);
                mt_json_kint(&j, "measurements", x_n[order[k]]);
                mt_json_kint(&j, "valid", x_valid[order[k]]);
                mt_json_kbool(&j, "too_few_valid", x_valid[order[k]] < min_valid);
                mt_json_knum(&j, "wall_s", x_wall[order[k]]);
                if (scheme->needs_global_clock) {
                    mt_json_knum(&j, "bcast_latency_s", x_lat[order[k]]);
                    mt_json_knum(&j, "elapsed_s", x_el[order[k]]);
                    if (scheme == &mt_scheme_roundtime) mt_json_knum(&j, "slack_end_s", x_win[order[k]]);
                    if (scheme == &mt_scheme_window) {
                        mt_json_knum(&j, "window_s", x_win[order[k]]);
                        mt_json_knum(&j, "pilot_s", x_pilot[order[k]]);
                    }
                }
                mt_json_obj_end(&j);
            }
            mt_json_arr_end(&j);
            mt_json_kint(&j, "invalid_measurements", total_invalid);
            mt_json_key(&j, "machine");
            mt_factors_write_machine(&j);
            mt_json_key(&j, "build");
            mt_factors_write_build(&j);
            mt_json_key(&j, "environment");
            mt_factors_write_env(&j);
            mt_json_obj_end(&j);
            rc = mt_outfile_commit(&metao, err);
        }
    }
    mt_cache_free(&cache);
    mt_check_free(&chk0);
    mt_check_free(&chk1);
    free(simall);
    free(slopes);
    free(launch);
    free(recs);
    free(exp_median);
    free(order);
    free(exps);
    free(x_lat);
    free(x_win);
    free(x_el);
    free(x_pilot);
    free(x_n);
    free(x_valid);
    free(x_wall);
    if (!all_ok(rc)) return finish_error(ctx.rank, err);
    MPI_Finalize();
    /* files are complete; too few valid measurements is still a failure unless allowed */
    return (few_valid && !o.allow_few_valid) ? 3 : 0;
}
