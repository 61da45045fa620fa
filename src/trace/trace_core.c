/* mpitempo: the tracer's state, configuration, clock sync at MPI_Init and
 * MPI_Finalize, and the collection of every rank's events at MPI_Finalize
 * (see trace.h and docs/trace.md). */
#include "trace/trace.h"

#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "base/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

tr_state_t tr;

#define TR_DEFAULT_SYNC "h2:hca3/prop"
#define TR_FALLBACK_SYNC "hca3"
#define TR_DEFAULT_BUFFER 1000000
#define TR_MAX_BUFFER 1000000000LL

void tr_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpitempo-trace: warning: %s\n", msg);
    fflush(stderr);
}

/* ---- communicators: a key shared by every member (hash of the members' world ranks) ---- */
#define TR_NCOMM 64
typedef struct tr_comm {
    MPI_Comm comm;
    uint32_t key;
    int size;
    int *world;   /* world rank of each member; NULL for the identity */
} tr_comm_t;
static tr_comm_t tr_comms[TR_NCOMM];
static int tr_ncomms, tr_lastcomm = -1;

static uint32_t tr_hash_ranks(const int *w, int n)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)(w ? w[i] : i);
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 16777619u;
        }
    }
    h ^= (uint32_t)n * 0x9e3779b9u;
    return h ? h : 1;
}

static tr_comm_t *tr_comm_lookup(MPI_Comm comm)
{
    if (tr_lastcomm >= 0 && tr_comms[tr_lastcomm].comm == comm) return &tr_comms[tr_lastcomm];
    for (int i = 0; i < tr_ncomms; i++)
        if (tr_comms[i].comm == comm) return &tr_comms[tr_lastcomm = i];
    /* first sight: translate the members (local calls only) */
    int n = 0, inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return NULL;
    PMPI_Comm_size(comm, &n);
    int *world = NULL;
    if (comm != MPI_COMM_WORLD) {
        MPI_Group g, wg;
        int *idx = malloc(sizeof(int) * (size_t)n);
        world = malloc(sizeof(int) * (size_t)n);
        if (!idx || !world) {
            free(idx);
            free(world);
            return NULL;
        }
        for (int i = 0; i < n; i++) idx[i] = i;
        PMPI_Comm_group(comm, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        PMPI_Group_translate_ranks(g, n, idx, wg, world);
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
        free(idx);
        int ident = n == tr.size;
        for (int i = 0; i < n && ident; i++) ident = world[i] == i;
        if (ident) {
            free(world);
            world = NULL;
        }
    }
    int slot;
    if (tr_ncomms < TR_NCOMM) {
        slot = tr_ncomms++;
    } else { /* full: replace the first entry */
        slot = 0;
        free(tr_comms[0].world);
    }
    tr_comms[slot] = (tr_comm_t){comm, tr_hash_ranks(world, n), n, world};
    tr_lastcomm = slot;
    return &tr_comms[slot];
}

uint32_t tr_commkey(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    tr_comm_t *c = tr_comm_lookup(comm);
    return c ? c->key : 0;
}

int tr_world_rank(MPI_Comm comm, int r)
{
    if (r < 0) return -1;
    tr_comm_t *c = tr_comm_lookup(comm);
    if (!c || r >= c->size) return -1;
    return c->world ? c->world[r] : r;
}

/* a freed communicator's handle can come back for another group */
int MPI_Comm_free(MPI_Comm *comm)
{
    for (int i = 0; i < tr_ncomms; i++)
        if (tr_comms[i].comm == *comm) {
            free(tr_comms[i].world);
            tr_comms[i] = tr_comms[--tr_ncomms];
            tr_comms[tr_ncomms].comm = MPI_COMM_NULL;
            tr_comms[tr_ncomms].world = NULL;
            tr_lastcomm = -1;
            break;
        }
    return PMPI_Comm_free(comm);
}

/* ---- pending MPI_Irecv requests (open addressing on the handle's bits) ---- */
#define TR_NREQ 4096
typedef struct tr_req {
    uint64_t key;   /* 0: empty */
    int64_t t0;
    uint32_t commkey;
    MPI_Comm comm;
} tr_req_t;
static tr_req_t tr_reqtab[TR_NREQ];
static int tr_nreq;
static int64_t tr_req_lost;

static uint64_t tr_reqkey(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k ? k : 0x8000000000000000ull;
}

int tr_req_pending(void) { return tr_nreq > 0; }

void tr_req_post(MPI_Request req, int64_t t0, uint32_t commkey, MPI_Comm comm)
{
    uint64_t k = tr_reqkey(req);
    if (tr_nreq >= TR_NREQ / 2) {
        tr_req_lost++;
        return;
    }
    unsigned h = (unsigned)((k * 0x9e3779b97f4a7c15ull) >> 52) & (TR_NREQ - 1);
    while (tr_reqtab[h].key && tr_reqtab[h].key != k) h = (h + 1) & (TR_NREQ - 1);
    if (!tr_reqtab[h].key) tr_nreq++;
    tr_reqtab[h] = (tr_req_t){k, t0, commkey, comm};
}

static int tr_req_take(MPI_Request req, tr_req_t *out)
{
    if (req == MPI_REQUEST_NULL) return 0;
    uint64_t k = tr_reqkey(req);
    unsigned h = (unsigned)((k * 0x9e3779b97f4a7c15ull) >> 52) & (TR_NREQ - 1);
    while (tr_reqtab[h].key) {
        if (tr_reqtab[h].key == k) {
            *out = tr_reqtab[h];
            /* delete with backward shift so that probe chains stay intact */
            unsigned i = h, j = h;
            for (;;) {
                j = (j + 1) & (TR_NREQ - 1);
                if (!tr_reqtab[j].key) break;
                unsigned home = (unsigned)((tr_reqtab[j].key * 0x9e3779b97f4a7c15ull) >> 52) & (TR_NREQ - 1);
                if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
                    tr_reqtab[i] = tr_reqtab[j];
                    i = j;
                }
            }
            tr_reqtab[i].key = 0;
            tr_nreq--;
            return 1;
        }
        h = (h + 1) & (TR_NREQ - 1);
    }
    return 0;
}

void tr_req_done_one(MPI_Request before, const MPI_Status *st, int64_t t1)
{
    tr_req_t r;
    if (!tr_req_take(before, &r)) return;
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    if (cancelled) return;
    tr_ev_t *e = tr_slot_ext();
    if (!e) return;
    memset(e, 0, sizeof *e);
    e->t0 = r.t0;
    e->t1 = t1;
    e->commkey = r.commkey;
    e->peer = st->MPI_SOURCE == MPI_PROC_NULL ? -2 : tr_world_rank(r.comm, st->MPI_SOURCE);
    e->peer2 = -1;
    e->root = -1;
    e->tag = st->MPI_TAG;
    int nb = 0;
    PMPI_Get_count(st, MPI_BYTE, &nb);
    e->bytes = nb == MPI_UNDEFINED ? 0 : nb;
    e->call = TR_irecv_done;
}

/* ---- configuration ---- */
static void tr_copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

static int tr_config(char *err)
{
    const char *dir = getenv("MPITEMPO_TRACE_DIR");
    if (!dir || !*dir) return mt_fail(err, MT_EINVAL, "MPITEMPO_TRACE_DIR is not set: no output directory");
    if (strlen(dir) > sizeof tr.dir - 64) return mt_fail(err, MT_EINVAL, "MPITEMPO_TRACE_DIR is too long");
    tr_copy(tr.dir, sizeof tr.dir, dir);
    const char *s = getenv("MPITEMPO_TRACE_SYNC");
    tr.defaulted_sync = !s || !*s;
    tr_copy(tr.sync_str, sizeof tr.sync_str, tr.defaulted_sync ? TR_DEFAULT_SYNC : s);
    const char *t = getenv("MPITEMPO_TRACE_TIMER");
    tr_copy(tr.timer_name, sizeof tr.timer_name, t && *t ? t : "monotonic");
    const char *c = getenv("MPITEMPO_TRACE_CALLS");
    tr_copy(tr.calls_str, sizeof tr.calls_str, c && *c ? c : "default");
    if (tr_parse_calls(tr.calls_str, tr.sel, err) != MT_OK) return MT_EINVAL;
    const char *b = getenv("MPITEMPO_TRACE_BUFFER");
    long long cap = TR_DEFAULT_BUFFER;
    if (b && *b && mt_parse_int(b, "MPITEMPO_TRACE_BUFFER (events per rank)", 1, TR_MAX_BUFFER, &cap, err) != MT_OK)
        return MT_EINVAL;
    tr.cap = cap;
    const char *w = getenv("MPITEMPO_TRACE_ON_FULL");
    if (!w || !*w || !strcmp(w, "stop")) tr.wrap = 0;
    else if (!strcmp(w, "wrap")) tr.wrap = 1;
    else return mt_fail(err, MT_EINVAL, "invalid MPITEMPO_TRACE_ON_FULL '%s' (allowed: stop, wrap)", w);
    if (!strcmp(tr.timer_name, "wtime"))
        return mt_fail(err, MT_EINVAL, "timer 'wtime' cannot time the tracer's MPI calls (allowed: monotonic, "
                                       "monotonic_raw, realtime, gettimeofday, rdtscp)");
    return mt_timer_check_name(tr.timer_name, err);
}

/* rank 0 creates the output directory (and parents) and proves it can write there */
static int tr_mkdirs(const char *path, char *err)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return mt_fail(err, MT_EIO, "cannot create '%s': %s", p, strerror(errno));
            *s = '/';
        }
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return mt_fail(err, MT_EIO, "cannot create '%s': %s", p, strerror(errno));
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.mpitempo-trace-probe", p);
    FILE *f = fopen(probe, "w");
    if (!f) return mt_fail(err, MT_EIO, "cannot write in the output directory '%s': %s", p, strerror(errno));
    fclose(f);
    unlink(probe);
    return MT_OK;
}

static int tr_lazy(MPI_Comm comm)
{
    MPI_Comm node;
    int nlocal = 1, any = 0;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &nlocal);
    PMPI_Comm_free(&node);
    int mine = nlocal > (int)sysconf(_SC_NPROCESSORS_ONLN);
    PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
    tr.oversubscribed = any;
    /* MPITEMPO_CLOCK_SLEEP overrides the waits of the clock code (placements the detection
     * cannot see, e.g. fake hosts sharing one machine's CPUs) */
    const char *sl = getenv("MPITEMPO_CLOCK_SLEEP");
    if (sl && sl[0] == '1') return 1;
    if (sl && sl[0] == '0') return 0;
    return any;
}

static void tr_atexit(void);

/* the set-up after PMPI_Init; any failure leaves the tracer off */
static void tr_start(void)
{
    char err[MT_ERRLEN] = "";
    memset(&tr, 0, sizeof tr);
    mt_set_prog("mpitempo-trace");
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &tr.comm) != MPI_SUCCESS) {
        tr_warn("cannot duplicate MPI_COMM_WORLD: the application runs untraced");
        return;
    }
    PMPI_Comm_rank(tr.comm, &tr.rank);
    PMPI_Comm_size(tr.comm, &tr.size);
    int rc = tr_config(err);
    if (rc == MT_OK && tr.rank == 0) rc = tr_mkdirs(tr.dir, err);
    if (rc == MT_OK) rc = mt_timer_open(tr.timer_name, &tr.timer, err);
    if (rc == MT_OK && !(tr.ev = malloc(sizeof(tr_ev_t) * (size_t)tr.cap)))
        rc = mt_fail(err, MT_ENOMEM, "cannot allocate the trace buffer of %lld events (%lld bytes)",
                     (long long)tr.cap, (long long)(sizeof(tr_ev_t) * (size_t)tr.cap));
    if ((rc = mt_agree(tr.comm, rc, err)) != MT_OK) {
        if (tr.rank == 0) tr_warn("%s: the application runs untraced", err);
        free(tr.ev);
        tr.ev = NULL;
        return;
    }
    /* touch the buffer now, not on the application's path */
    memset(tr.ev, 0, sizeof(tr_ev_t) * (size_t)tr.cap);
    int lazy = tr_lazy(tr.comm);
    rc = mt_gclock_init(&tr.g, tr.comm, &tr.timer, NULL, NULL, NULL, lazy, err);
    if ((rc = mt_agree(tr.comm, rc, err)) != MT_OK) {
        if (tr.rank == 0) tr_warn("clock: %s: the application runs untraced", err);
        free(tr.ev);
        tr.ev = NULL;
        return;
    }
    mt_sync_spec_t spec;
    rc = mt_sync_spec_parse(tr.sync_str, &spec, err);
    if (rc == MT_OK) rc = mt_gclock_sync(&tr.g, &spec, err);
    if ((rc = mt_agree(tr.comm, rc, err)) != MT_OK) {
        snprintf(tr.sync_note, sizeof tr.sync_note, "sync '%s' failed (%s); fell back to '%s'", tr.sync_str, err,
                 TR_FALLBACK_SYNC);
        if (tr.rank == 0) tr_warn("%s", tr.sync_note);
        tr_copy(tr.sync_str, sizeof tr.sync_str, TR_FALLBACK_SYNC);
        mt_sync_spec_parse(TR_FALLBACK_SYNC, &spec, err);
        rc = mt_gclock_sync(&tr.g, &spec, err);
        if ((rc = mt_agree(tr.comm, rc, err)) != MT_OK) {
            if (tr.rank == 0) tr_warn("sync '%s' failed too (%s): global times are raw local times", TR_FALLBACK_SYNC, err);
            mt_sync_spec_parse("none", &spec, err);
            tr.g.spec = spec;
            tr_copy(tr.sync_str, sizeof tr.sync_str, "none");
        }
    }
    tr.synced = tr.g.synced;
    tr.init_sync_s = tr.g.res.duration_s;
    PMPI_Bcast(&tr.init_sync_s, 1, MPI_DOUBLE, 0, tr.comm);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tr.walltime0 = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    tr.enabled = 1;
    atexit(tr_atexit);
    PMPI_Barrier(tr.comm);
    tr.tk_start = tr.timer.t->now();
    tr.on = 1;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) tr_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        tr_start();
        if (tr.enabled && *provided == MPI_THREAD_MULTIPLE && tr.rank == 0)
            tr_warn("MPI_THREAD_MULTIPLE: only calls of one thread at a time are recorded correctly");
    }
    return rc;
}

/* ---- conversion to seconds ---- */
/* global time of raw base-clock time t: the init model, plus the correction
 * measured at finalize, interpolated linearly over the run */
static double tr_global(double raw, double r0, double r1)
{
    double g = tr.synced ? mt_clock_apply(&tr.g.res.clock, raw) : raw;
    if (tr.fin_synced && r1 > r0) g += tr.corr_end_s * (raw - r0) / (r1 - r0);
    return g;
}

static int64_t tr_nkept(void) { return tr.n < tr.cap ? tr.n : tr.cap; }

/* the kept events in recording order, converted */
static tr_out_ev_t *tr_convert(int64_t *nout)
{
    int64_t n = tr_nkept();
    tr_out_ev_t *o = malloc(sizeof *o * (size_t)(n ? n : 1));
    if (!o) {
        *nout = -1;
        return NULL;
    }
    const mt_baseclock_t *b = &tr.g.base;
    double r0 = mt_base_from_ticks(b, tr.tk_start), r1 = mt_base_from_ticks(b, tr.tk_end);
    int64_t first = tr.n > tr.cap ? tr.n % tr.cap : 0; /* wrap: the oldest kept event */
    int64_t seq0 = tr.n > tr.cap ? tr.n - tr.cap : 0;
    for (int64_t i = 0; i < n; i++) {
        const tr_ev_t *e = &tr.ev[(first + i) % tr.cap];
        tr_out_ev_t *x = &o[i];
        x->t0_raw = mt_base_from_ticks(b, e->t0);
        x->t1_raw = mt_base_from_ticks(b, e->t1);
        x->t0 = tr_global(x->t0_raw, r0, r1);
        x->t1 = tr_global(x->t1_raw, r0, r1);
        x->bytes = e->bytes;
        x->commkey = e->commkey;
        x->peer = e->peer;
        x->peer2 = e->peer2;
        x->root = e->root;
        x->tag = e->tag;
        int k = tr_calls[e->call].kind;
        x->rtag = (k == TR_K_RECV || k == TR_K_MSGRECV) ? e->tag : k == TR_K_SENDRECV ? e->rtag15 : -1;
        if (k == TR_K_RECV || k == TR_K_MSGRECV) x->tag = -1;
        x->call = e->call;
        x->rank = tr.rank;
        x->seq = seq0 + i;
    }
    *nout = n;
    return o;
}

/* ---- MPI_Finalize ---- */
typedef struct tr_rank_info {
    double corr_end_s, sync_dur_s;
    int64_t recorded, kept, dropped, req_lost;
    char host[64];
} tr_rank_info_t;

static void tr_write_meta(FILE *f, const tr_rank_info_t *info, double fin_sync_max, int files_ok, const char *why)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "format", "mpitempo-trace");
    mt_json_kint(&j, "format_version", 1);
    mt_json_kint(&j, "ranks", tr.size);
    mt_json_kbool(&j, "oversubscribed", tr.oversubscribed);
    mt_json_kstr(&j, "timer", tr.timer_name);
    mt_json_knum(&j, "timer_resolution_s", tr.timer.s_per_tick);
    mt_json_kstr(&j, "calls", tr.calls_str);
    mt_json_key(&j, "calls_selected");
    mt_json_arr_begin(&j);
    for (int c = 0; c < TR_NCALLS; c++)
        if (tr.sel[c]) mt_json_str(&j, tr_calls[c].id);
    mt_json_arr_end(&j);
    mt_json_key(&j, "buffer");
    mt_json_obj_begin(&j);
    mt_json_kint(&j, "events_per_rank", tr.cap);
    mt_json_kint(&j, "bytes_per_event", (int64_t)sizeof(tr_ev_t));
    mt_json_kstr(&j, "on_full", tr.wrap ? "wrap" : "stop");
    int64_t rec = 0, kept = 0, drop = 0, full = 0, lost = 0;
    for (int r = 0; r < tr.size; r++) {
        rec += info[r].recorded;
        kept += info[r].kept;
        drop += info[r].dropped;
        lost += info[r].req_lost;
        full += info[r].recorded > tr.cap || info[r].dropped > 0;
    }
    mt_json_kint(&j, "events_recorded", rec);
    mt_json_kint(&j, "events_kept", kept);
    mt_json_kint(&j, "events_dropped", drop);
    mt_json_kint(&j, "events_overwritten", rec - kept);
    mt_json_kint(&j, "ranks_full", full);
    mt_json_kint(&j, "irecv_untracked", lost);
    mt_json_obj_end(&j);
    mt_json_key(&j, "sync");
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "algorithm", tr.sync_str);
    mt_json_kbool(&j, "defaulted", tr.defaulted_sync);
    if (tr.sync_note[0]) mt_json_kstr(&j, "note", tr.sync_note);
    mt_json_knum(&j, "duration_s", tr.init_sync_s);
    mt_json_knum(&j, "duration_end_s", fin_sync_max);
    double dmax = 0;
    for (int r = 0; r < tr.size; r++)
        if (fabs(info[r].corr_end_s) > fabs(dmax)) dmax = info[r].corr_end_s;
    mt_json_knum(&j, "drift_at_end_s", fabs(dmax));
    mt_json_kbool(&j, "interpolated", tr.fin_synced);
    double mx = 0, md = 0;
    if (tr.synced) mt_check_summary(&tr.g.chk0, 0, &mx, &md);
    mt_json_knum(&j, "max_abs_offset_after_sync_s", tr.synced ? mx : NAN);
    mt_json_knum(&j, "run_s", mt_base_from_ticks(&tr.g.base, tr.tk_end) - mt_base_from_ticks(&tr.g.base, tr.tk_start));
    mt_json_key(&j, "drift_at_end_per_rank_s");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_num(&j, info[r].corr_end_s);
    mt_json_arr_end(&j);
    mt_json_key(&j, "simulated");
    if (tr.g.sim.on) {
        mt_json_arr_begin(&j);
        for (int r = 0; r < tr.size; r++) {
            mt_json_obj_begin(&j);
            mt_json_knum(&j, "offset_s", tr.g.simall[2 * r]);
            mt_json_knum(&j, "drift", tr.g.simall[2 * r + 1]);
            mt_json_obj_end(&j);
        }
        mt_json_arr_end(&j);
    } else {
        mt_json_bool(&j, 0);
    }
    mt_json_obj_end(&j);
    mt_json_key(&j, "hosts");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_str(&j, info[r].host);
    mt_json_arr_end(&j);
    mt_json_key(&j, "events_per_rank");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_int(&j, info[r].kept);
    mt_json_arr_end(&j);
    mt_json_knum(&j, "start_unix_s", tr.walltime0);
    mt_json_kstr(&j, "events", "events.csv");
    mt_json_kstr(&j, "perfetto", "perfetto.json");
    mt_json_key(&j, "otf2");
    if (files_ok & 2) mt_json_str(&j, "otf2/traces.otf2");
    else mt_json_null(&j);
    if (why && *why) mt_json_kstr(&j, "otf2_note", why);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    mt_json_kstr(&j, "mpi_library", lib);
    mt_json_obj_end(&j);
    fputc('\n', f);
}

static void tr_finish(void)
{
    char err[MT_ERRLEN] = "";
    tr.on = 0;
    tr.tk_end = tr.timer.t->now();
    /* sync again: the init model's drift over the run */
    if (tr.synced) {
        mt_clock_t in;
        mt_sync_result_t res1;
        mt_clock_init(&in, &tr.g.base);
        int rc = mt_sync_run(&tr.g.spec, tr.comm, &in, tr.g.lazy, &res1, err);
        if ((rc = mt_agree(tr.comm, rc, err)) == MT_OK) {
            double raw = mt_base_from_ticks(&tr.g.base, tr.tk_end);
            tr.corr_end_s = mt_clock_apply(&res1.clock, raw) - mt_clock_apply(&tr.g.res.clock, raw);
            tr.fin_synced = 1;
            tr.fin_sync_s = res1.duration_s;
        } else if (tr.rank == 0) {
            tr_warn("the sync at MPI_Finalize failed (%s): timestamps use the MPI_Init model only", err);
        }
    }
    tr_rank_info_t mine;
    memset(&mine, 0, sizeof mine);
    mine.corr_end_s = tr.corr_end_s;
    mine.sync_dur_s = tr.fin_sync_s;
    mine.recorded = tr.n;
    mine.kept = tr_nkept();
    mine.dropped = tr.dropped;
    mine.req_lost = tr_req_lost;
    gethostname(mine.host, sizeof mine.host - 1);
    tr_rank_info_t *info = NULL;
    if (tr.rank == 0 && !(info = calloc((size_t)tr.size, sizeof *info))) {
        tr_warn("out of memory collecting the trace: nothing written");
    }
    PMPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, info, (int)sizeof mine, MPI_BYTE, 0, tr.comm);
    double fin_max = 0;
    PMPI_Reduce(&tr.fin_sync_s, &fin_max, 1, MPI_DOUBLE, MPI_MAX, 0, tr.comm);

    int64_t n = 0;
    tr_out_ev_t *ev = tr_convert(&n);
    /* rank 0 writes; the others send their events in turn (one rank's events in memory at a time) */
    int ok = 1;
    if (tr.rank == 0) {
        tr_writer_t *w = info ? tr_writer_open(tr.dir, tr.size, err) : NULL;
        if (!w && info) tr_warn("%s: no trace written", err);
        tr_otf2_t *o = NULL;
        char otf2_why[MT_ERRLEN] = "";
        if (w && tr_have_otf2) {
            o = tr_otf2_open(tr.dir, tr.size, otf2_why);
            if (!o) tr_warn("OTF2: %s", otf2_why);
        } else if (!tr_have_otf2) {
            snprintf(otf2_why, sizeof otf2_why, "built without OTF2 (libotf2 not found at build time)");
        }
        double t_origin = 0, t_last = 0;
        for (int r = 0; r < tr.size; r++) {
            int64_t nr = r == 0 ? n : 0;
            tr_out_ev_t *er = ev;
            if (r > 0) {
                PMPI_Send(&ok, 1, MPI_INT, r, 7, tr.comm); /* go */
                PMPI_Recv(&nr, 1, MPI_INT64_T, r, 8, tr.comm, MPI_STATUS_IGNORE);
                er = nr > 0 ? malloc(sizeof *er * (size_t)nr) : NULL;
                if (nr > 0 && !er) {
                    tr_warn("out of memory receiving rank %d's events", r);
                    ok = 0;
                }
                int64_t got = 0;
                while (got < nr) { /* in chunks that fit an int count */
                    int64_t chunk = nr - got < (1 << 20) ? nr - got : (1 << 20);
                    if (er)
                        PMPI_Recv(er + got, (int)(chunk * (int64_t)sizeof *er), MPI_BYTE, r, 9, tr.comm, MPI_STATUS_IGNORE);
                    else
                        PMPI_Recv(NULL, 0, MPI_BYTE, r, 9, tr.comm, MPI_STATUS_IGNORE);
                    got += chunk;
                }
                if (!er) nr = 0;
            }
            if (r == 0 && nr > 0) t_origin = er[0].t0;
            for (int64_t i = 0; i < nr; i++) {
                if (er[i].t0 < t_origin) t_origin = er[i].t0;
                if (er[i].t1 > t_last) t_last = er[i].t1;
            }
            if (w && tr_writer_rank(w, r, info[r].host, er, nr, err) != MT_OK) {
                tr_warn("%s", err);
                ok = 0;
            }
            if (o && tr_otf2_rank(o, r, info[r].host, er, nr, 0.0, err) != MT_OK) {
                tr_warn("OTF2: %s", err);
                snprintf(otf2_why, sizeof otf2_why, "%s", err);
                o = NULL;
            }
            if (r > 0) free(er);
        }
        int files = 0;
        if (o) {
            if (tr_otf2_close(o, 0.0, t_last, err) == MT_OK) files |= 2;
            else {
                tr_warn("OTF2: %s", err);
                snprintf(otf2_why, sizeof otf2_why, "%s", err);
            }
        }
        if (w) {
            char path[4200], tmp[4300];
            snprintf(path, sizeof path, "%s/trace.json", tr.dir);
            snprintf(tmp, sizeof tmp, "%s.tmp", path);
            FILE *f = fopen(tmp, "w");
            if (f) {
                tr_write_meta(f, info, fin_max, files | 1, otf2_why);
                if (tr_writer_close(w, NULL, err) != MT_OK) {
                    tr_warn("%s", err);
                    ok = 0;
                }
                if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
                    tr_warn("cannot write '%s'", path);
                    unlink(tmp);
                }
            } else {
                tr_writer_close(w, NULL, err);
                tr_warn("cannot write '%s': %s", tmp, strerror(errno));
            }
        }
        (void)t_origin;
    } else {
        int go = 0;
        PMPI_Recv(&go, 1, MPI_INT, 0, 7, tr.comm, MPI_STATUS_IGNORE);
        int64_t nr = n < 0 ? 0 : n;
        PMPI_Send(&nr, 1, MPI_INT64_T, 0, 8, tr.comm);
        int64_t sent = 0;
        while (sent < nr) {
            int64_t chunk = nr - sent < (1 << 20) ? nr - sent : (1 << 20);
            PMPI_Send(ev + sent, (int)(chunk * (int64_t)sizeof *ev), MPI_BYTE, 0, 9, tr.comm);
            sent += chunk;
        }
    }
    free(ev);
    free(info);
    free(tr.ev);
    tr.ev = NULL;
    tr.cap = 0;
    tr.finalized = 1;
    PMPI_Barrier(tr.comm);
    mt_gclock_free(&tr.g);
    PMPI_Comm_free(&tr.comm);
}

int MPI_Finalize(void)
{
    if (tr.enabled && !tr.finalized) tr_finish();
    return PMPI_Finalize();
}

/* An application that exits without MPI_Finalize: each rank keeps what it
 * recorded in DIR/partial/rank-R.csv, on the MPI_Init model (no drift
 * correction, no OTF2 or Perfetto files). */
static void tr_atexit(void)
{
    if (!tr.enabled || tr.finalized || !tr.ev) return;
    tr.on = 0;
    tr.tk_end = tr.timer.t->now();
    char d[4200], path[4300], tmp[4400];
    snprintf(d, sizeof d, "%s/partial", tr.dir);
    mkdir(d, 0777);
    snprintf(path, sizeof path, "%s/rank-%d.csv", d, tr.rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int64_t n = 0;
    tr_out_ev_t *ev = tr_convert(&n);
    FILE *f = fopen(tmp, "w");
    if (!f || !ev) {
        if (f) fclose(f);
        free(ev);
        return;
    }
    fprintf(f, "# mpitempo-trace partial: rank %d of %d, no MPI_Finalize; timer %s, sync %s (MPI_Init model only)\n",
            tr.rank, tr.size, tr.timer_name, tr.sync_str);
    tr_csv_header(f);
    tr_csv_rows(f, ev, n);
    free(ev);
    if (fclose(f) == 0) rename(tmp, path);
    else unlink(tmp);
}
