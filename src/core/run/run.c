/* mpitempo: the run driver every executable shares (see run.h). */
#define _GNU_SOURCE
#include "run/run.h"
#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "run/factors.h"
#include "run/cpushare.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the timer study's reads when the app has no --timer-reads */
#define MT_STUDY_READS 1000000
/* under SimGrid/SMPI a timer read is a call into the simulator (host microseconds each) that returns
 * simulated time advanced by smpi/wtime: a few thousand reads show its resolution and cost */
#define MT_SMPI_STUDY_READS 2000

static int finish_error(mt_run_t *r, const char *err)
{
    for (int i = 0; i < MT_RUN_MAXFILES; i++) mt_outfile_abort(&r->out[i]);
    if (r->app->done) r->app->done(r);
    free(r->launch);
    free(r->recs);
    return mt_finish_error(r->ctx.rank, r->app->prog, err);
}

/* the checks that need no MPI: timer name, the app's options, then the
 * parameter bounds (after the owners, whose messages speak their terms) */
/* --like: the profile names mpitempo run/pingpong know (python/mpitempo/io/opnames.py PROFILES) */
static const char *const like_names[] = {"osu", "imb", NULL};

static int check_like(const mt_run_t *r, char *err)
{
    if (!mt_param_def(MTP_like, r->app->id) || !mt_p_set(&r->cli.p, MTP_like)) return MT_OK;
    const char *v = mt_p_str(&r->cli.p, MTP_like);
    for (int i = 0; like_names[i]; i++)
        if (strcmp(v, like_names[i]) == 0) return MT_OK;
    return mt_fail(err, MT_EINVAL, "unknown profile --like '%s' (allowed: osu, imb)", v);
}

static int validate(mt_run_t *r, int np, char *err)
{
    int rc = mt_timer_check_name(mt_p_str(&r->cli.p, MTP_timer), err);
    if (rc == MT_OK) rc = check_like(r, err);
    if (rc == MT_OK && r->app->check) rc = r->app->check(r, np, err);
    if (rc == MT_OK) rc = mt_params_check_bounds(&r->cli.p, err);
    return rc;
}

static void print_list(const mt_app_t *app)
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
    if (app->list) app->list(&j);
    mt_json_key(&j, "params");
    mt_params_write_list(&j, app->id);
    mt_json_obj_end(&j);
}

/* --check-args: every check a run makes before MPI, the options as JSON */
static int check_args(mt_run_t *r, int rc, char *err)
{
    if (rc == MT_OK) rc = validate(r, (int)r->cli.expect_np, err);
    if (rc != MT_OK) {
        fprintf(stderr, "%s: error: %s\n", r->app->prog, err);
        if (r->app->done) r->app->done(r);
        return 2;
    }
    mt_json_t j;
    mt_json_init(&j, stdout);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "kind", r->app->kind);
    if (r->app->check_json) r->app->check_json(r, &j);
    mt_json_key(&j, "options");
    mt_params_write_values(&j, &r->cli.p);
    mt_json_key(&j, "run");
    mt_cli_write_run(&j, &r->cli);
    mt_json_obj_end(&j);
    if (r->app->done) r->app->done(r);
    return 0;
}

static int has_arg(int argc, char **argv, const char *a)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], a) == 0) return 1;
    return 0;
}

/* More ranks on a host (MPI_COMM_TYPE_SHARED) than it has CPUs online, on any
 * host. Collective. */
static int detect_oversubscribed(MPI_Comm comm)
{
#ifdef MT_SMPI
    /* SimGrid/SMPI: every rank is a thread of one host process and time is simulated, so the host's
     * CPUs do not shape any time this run reports (the launcher checks ranks against the platform) */
    (void)comm;
    return 0;
#endif
    MPI_Comm node;
    int nlocal = 1, any = 0;
    mt_check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    mt_check_mpi(MPI_Comm_size(node, &nlocal), "MPI_Comm_size");
    mt_check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
    int mine = nlocal > (int)sysconf(_SC_NPROCESSORS_ONLN);
    mt_check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    return any;
}

/* How the clock code waits (mt_sync_run's lazy): lazily when oversubscribed.
 * MPITEMPO_CLOCK_SLEEP is an explicit override only, for placements the
 * detection cannot see (ranks of several fake hosts sharing one machine's
 * CPUs): 1 forces lazy waits on, 0 off. Nothing else needs it. */
static int lazy_waits(int oversubscribed)
{
    const char *sl = getenv("MPITEMPO_CLOCK_SLEEP");
    if (sl && sl[0] == '1') return 1;
    if (sl && sl[0] == '0') return 0;
    if (MT_SIMULATED) return 1; /* SMPI: a sleep is simulated exactly and costs one step, a spin costs a step per read */
    return oversubscribed;
}

/* "cpu_share" and "cpus_seen" of the start-up check, appended to a rank record (a JSON object) */
static void append_cpushare(char *rec, size_t len, const mt_cpushare_t *cs)
{
    char seen[256];
    mt_format_cpulist(cs->seen, MT_CPUSHARE_MAXCPU, seen, sizeof seen);
    size_t l = strlen(rec);
    if (l == 0 || rec[l - 1] != '}') return;
    char delay[32] = "null", first[96] = "";
    if (cs->run_delay_share >= 0) snprintf(delay, sizeof delay, "%.3f", cs->run_delay_share);
    if (cs->extended) {
        char fd[32] = "null";
        if (cs->first_run_delay_share >= 0) snprintf(fd, sizeof fd, "%.3f", cs->first_run_delay_share);
        snprintf(first, sizeof first, ", \"first_cpu_share\": %.3f, \"first_run_delay_share\": %s", cs->first_share, fd);
    }
    snprintf(rec + l - 1, len - (l - 1),
             ", \"cpu_share\": %.3f, \"run_delay_share\": %s, \"cpu_check_s\": %.4f%s, \"cpus_seen\": \"%s\"}",
             cs->share, delay, cs->wall_s, first, seen);
}

/* Collective: the writer learns the smallest CPU share, the ranks below the
 * threshold and whether recorded affinities of ranks on one host intersect. */
#ifndef MT_SMPI /* not run under SMPI (see mt_run_main) */
static void shared_cpu_verdict(mt_run_t *r, const mt_cpushare_t *cs)
{
    mt_ctx_t *c = &r->ctx;
    typedef struct {
        char host[64];
        double share, run_delay;
        unsigned char bits[MT_CPUSHARE_MAXCPU];
    } item_t;
    item_t me;
    memset(&me, 0, sizeof me);
    mt_host_name(me.host, sizeof me.host);
    me.share = cs->share;
    me.run_delay = cs->run_delay_share;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int i = 0; i < MT_CPUSHARE_MAXCPU && i < CPU_SETSIZE; i++) me.bits[i] = CPU_ISSET(i, &set) ? 1 : 0;
    } else {
        memset(me.bits, 1, sizeof me.bits); /* unknown: may run anywhere */
    }
    item_t *all = NULL;
    if (c->rank == r->writer && !(all = malloc(sizeof(item_t) * (size_t)c->size)))
        mt_check_mpi(MPI_ERR_NO_MEM, "shared-CPU check");
    mt_check_mpi(MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, r->writer, c->comm),
                 "MPI_Gather");
    if (c->rank != r->writer) return;
    int *host = malloc(sizeof(int) * (size_t)c->size);
    unsigned char *bits = malloc((size_t)MT_CPUSHARE_MAXCPU * (size_t)c->size);
    if (!host || !bits) mt_check_mpi(MPI_ERR_NO_MEM, "shared-CPU check");
    r->cpu_share_min = 1e300;
    r->run_delay_max = -1;
    r->cpu_shared_ranks = 0;
    r->cpu_lost_ranks = 0;
    for (int i = 0; i < c->size; i++) {
        host[i] = i;
        for (int k = 0; k < i; k++)
            if (strcmp(all[i].host, all[k].host) == 0) {
                host[i] = host[k];
                break;
            }
        memcpy(bits + (size_t)i * MT_CPUSHARE_MAXCPU, all[i].bits, MT_CPUSHARE_MAXCPU);
        if (all[i].share < r->cpu_share_min) r->cpu_share_min = all[i].share;
        if (all[i].run_delay > r->run_delay_max) r->run_delay_max = all[i].run_delay;
        if (mt_cpushare_low(all[i].share, all[i].run_delay)) r->cpu_shared_ranks++;
        else if (all[i].share < MT_CPUSHARE_MIN) r->cpu_lost_ranks++;
    }
    r->affinity_overlap = mt_affinity_overlap(c->size, host, bits, MT_CPUSHARE_MAXCPU);
    r->shared_cpu = c->oversubscribed || r->cpu_shared_ranks > 0;
    free(host);
    free(bits);
    free(all);
}
#endif

static void write_shared_cpu(const mt_run_t *r, mt_json_t *j)
{
    mt_json_key(j, "shared_cpu");
    mt_json_obj_begin(j);
    mt_json_kbool(j, "shared", r->shared_cpu);
    mt_json_kbool(j, "oversubscribed", r->ctx.oversubscribed);
    mt_json_kbool(j, "affinity_overlap", r->affinity_overlap);
    mt_json_knum(j, "check_s", MT_CPUSHARE_CHECK_S);
    mt_json_knum(j, "extended_check_s", r->ctx.oversubscribed ? MT_CPUSHARE_CHECK_S : MT_CPUSHARE_EXT_S);
    mt_json_knum(j, "min_cpu_share", r->cpu_share_min);
    mt_json_knum(j, "threshold", MT_CPUSHARE_MIN);
    mt_json_knum(j, "max_run_delay_share", r->run_delay_max >= 0 ? r->run_delay_max : NAN); /* null: unknown */
    mt_json_knum(j, "run_delay_threshold", MT_RUNDELAY_MIN);
    mt_json_knum(j, "gross_threshold", MT_CPUSHARE_GROSS);
    mt_json_kint(j, "ranks_below_threshold", r->cpu_shared_ranks);
    mt_json_kint(j, "ranks_lost_cpu_outside", r->cpu_lost_ranks);
    const char *why = MT_SIMULATED ? "not checked: simulated platform (SimGrid/SMPI), ranks share one host process by design"
                      : r->ctx.oversubscribed ? "more ranks than CPUs on a host"
                      : r->cpu_shared_ranks ? "a rank got less than the threshold of CPU time in the start-up check while "
                                              "waiting for its CPU (another rank or another process on its CPU), or less "
                                              "than half of it"
                      : r->cpu_lost_ranks ? "not shared: a rank got less than the threshold of CPU time without waiting "
                                            "for its CPU (time taken by the hypervisor or by interrupts)"
                                          : "";
    mt_json_kstr(j, "reason", why);
    mt_json_obj_end(j);
}

static int open_results(mt_run_t *r, char *err)
{
    const mt_result_file_t *f = r->app->files;
    const char *names[MT_RUN_MAXFILES + 1];
    int n = 0;
    for (; f && f[n].name && n < MT_RUN_MAXFILES; n++) names[n] = f[n].name;
    names[n] = NULL;
    int rc = mt_outdir_check(r->cli.outdir, names, err);
    for (int i = 0; i < n && rc == MT_OK; i++)
        if (!f[i].optional) rc = mt_outfile_open(&r->out[i], r->cli.outdir, f[i].name, err);
    return rc;
}

static int file_index(const mt_run_t *r, const char *name)
{
    for (int i = 0; r->app->files && r->app->files[i].name && i < MT_RUN_MAXFILES; i++)
        if (strcmp(r->app->files[i].name, name) == 0) return i;
    return -1;
}

FILE *mt_run_file(mt_run_t *r, const char *name)
{
    int i = file_index(r, name);
    return i >= 0 ? r->out[i].f : NULL;
}

int mt_run_file_error(mt_run_t *r, const char *name, char *err)
{
    int i = file_index(r, name);
    if (i < 0 || !r->out[i].f || !ferror(r->out[i].f)) return MT_OK;
    return mt_fail(err, MT_EIO, "writing %s failed: %s", r->out[i].tmp, strerror(errno ? errno : EIO));
}

int mt_run_open_file(mt_run_t *r, const char *name, char *err)
{
    int i = file_index(r, name);
    if (i < 0 || r->ctx.rank != r->writer || !r->cli.outdir || r->out[i].f) return MT_OK;
    return mt_outfile_open(&r->out[i], r->cli.outdir, name, err);
}

int mt_run_progress(const mt_run_t *r) { return r->cli.outdir && !r->cli.quiet; }

mt_json_t *mt_run_meta_begin(mt_run_t *r, int with_end_time)
{
    if (r->ctx.rank != r->writer) return NULL;
    FILE *f = r->cli.outdir ? mt_run_file(r, "meta.json") : r->app->meta_on_stdout ? stdout : NULL;
    if (!f) return NULL;
    char end_iso[64], tool[128];
    mt_iso_now(end_iso, sizeof end_iso);
    snprintf(tool, sizeof tool, "%s %s", r->app->prog, MT_VERSION);
    mt_json_init(&r->meta, f);
    mt_json_obj_begin(&r->meta);
    mt_factors_write_run_header(&r->meta, tool, r->app->kind, r->cli.config, r->cli.run_index, r->start_iso,
                                with_end_time ? end_iso : NULL, r->argc, r->argv, r->launch, r->ctx.size, r->recs);
    /* the profile the settings were chosen from (--like; a factor of the run, absent without one) */
    if (mt_param_def(MTP_like, r->app->id) && mt_p_set(&r->cli.p, MTP_like))
        mt_json_kstr(&r->meta, "like", mt_p_str(&r->cli.p, MTP_like));
    write_shared_cpu(r, &r->meta);
    r->meta_state = with_end_time ? 2 : 1;
    return &r->meta;
}

static void meta_end(mt_run_t *r)
{
    mt_json_t *j = &r->meta;
    if (r->meta_state == 1) {
        char end_iso[64];
        mt_iso_now(end_iso, sizeof end_iso);
        mt_json_kstr(j, "end_time", end_iso);
    }
    mt_json_key(j, "core_latency");
    mt_json_obj_begin(j);
    for (int k = 0; k < 2; k++) {
        const mt_corelat_t *cl = &r->corelat[k];
        mt_json_key(j, k ? "after" : "before");
        if (!cl->done) {
            mt_json_null(j);
            continue;
        }
        mt_json_obj_begin(j);
        mt_json_key(j, "ranks");
        mt_json_arr_begin(j);
        mt_json_int(j, cl->ranks[0]);
        mt_json_int(j, cl->ranks[1]);
        mt_json_arr_end(j);
        mt_json_kint(j, "rounds", cl->rounds);
        mt_json_knum(j, "rtt_median_s", cl->rtt_median_s);
        mt_json_knum(j, "rtt_min_s", cl->rtt_min_s);
        mt_json_obj_end(j);
    }
    mt_json_obj_end(j);
    mt_json_key(j, "machine");
    mt_factors_write_machine(j);
    mt_json_key(j, "build");
    mt_factors_write_build(j);
    mt_json_key(j, "environment");
    mt_factors_write_env(j);
    /* the data files as they are complete: a reader verifies them (docs/reliability.md) */
    int meta = file_index(r, "meta.json");
    mt_json_key(j, "files");
    mt_json_obj_begin(j);
    for (int i = 0; i < MT_RUN_MAXFILES; i++) {
        if (i == meta || !r->out[i].f) continue;
        mt_digest_t d;
        char derr[MT_ERRLEN];
        if (mt_file_digest(r->out[i].f, r->out[i].tmp, &d, derr) != MT_OK) continue; /* commit reports it */
        mt_json_key(j, r->app->files[i].name);
        mt_json_obj_begin(j);
        mt_json_kint(j, "bytes", d.bytes);
        mt_json_kint(j, "lines", d.lines);
        char hex[16];
        snprintf(hex, sizeof hex, "%08lx", d.crc32);
        mt_json_kstr(j, "crc32", hex);
        mt_json_obj_end(j);
    }
    mt_json_obj_end(j);
    mt_json_obj_end(j);
    fflush(j->f);
}

void mt_run_write_timer(const mt_run_t *r, mt_json_t *j)
{
    const mt_timer_inst_t *t = &r->ctx.timer;
    mt_json_obj_begin(j);
    mt_json_kstr(j, "name", t->t->name);
    mt_json_kstr(j, "desc", t->t->desc);
    mt_json_knum(j, "ticks_per_s", t->ticks_per_s);
    if (r->timer_follows) {
        mt_json_kstr(j, "follows", r->timer_follows);
        mt_json_kstr(j, "follows_how", r->timer_follows_how);
    }
    mt_json_kint(j, "study_reads", r->tq.nreads);
    mt_json_knum(j, "resolution_s", r->tq.res_s);
    mt_json_knum(j, "min_overhead_s", r->tq.min_ov_s);
    mt_json_knum(j, "mean_read_s", r->tq.mean_read_s);
    mt_json_knum(j, "resolution_max_over_ranks_s", r->tq_res_max);
    mt_json_knum(j, "min_overhead_max_over_ranks_s", r->tq_ov_max);
    /* --timer-cache: the study was made by an earlier mpirun of the campaign with the same key */
    mt_json_kbool(j, "study_cached", r->tq_cached);
    if (r->tq_cached) mt_json_kstr(j, "study_from", r->tq_from);
    mt_json_obj_end(j);
}

/* data files first, meta.json last: its presence marks a complete run */
static int commit_results(mt_run_t *r, char *err)
{
    int rc = MT_OK, meta = file_index(r, "meta.json");
    for (int i = 0; i < MT_RUN_MAXFILES; i++)
        if (i != meta) {
            if (rc == MT_OK) rc = mt_outfile_commit(&r->out[i], err);
            else mt_outfile_abort(&r->out[i]);
        }
    if (meta >= 0) {
        if (rc == MT_OK) rc = mt_outfile_commit(&r->out[meta], err);
        else mt_outfile_abort(&r->out[meta]);
    }
    return rc;
}

/* ---- --timer-cache: the timer study once per campaign ----
 * The study (resolution, minimum overhead, mean cost per read) depends on the
 * timer, the CPU each rank runs on, the kernel's clock source and the code
 * that reads the timer. The key hashes exactly these: every rank's host name,
 * boot id, CPU binding, timer name and number of reads, plus the clock source,
 * the job size and the executable (path, size, modification time). A file
 * whose key differs is measured over and rewritten. meta.json's timer section
 * says which study it holds (study_cached, study_from). */
#define TC_MAGIC "mpitempo-timer-study 1"
#define TC_RECLEN 512

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(buf, (int)len, f)) buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

static void timer_cache_key(mt_run_t *r, long long reads, char *key)
{
    mt_ctx_t *c = &r->ctx;
    char rec[TC_RECLEN], host[256] = "", boot[64], cpus[160] = "";
    gethostname(host, sizeof host - 1);
    read_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        size_t o = 0;
        for (int k = 0; k < CPU_SETSIZE && o + 8 < sizeof cpus; k++)
            if (CPU_ISSET(k, &set)) o += (size_t)snprintf(cpus + o, sizeof cpus - o, "%d,", k);
    }
    memset(rec, 0, sizeof rec);
    snprintf(rec, sizeof rec, "%s|%s|%s|%s|%lld", host, boot, cpus, c->timer.t->name, reads);
    char *all = NULL;
    if (c->rank == 0 && !(all = malloc((size_t)c->size * TC_RECLEN))) mt_check_mpi(MPI_ERR_NO_MEM, "timer cache key");
    mt_check_mpi(MPI_Gather(rec, TC_RECLEN, MPI_CHAR, all, TC_RECLEN, MPI_CHAR, 0, c->comm), "MPI_Gather");
    if (c->rank != 0) return;
    uint64_t h = 1469598103934665603ULL;
    h = fnv1a(h, all, (size_t)c->size * TC_RECLEN);
    free(all);
    char extra[PATH_MAX + 256], src[128], exe[PATH_MAX] = "";
    read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", src, sizeof src);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    struct stat sb;
    memset(&sb, 0, sizeof sb);
    stat(exe, &sb);
    snprintf(extra, sizeof extra, "%s|%d|%s|%lld|%lld", src, c->size, exe, (long long)sb.st_size,
             (long long)sb.st_mtime);
    h = fnv1a(h, extra, strlen(extra));
    snprintf(key, 17, "%016llx", (unsigned long long)h);
}

/* rank 0: 1 and r->tq etc. filled when the file holds a study with this key */
static int timer_cache_read(mt_run_t *r, const char *key)
{
    int fd = open(r->cli.timer_cache, O_RDONLY | O_NOFOLLOW);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return 0;
    }
    char magic[64] = "", k[32] = "", from[1024] = "";
    long long nreads = 0;
    double v[5];
    int ok = fscanf(f, "%63[^\n]\nkey %31s\nvalues %lld %lg %lg %lg %lg %lg\nfrom %1023[^\n]", magic, k, &nreads,
                    &v[0], &v[1], &v[2], &v[3], &v[4], from) == 9 &&
             !strcmp(magic, TC_MAGIC) && !strcmp(k, key);
    fclose(f);
    if (!ok) return 0;
    r->tq.nreads = nreads;
    r->tq.res_s = v[0];
    r->tq.min_ov_s = v[1];
    r->tq.mean_read_s = v[2];
    r->tq_res_max = v[3];
    r->tq_ov_max = v[4];
    r->tq_cached = 1;
    snprintf(r->tq_from, sizeof r->tq_from, "%s", from);
    return 1;
}

/* rank 0: write the study (a temporary file renamed into place; on any error
 * nothing is left and the next mpirun studies the timer again) */
static void timer_cache_write(mt_run_t *r, const char *key)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.%d.tmp", r->cli.timer_cache, (int)getpid()) >= (int)sizeof tmp) return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return;
    }
    int bad = fprintf(f, "%s\nkey %s\nvalues %lld %.17g %.17g %.17g %.17g %.17g\nfrom %s run %lld %s\n", TC_MAGIC, key,
                      (long long)r->tq.nreads, r->tq.res_s, r->tq.min_ov_s, r->tq.mean_read_s, r->tq_res_max,
                      r->tq_ov_max, r->cli.config, r->cli.run_index, r->start_iso) < 0;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, r->cli.timer_cache) != 0) unlink(tmp);
}

/* MPITEMPO_PHASES=1: rank 0 (or every process before MPI_Init) prints
 * "mpitempo-phase NAME T" to stderr, T = CLOCK_MONOTONIC seconds, at each
 * start-up and tear-down step, so that bench/launch_phases.py can tell where
 * the time of an mpirun goes. No effect otherwise. */
static int phases_on = -1;
static void phase(const char *name, int rank)
{
    if (phases_on < 0) {
        const char *v = getenv("MPITEMPO_PHASES");
        phases_on = v && v[0] == '1';
    }
    if (!phases_on || rank != 0) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "mpitempo-phase %s %.6f\n", name, (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
}

int mt_run_main(const mt_app_t *app, int argc, char **argv)
{
    phase("main", 0);
    mt_run_t r;
    memset(&r, 0, sizeof r);
    r.app = app;
    r.argc = argc;
    r.argv = argv;
    mt_set_prog(app->prog);
    char err[MT_ERRLEN] = "";
    int rc = mt_cli_parse(app, argc, argv, &r.cli, err);
    if (rc == MT_OK && r.cli.help) {
        mt_cli_usage(stdout, app);
        return 0;
    }
    if (rc == MT_OK && r.cli.version) {
        printf("%s %s\n", app->prog, MT_VERSION);
        return 0;
    }
    if (rc == MT_OK && r.cli.list) {
        print_list(app);
        return 0;
    }
    if (rc == MT_OK && r.cli.timer_cache && (!app->timer_study || !r.cli.timer_cache[0]))
        rc = mt_fail(err, MT_EINVAL, !app->timer_study ? "--timer-cache: %s runs no timer study (allowed with "
                                                          "mpitempo-bench, mpitempo-clocks, mpitempo-tree)"
                                                        : "--timer-cache needs a file name",
                     app->prog);
    if (r.cli.check_args || (rc != MT_OK && has_arg(argc, argv, "--check-args"))) return check_args(&r, rc, err);

    mt_check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
    mt_ctx_t *c = &r.ctx;
    c->comm = MPI_COMM_WORLD;
    c->skew_rank = -1;
    mt_check_mpi(MPI_Comm_rank(c->comm, &c->rank), "MPI_Comm_rank");
    phase("mpi_init", c->rank);
    mt_check_mpi(MPI_Comm_size(c->comm, &c->size), "MPI_Comm_size");
    if (rc != MT_OK) return finish_error(&r, err);
    if (app->early) {
        int code = app->early(&r);
        if (code >= 0) {
            mt_check_mpi(MPI_Finalize(), "MPI_Finalize");
            return code;
        }
    }
    mt_iso_now(r.start_iso, sizeof r.start_iso);

    /* the job and the options */
    long long np = r.cli.expect_np;
    if (np && np != c->size)
        rc = c->size == 1 ? mt_fail(err, MT_EINVAL,
                                    "expected %lld ranks but this process sees a job of 1: the launcher started "
                                    "singletons (its -n is not {np}, srun has the wrong --mpi plugin, or it is the "
                                    "mpiexec of a different MPI library than the one the core was built with)", np)
                          : mt_fail(err, MT_EINVAL, "expected %lld ranks but the job has %d", np, c->size);
    if (rc == MT_OK) rc = validate(&r, c->size, err);
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return finish_error(&r, err);

    /* results: never overwritten, written under temporary names until complete */
    if (c->rank == r.writer && r.cli.outdir) rc = open_results(&r, err);
    if (rc == MT_OK && c->rank == r.writer && r.cli.launch_json &&
        !(r.launch = mt_read_json_object(r.cli.launch_json, "--launch-json", err)))
        rc = MT_EIO;
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return finish_error(&r, err);

    phase("validate", c->rank);
    /* the timer: every rank opens and calibrates its own */
    rc = mt_timer_open(mt_p_str(&r.cli.p, MTP_timer), &c->timer, err);
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return finish_error(&r, err);
    r.timer_follows = mt_timer_follows(&c->timer, &r.timer_follows_how);
    if (c->rank == 0 && strstr(r.timer_follows, "REALTIME")) {
        int syncs = mt_param_def(MTP_algorithms, app->id) ||
                    (mt_param_def(MTP_sync, app->id) && strcmp(mt_p_str(&r.cli.p, MTP_sync), "none") != 0);
        if (syncs)
            fprintf(stderr, "%s: warning: timer '%s' follows CLOCK_REALTIME (NTP can slew or step it, a time "
                    "namespace does not move it): clock sync on it may be off; use --timer monotonic\n",
                    app->prog, c->timer.t->name);
    }
    c->oversubscribed = detect_oversubscribed(c->comm);
    c->lazy = lazy_waits(c->oversubscribed);
    phase("timer_open", c->rank);
    /* the timer's quality for meta.json, on every rank at once (they all run the same loop) */
    if (app->timer_study && (r.cli.outdir || app->meta_on_stdout)) {
        long long reads = mt_param_def(MTP_timer_reads, app->id) ? mt_p_int(&r.cli.p, MTP_timer_reads) : MT_STUDY_READS;
        char key[17] = "";
#ifdef MT_SMPI
        if (reads > MT_SMPI_STUDY_READS) reads = MT_SMPI_STUDY_READS;
#endif
        if (r.cli.timer_cache) timer_cache_key(&r, reads, key);
        int cached = c->rank == 0 && r.cli.timer_cache && timer_cache_read(&r, key);
        mt_check_mpi(MPI_Bcast(&cached, 1, MPI_INT, 0, c->comm), "MPI_Bcast");
        if (!cached) {
            mt_timer_study(&c->timer, reads, &r.tq);
            mt_check_mpi(MPI_Reduce(&r.tq.res_s, &r.tq_res_max, 1, MPI_DOUBLE, MPI_MAX, 0, c->comm), "MPI_Reduce");
            mt_check_mpi(MPI_Reduce(&r.tq.min_ov_s, &r.tq_ov_max, 1, MPI_DOUBLE, MPI_MAX, 0, c->comm), "MPI_Reduce");
            if (c->rank == 0 && r.cli.timer_cache) timer_cache_write(&r, key);
        }
    }

    phase("timer_study", c->rank);
    /* do ranks share a CPU? a short check with all ranks busy at once (run/cpushare.h) */
    mt_cpushare_t cs;
    mt_check_mpi(MPI_Barrier(c->comm), "MPI_Barrier");
#ifdef MT_SMPI
    /* simulated ranks share the host process by design; their times are simulated, not run on a CPU */
    memset(&cs, 0, sizeof cs);
    cs.share = 1.0;
    cs.run_delay_share = -1;
    r.cpu_share_min = 1.0;
    r.run_delay_max = -1;
#else
    /* an oversubscribed job is flagged whatever the check reads: no longer look */
    mt_cpushare_probe(MT_CPUSHARE_CHECK_S, c->oversubscribed ? 0 : MT_CPUSHARE_EXT_S, &cs);
    shared_cpu_verdict(&r, &cs);
#endif

    phase("cpushare", c->rank);
    /* per-rank records: placement and binding as the OS reports them, and the check */
    char rec[MT_RANKREC_LEN];
    mt_factors_rank_record(c, rec, sizeof rec);
    append_cpushare(rec, sizeof rec, &cs);
    if (c->rank == r.writer && !(r.recs = malloc((size_t)c->size * MT_RANKREC_LEN)))
        mt_check_mpi(MPI_ERR_NO_MEM, "rank records");
    mt_check_mpi(MPI_Gather(rec, MT_RANKREC_LEN, MPI_CHAR, r.recs, MT_RANKREC_LEN, MPI_CHAR, r.writer, c->comm),
                 "MPI_Gather");

    phase("rank_records", c->rank);
    mt_corelat_probe(c->comm, c->oversubscribed || MT_SIMULATED, &r.corelat[0]);
    phase("corelat_before", c->rank);
    rc = app->run(&r, err);
    phase("app_run", c->rank);
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return finish_error(&r, err);
    mt_corelat_probe(c->comm, c->oversubscribed || MT_SIMULATED, &r.corelat[1]);
    phase("corelat_after", c->rank);
    if (c->rank == r.writer) {
        if (r.meta_state) meta_end(&r);
        rc = commit_results(&r, err);
    }
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return finish_error(&r, err);
    if (app->done) app->done(&r);
    free(r.launch);
    free(r.recs);
    phase("files", c->rank);
    mt_check_mpi(MPI_Finalize(), "MPI_Finalize");
    phase("mpi_finalize", c->rank);
    return r.exit_code;
}
