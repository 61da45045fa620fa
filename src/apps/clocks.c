/* mpitempo-clocks: evaluates clock-sync algorithms in one job (paper 000,
 * Algorithm 6 and Fig. 3). For every spec: synchronise, then measure the
 * offset of every rank's global clock to rank 0's right away and after each
 * wait time. Prints a JSON array on stdout (rank 0), one object per
 * algorithm x wait time; see docs/clocks.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock/clock.h"
#include "scheme/ctx.h"
#include "run/files.h"
#include "base/json.h"
#include "base/mt_common.h"
#include "clock/offset.h"
#include "clock/sync.h"
#include "timer/timer.h"

#define DEFAULT_ALGS "skampi,hoefler,jk,hca,hca2,hca3"

typedef struct opts {
    const char *algorithms, *wait, *timer, *sim_offsets, *sim_drifts, *sim_random, *check_offset;
    long long check_pp, check_sample, seed, mpirun, expect_np;
    int have_seed, list, check_args;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n N mpitempo-clocks [options]\n"
            "\n"
            "Evaluates clock-synchronisation algorithms: sync duration and the offset of every\n"
            "rank's global clock to rank 0's right after sync and after each wait time (JSON).\n"
            "\n"
            "  --algorithms LIST   sync specs, comma-separated (default " DEFAULT_ALGS ");\n"
            "                      e.g. hca3:fitpts=20,pp=10,offset=skampi  or  h2:hca3/prop\n"
            "                      (a key=value item continues the previous spec); see docs/clocks.md\n"
            "  --wait LIST         seconds after sync at which to check, comma-separated (default 0,1)\n"
            "  --timer NAME        base clock: monotonic (default), monotonic_raw, realtime,\n"
            "                      gettimeofday, rdtscp, wtime\n"
            "  --check-pp N        ping-pongs per offset check (default 100)\n"
            "  --check-offset NAME offset algorithm of the check: skampi (default) or meanrtt\n"
            "  --check-sample K    check a seeded random sample of K ranks (default: all)\n"
            "  --seed N            seed of the sample (default 1)\n"
            "  --sim-offsets LIST  SIMULATED clock: offset in s per rank (last value repeats)\n"
            "  --sim-drifts LIST   SIMULATED clock: drift in ppm per rank (last value repeats)\n"
            "  --sim-random SPEC   SIMULATED clock: SEED[:MAXOFF_S[:MAXDRIFT_PPM]] uniform per rank\n"
            "                      (also MPITEMPO_SIM_OFFSETS / _DRIFTS / _RANDOM; off by default)\n"
            "  --mpirun N          index of this mpirun, copied into the output (default 0)\n"
            "  --expect-np N       fail if the job does not have N ranks (wrong mpiexec)\n"
            "  --list              print the algorithms and their defaults as JSON\n"
            "  --check-args        validate the options without MPI; print the canonical specs as JSON\n"
            "  -h, --help          this help\n");
}

static int parse_args(int argc, char **argv, opts_t *o, char *err)
{
    memset(o, 0, sizeof *o);
    o->algorithms = DEFAULT_ALGS;
    o->wait = "0,1";
    o->timer = "monotonic";
    o->check_offset = "skampi";
    o->check_pp = 100;
    o->seed = 1;
    enum { O_ALGS = 256, O_WAIT, O_TIMER, O_CPP, O_COFF, O_CSAMPLE, O_SEED, O_SOFF, O_SDRIFT, O_SRAND, O_MPIRUN,
           O_EXPECT, O_LIST, O_CHECKARGS };
    static const struct option lo[] = {
        {"algorithms", required_argument, 0, O_ALGS}, {"wait", required_argument, 0, O_WAIT},
        {"timer", required_argument, 0, O_TIMER}, {"check-pp", required_argument, 0, O_CPP},
        {"check-offset", required_argument, 0, O_COFF}, {"check-sample", required_argument, 0, O_CSAMPLE},
        {"seed", required_argument, 0, O_SEED}, {"sim-offsets", required_argument, 0, O_SOFF},
        {"sim-drifts", required_argument, 0, O_SDRIFT}, {"sim-random", required_argument, 0, O_SRAND},
        {"mpirun", required_argument, 0, O_MPIRUN}, {"expect-np", required_argument, 0, O_EXPECT},
        {"list", no_argument, 0, O_LIST}, {"check-args", no_argument, 0, O_CHECKARGS}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_ALGS: o->algorithms = optarg; break;
        case O_WAIT: o->wait = optarg; break;
        case O_TIMER: o->timer = optarg; break;
        case O_CPP: if ((rc = mt_parse_int(optarg, "--check-pp", 1, 1000000, &o->check_pp, err))) return rc; break;
        case O_COFF: o->check_offset = optarg; break;
        case O_CSAMPLE:
            if ((rc = mt_parse_int(optarg, "--check-sample", 1, INT_MAX, &o->check_sample, err))) return rc;
            break;
        case O_SEED: if ((rc = mt_parse_int(optarg, "--seed", 0, LLONG_MAX, &o->seed, err))) return rc; break;
        case O_SOFF: o->sim_offsets = optarg; break;
        case O_SDRIFT: o->sim_drifts = optarg; break;
        case O_SRAND: o->sim_random = optarg; break;
        case O_MPIRUN: if ((rc = mt_parse_int(optarg, "--mpirun", 0, INT_MAX, &o->mpirun, err))) return rc; break;
        case O_EXPECT: if ((rc = mt_parse_int(optarg, "--expect-np", 1, INT_MAX, &o->expect_np, err))) return rc; break;
        case O_LIST: o->list = 1; break;
        case O_CHECKARGS: o->check_args = 1; break;
        case 'h': usage(stdout); exit(0);
        default:
            if (optopt) return mt_fail(err, MT_EINVAL, "option '%s' needs a value (see --help)", argv[optind - 1]);
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    return MT_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_waits(const char *s, double **out, int *n, char *err)
{
    char **items;
    int ni, rc;
    if ((rc = mt_split_list(s, &items, &ni, err)) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid --wait '%s': %s", s, err);
    double *v = malloc(sizeof(double) * (size_t)ni);
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
    qsort(v, (size_t)ni, sizeof(double), cmp_double);
    int k = 0;
    for (int i = 0; i < ni; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    *out = v;
    *n = k;
    return MT_OK;
}

static void print_list(void)
{
    mt_json_t j;
    mt_json_init(&j, stdout);
    mt_json_obj_begin(&j);
    mt_json_key(&j, "algorithms");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_nsync_algs; i++) {
        const mt_sync_alg_t *a = mt_sync_algs[i];
        mt_sync_spec_t s;
        char buf[512], err[MT_ERRLEN];
        mt_sync_spec_parse(a->name, &s, err);
        mt_sync_spec_format(&s, buf, sizeof buf);
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "name", a->name);
        mt_json_kstr(&j, "desc", a->desc);
        mt_json_kstr(&j, "defaults", buf);
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    mt_json_key(&j, "offset_algorithms");
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_noffset_algs; i++) mt_json_str(&j, mt_offset_algs[i]->name);
    mt_json_arr_end(&j);
    mt_json_obj_end(&j);
    printf("\n");
}

/* --check-args: the same validation as a run, without MPI (for front ends) */
static int check_args(const opts_t *o)
{
    char err[MT_ERRLEN] = "", **specs = NULL;
    int nspec = 0, nwait = 0, rc;
    double *waits = NULL;
    mt_sim_t sim;
    rc = mt_sync_spec_split(o->algorithms, &specs, &nspec, err);
    mt_sync_spec_t *sp = rc == MT_OK ? calloc((size_t)nspec, sizeof *sp) : NULL;
    for (int i = 0; i < nspec && rc == MT_OK; i++) rc = mt_sync_spec_parse(specs[i], &sp[i], err);
    if (rc == MT_OK) rc = parse_waits(o->wait, &waits, &nwait, err);
    if (rc == MT_OK && !mt_timer_find(o->timer)) {
        mt_timer_inst_t ti;
        rc = mt_timer_open(o->timer, &ti, err);
    }
    if (rc == MT_OK && !mt_offset_find(o->check_offset))
        rc = mt_fail(err, MT_EINVAL, "unknown --check-offset '%s'", o->check_offset);
    if (rc == MT_OK) rc = mt_sim_parse(o->sim_offsets, o->sim_drifts, o->sim_random, 0, 1, &sim, err);
    if (rc != MT_OK) {
        fprintf(stderr, "mpitempo-clocks: error: %s\n", err);
    } else {
        mt_json_t j;
        mt_json_init(&j, stdout);
        mt_json_obj_begin(&j);
        mt_json_key(&j, "specs");
        mt_json_arr_begin(&j);
        for (int i = 0; i < nspec; i++) {
            char buf[1024];
            mt_sync_spec_format(&sp[i], buf, sizeof buf);
            mt_json_obj_begin(&j);
            mt_json_kstr(&j, "given", specs[i]);
            mt_json_kstr(&j, "canonical", buf);
            mt_json_obj_end(&j);
        }
        mt_json_arr_end(&j);
        mt_json_key(&j, "wait_s");
        mt_json_arr_begin(&j);
        for (int i = 0; i < nwait; i++) mt_json_num(&j, waits[i]);
        mt_json_arr_end(&j);
        mt_json_obj_end(&j);
        printf("\n");
    }
    free(sp);
    free(waits);
    mt_free_list(specs, nspec);
    return rc == MT_OK ? 0 : 2;
}

static int finish_error(int rank, const char *err) { return mt_finish_error(rank, "mpitempo-clocks", err); }

static int all_ok(int rc, MPI_Comm comm)
{
    int mine = rc == MT_OK, all = 0;
    mt_check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce");
    return all;
}

/* per-rank facts gathered to rank 0 after each sync */
enum { F_DRIFT, F_TRUE_DRIFT, F_SLOPE_STATE, F_FIT_SLOPE, F_FIT_SE, F_FIT_WINDOW, F_LREF, F_LCLIENT, F_MSGS,
       F_OFFSETS, F_DEPTH, F_DURATION, NF };

int main(int argc, char **argv)
{
    opts_t o;
    char err[MT_ERRLEN] = "";
    int rc = parse_args(argc, argv, &o, err);
    if (rc == MT_OK && o.list) {
        print_list();
        return 0;
    }
    if (rc == MT_OK && o.check_args) return check_args(&o);
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, size;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    if (rc != MT_OK) return finish_error(rank, err);

    /* validate everything before any measurement */
    char **specs = NULL;
    int nspec = 0, nwait = 0;
    double *waits = NULL;
    mt_sync_spec_t *parsed = NULL;
    const mt_offset_alg_t *coff = mt_offset_find(o.check_offset);
    if (!coff) {
        char names[128];
        mt_offset_names(names, sizeof names);
        rc = mt_fail(err, MT_EINVAL, "unknown --check-offset '%s' (allowed: %s)", o.check_offset, names);
    }
    if (rc == MT_OK && o.expect_np && o.expect_np != size)
        rc = mt_fail(err, MT_EINVAL,
                     size == 1 ? "expected %lld ranks but this process sees a job of 1: it was probably started by "
                                 "the mpiexec of a different MPI library than the one it was built with"
                               : "expected %lld ranks but the job has a different size",
                     o.expect_np);
    if (rc == MT_OK) rc = mt_sync_spec_split(o.algorithms, &specs, &nspec, err);
    if (rc == MT_OK) {
        parsed = calloc((size_t)nspec, sizeof *parsed);
        for (int i = 0; i < nspec && rc == MT_OK; i++) rc = mt_sync_spec_parse(specs[i], &parsed[i], err);
    }
    if (rc == MT_OK) rc = parse_waits(o.wait, &waits, &nwait, err);
    mt_timer_inst_t ti;
    if (rc == MT_OK) rc = mt_timer_open(o.timer, &ti, err);
    mt_sim_t sim;
    if (rc == MT_OK) rc = mt_sim_from_env(o.sim_offsets, o.sim_drifts, o.sim_random, rank, size, &sim, err);
    if (!all_ok(rc, comm)) {
        if (rc == MT_OK) snprintf(err, sizeof err, "setup failed on another rank");
        /* the lowest failing rank's message is the one printed */
        int who = rc != MT_OK ? rank : INT_MAX, first;
        mt_check_mpi(MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
        mt_check_mpi(MPI_Bcast(err, MT_ERRLEN, MPI_CHAR, first, comm), "MPI_Bcast");
        return finish_error(rank, err);
    }
    mt_baseclock_t base;
    if ((rc = mt_baseclock_init(&base, &ti, &sim, comm, err))) return finish_error(rank, err);
    double simv[2] = {sim.offset_s, sim.drift}, *simall = rank == 0 ? malloc(sizeof(double) * 2 * (size_t)size) : NULL;
    mt_check_mpi(MPI_Gather(simv, 2, MPI_DOUBLE, simall, 2, MPI_DOUBLE, 0, comm), "MPI_Gather");
    if (rank == 0 && sim.on)
        fprintf(stderr, "mpitempo-clocks: note: SIMULATED clocks (per-rank offset and drift injected on top of '%s')\n",
                ti.t->name);

    mt_json_t j;
    if (rank == 0) {
        mt_json_init(&j, stdout);
        mt_json_arr_begin(&j);
    }
    double *facts = rank == 0 ? malloc(sizeof(double) * NF * (size_t)size) : NULL;
    for (int s = 0; s < nspec; s++) {
        mt_clock_t in;
        mt_clock_init(&in, &base);
        mt_sync_result_t res;
        rc = mt_sync_run(&parsed[s], comm, &in, &res, err);
        if (rc != MT_OK) {
            if (rank == 0) {
                mt_json_arr_end(&j);
                printf("\n");
                fflush(stdout);
            }
            return finish_error(rank, err);
        }
        mt_check_t chk;
        rc = mt_check_run(comm, &res.clock, coff, (int)o.check_pp, waits, nwait, (int)o.check_sample,
                          (uint64_t)o.seed, &chk, err);
        if (!all_ok(rc, comm)) return finish_error(rank, err);
        double f[NF];
        f[F_DRIFT] = mt_clock_drift(&res.clock);
        /* o(t_c) = t_c - t_0 for sim clocks t = T (1 + d) + off: slope 1 - (1 + d0) / (1 + dc) */
        double d0 = sim.drift;
        mt_check_mpi(MPI_Bcast(&d0, 1, MPI_DOUBLE, 0, comm), "MPI_Bcast");
        f[F_TRUE_DRIFT] = sim.on ? 1.0 - (1.0 + d0) / (1.0 + sim.drift) : 0.0;
        f[F_SLOPE_STATE] = res.st.slope_state;
        f[F_FIT_SLOPE] = res.st.fit_slope;
        f[F_FIT_SE] = res.st.fit_slope_se;
        f[F_FIT_WINDOW] = res.st.fit_window_s;
        f[F_LREF] = res.st.learn_ref;
        f[F_LCLIENT] = res.st.learn_client;
        f[F_MSGS] = (double)res.st.msgs_sent;
        f[F_OFFSETS] = res.st.offsets;
        f[F_DEPTH] = res.clock.depth;
        f[F_DURATION] = res.duration_s;
        mt_check_mpi(MPI_Gather(f, NF, MPI_DOUBLE, facts, NF, MPI_DOUBLE, 0, comm), "MPI_Gather");
        if (rank == 0) {
            char canon[1024];
            mt_sync_spec_format(&parsed[s], canon, sizeof canon);
            double dur = 0;
            for (int r = 0; r < size; r++)
                if (facts[r * NF + F_DURATION] > dur) dur = facts[r * NF + F_DURATION];
            for (int w = 0; w < nwait; w++) {
                double mx, md;
                mt_check_summary(&chk, w, &mx, &md);
                mt_json_obj_begin(&j);
                mt_json_kstr(&j, "algorithm", specs[s]);
                mt_json_kstr(&j, "spec", canon);
                mt_json_kint(&j, "nprocs", size);
                mt_json_kint(&j, "mpirun", o.mpirun);
                mt_json_kstr(&j, "timer", ti.t->name);
                mt_json_kbool(&j, "simulated", sim.on);
                mt_json_knum(&j, "wait_s", waits[w]);
                mt_json_knum(&j, "sync_duration_s", dur);
                mt_json_knum(&j, "max_abs_offset_s", mx);
                mt_json_knum(&j, "median_abs_offset_s", md);
                mt_json_kint(&j, "checked_ranks", chk.nsample);
                mt_json_kstr(&j, "check_offset", coff->name);
                mt_json_kint(&j, "check_pp", o.check_pp);
                mt_json_kint(&j, "rounds_root", (int64_t)facts[F_LREF]);
                mt_json_key(&j, "per_rank");
                mt_json_arr_begin(&j);
                for (int r = 0; r < size; r++) {
                    const double *fr = facts + (size_t)r * NF;
                    double off = r == 0 ? 0.0 : NAN;
                    for (int i = 0; i < chk.nsample; i++)
                        if (chk.sample[i] == r) off = chk.offset_s[(size_t)w * chk.nsample + i];
                    mt_json_obj_begin(&j);
                    mt_json_kint(&j, "rank", r);
                    mt_json_knum(&j, "offset_s", off);
                    mt_json_knum(&j, "drift_ppm", fr[F_DRIFT] * 1e6);
                    if (sim.on) {
                        mt_json_knum(&j, "true_drift_ppm", fr[F_TRUE_DRIFT] * 1e6);
                        mt_json_knum(&j, "sim_offset_s", simall[2 * r]);
                        mt_json_knum(&j, "sim_drift_ppm", simall[2 * r + 1] * 1e6);
                    }
                    int ss = (int)fr[F_SLOPE_STATE];
                    mt_json_kstr(&j, "slope", ss == MT_SLOPE_KEPT ? "kept" : ss == MT_SLOPE_DROPPED ? "dropped" : "none");
                    if (ss != MT_SLOPE_NONE) {
                        mt_json_knum(&j, "fit_slope_ppm", fr[F_FIT_SLOPE] * 1e6);
                        mt_json_knum(&j, "fit_slope_se_ppm", fr[F_FIT_SE] * 1e6);
                        mt_json_knum(&j, "fit_window_s", fr[F_FIT_WINDOW]);
                    }
                    mt_json_kint(&j, "learn_ref", (int64_t)fr[F_LREF]);
                    mt_json_kint(&j, "learn_client", (int64_t)fr[F_LCLIENT]);
                    mt_json_kint(&j, "msgs_sent", (int64_t)fr[F_MSGS]);
                    mt_json_kint(&j, "offset_measurements", (int64_t)fr[F_OFFSETS]);
                    mt_json_kint(&j, "model_depth", (int64_t)fr[F_DEPTH]);
                    mt_json_obj_end(&j);
                }
                mt_json_arr_end(&j);
                mt_json_obj_end(&j);
            }
            fflush(stdout);
        }
        mt_check_free(&chk);
    }
    if (rank == 0) {
        mt_json_arr_end(&j);
        printf("\n");
    }
    free(facts);
    free(simall);
    free(waits);
    free(parsed);
    mt_free_list(specs, nspec);
    MPI_Finalize();
    return 0;
}
