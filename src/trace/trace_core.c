/* mpitempo: the tracer's state, configuration, clock sync at MPI_Init and
 * MPI_Finalize, and the collection of every rank's events at MPI_Finalize
 * (see trace.h and docs/trace.md). */
#include "trace/trace.h"

#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "base/json.h"
#include "mpitempo/clock.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
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

/* the global clock's defaults are libmpitempo-clock's (the tracer is built from its objects) */
#define TR_DEFAULT_SYNC MTC_DEFAULT_SYNC
#define TR_FALLBACK_SYNC MTC_FALLBACK_SYNC
#define TR_DEFAULT_BUFFER 1000000
#define TR_MAX_BUFFER 1000000000LL
#define TR_CHECK_PP 100  /* ping-pongs per offset of the end check (as the init sync's check) */
#define TR_MEASURE_MAXP 64 /* up to this many ranks the end correction is measured directly (tr_end_measure) */
static mt_check_t tr_chk_end;   /* the accuracy at the trace's end (tr_end_check) */
static int tr_chk_end_ok;
#define TR_SITES_CHUNK 4096 /* bytes of a rank's call-site table per message to rank 0 */

void tr_warn(const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpitempo-trace: warning: %s\n", msg);
    fflush(stderr);
}

/* ---- communicators ----
 * Every communicator the application uses gets an entry in a local table (never reused, so that
 * recorded events keep pointing at the right one after MPI_Comm_free) and a global id that all
 * its members agree on: at creation, the leader (rank 0 of the new communicator; for an
 * intercommunicator, of each group) draws ((its world rank + 1) << 32) | (its own count of
 * creations) and broadcasts it (intercommunicators: two allreduces, the smaller of the two
 * leaders' ids). A communicator first seen in a call without its creation (made by a call the
 * tracer does not wrap) gets a hash of its members instead: the same on every member, but two
 * such communicators with the same members share it (marked "untracked"). */
typedef struct tr_comm {
    MPI_Comm comm;        /* MPI_COMM_NULL once freed */
    uint64_t gid, parent;
    int inter, n, nr;
    int *world, *rworld;  /* world ranks of the (local) group and the remote group */
    int how;              /* creating call id; -1 predefined; -2 untracked */
    int freed;
} tr_comm_t;
static tr_comm_t *tr_comms;
static int tr_ncomms, tr_capcomms, tr_lastcomm = -1;
static uint32_t tr_ncreated;

static uint64_t tr_hash_ranks(uint64_t h, const int *w, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)w[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull);
}

static int *tr_group_world(MPI_Group g, int n)
{
    int *idx = malloc(sizeof(int) * (size_t)(n ? n : 1)), *w = malloc(sizeof(int) * (size_t)(n ? n : 1));
    MPI_Group wg;
    if (!idx || !w || PMPI_Comm_group(MPI_COMM_WORLD, &wg) != MPI_SUCCESS) {
        free(idx);
        free(w);
        return NULL;
    }
    for (int i = 0; i < n; i++) idx[i] = i;
    int rc = PMPI_Group_translate_ranks(g, n, idx, wg, w);
    PMPI_Group_free(&wg);
    free(idx);
    if (rc != MPI_SUCCESS) {
        free(w);
        return NULL;
    }
    return w;
}

/* a new table entry for comm (members translated here: local calls only); index or -1 */
static int tr_comm_add(MPI_Comm comm, uint64_t gid, uint64_t parent, int how)
{
    int inter = 0, n = 0, nr = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || PMPI_Comm_size(comm, &n) != MPI_SUCCESS) return -1;
    if (inter && PMPI_Comm_remote_size(comm, &nr) != MPI_SUCCESS) return -1;
    if (tr_ncomms == tr_capcomms) {
        int cap = tr_capcomms ? 2 * tr_capcomms : 16;
        tr_comm_t *c = realloc(tr_comms, sizeof *c * (size_t)cap);
        if (!c) return -1;
        tr_comms = c;
        tr_capcomms = cap;
    }
    int *w = NULL, *rw = NULL;
    MPI_Group g;
    if (PMPI_Comm_group(comm, &g) == MPI_SUCCESS) {
        w = tr_group_world(g, n);
        PMPI_Group_free(&g);
    }
    if (inter && PMPI_Comm_remote_group(comm, &g) == MPI_SUCCESS) {
        rw = tr_group_world(g, nr);
        PMPI_Group_free(&g);
    }
    if (!w || (inter && !rw)) {
        free(w);
        free(rw);
        return -1;
    }
    if (how == -2) { /* untracked: a hash of the members, the same on every member */
        uint64_t h = tr_hash_ranks(1469598103934665603ull, w, n);
        if (inter) { /* both sides must get the same: hash the two groups in a fixed order */
            uint64_t h2 = tr_hash_ranks(1469598103934665603ull, rw, nr);
            h = (h < h2 ? h : h2) * 31 + (h < h2 ? h2 : h);
        }
        gid = (1ull << 62) | (h & ((1ull << 62) - 1));
    }
    tr_comms[tr_ncomms] = (tr_comm_t){comm, gid, parent, inter, n, nr, w, rw, how, 0};
    return tr_ncomms++;
}

static int tr_comm_find(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return -1;
    if (tr_lastcomm >= 0 && tr_comms[tr_lastcomm].comm == comm) return tr_lastcomm;
    for (int i = tr_ncomms - 1; i >= 0; i--)
        if (tr_comms[i].comm == comm) return tr_lastcomm = i;
    int i;
    if (comm == MPI_COMM_WORLD) i = tr_comm_add(comm, 1, 0, -1);
    else if (comm == MPI_COMM_SELF) i = tr_comm_add(comm, (2ull << 60) | (uint64_t)tr.rank, 1, -1);
    else i = tr_comm_add(comm, 0, 0, -2);
    if (i >= 0) tr_lastcomm = i;
    return i;
}

uint32_t tr_comm_idx(MPI_Comm comm)
{
    int i = tr_comm_find(comm);
    return i < 0 ? 0 : (uint32_t)i + 1;
}

uint64_t tr_comm_gid(uint32_t idx) { return idx == 0 || (int)idx > tr_ncomms ? 0 : tr_comms[idx - 1].gid; }

static int tr_world_rank_idx(uint32_t idx, int r)
{
    if (r < 0 || idx == 0 || (int)idx > tr_ncomms) return -1;
    const tr_comm_t *c = &tr_comms[idx - 1];
    if (c->inter) return r < c->nr ? c->rworld[r] : -1;
    return r < c->n ? c->world[r] : -1;
}

int tr_world_rank(MPI_Comm comm, int r)
{
    if (r < 0) return -1;
    return tr_world_rank_idx(tr_comm_idx(comm), r);
}

int tr_comm_peers(MPI_Comm comm)
{
    int i = tr_comm_find(comm);
    if (i < 0) return 0;
    return tr_comms[i].inter ? tr_comms[i].nr : tr_comms[i].n;
}

int tr_root_world(MPI_Comm comm, int root)
{
    if (root == MPI_ROOT) return tr.rank;
    if (root == MPI_PROC_NULL) return -2;
    return tr_world_rank(comm, root);
}

void tr_comm_created(MPI_Comm newcomm, MPI_Comm parent, int call)
{
    if (!tr.enabled || tr.finalized || newcomm == MPI_COMM_NULL) return;
    int inter = 0, r = 0;
    if (PMPI_Comm_test_inter(newcomm, &inter) != MPI_SUCCESS || PMPI_Comm_rank(newcomm, &r) != MPI_SUCCESS) return;
    uint64_t mine = r == 0 ? (((uint64_t)tr.rank + 1) << 32) | ++tr_ncreated : 0, gid = 0;
    if (!inter) {
        gid = mine;
        if (PMPI_Bcast(&gid, 1, MPI_UINT64_T, 0, newcomm) != MPI_SUCCESS) return;
    } else { /* each group learns the other leader's id, then (second round) its own leader's */
        uint64_t other = 0, own = 0;
        if (PMPI_Allreduce(&mine, &other, 1, MPI_UINT64_T, MPI_MAX, newcomm) != MPI_SUCCESS ||
            PMPI_Allreduce(&other, &own, 1, MPI_UINT64_T, MPI_MAX, newcomm) != MPI_SUCCESS)
            return;
        gid = own < other ? own : other;
    }
    int p = tr_comm_find(parent);
    int i = tr_comm_add(newcomm, gid, p >= 0 ? tr_comms[p].gid : 0, call);
    if (i >= 0) tr_lastcomm = i;
}

void tr_comm_freed(MPI_Comm comm)
{
    for (int i = tr_ncomms - 1; i >= 0; i--)
        if (tr_comms[i].comm == comm) {
            tr_comms[i].comm = MPI_COMM_NULL;
            tr_comms[i].freed = 1;
            tr_lastcomm = -1;
            return;
        }
}

void tr_gcomms_free(tr_gcomm_t *c, int n)
{
    for (int i = 0; c && i < n; i++) {
        free(c[i].members);
        free(c[i].rmembers);
    }
    free(c);
}

static int tr_gcomm_cmp(const void *a, const void *b)
{
    uint64_t x = ((const tr_gcomm_t *)a)->gid, y = ((const tr_gcomm_t *)b)->gid;
    return x < y ? -1 : x > y;
}

/* every rank's table to rank 0, merged by global id, sorted (MPI_COMM_WORLD first) */
int tr_comm_gather(tr_gcomm_t **out, int *nout)
{
    *out = NULL;
    *nout = 0;
    tr_comm_find(MPI_COMM_WORLD);
    int64_t len = 0;
    for (int i = 0; i < tr_ncomms; i++) len += 7 + tr_comms[i].n + tr_comms[i].nr;
    int mylen = len > INT32_MAX ? 0 : (int)len;
    int64_t *buf = malloc(sizeof *buf * (size_t)(len ? len : 1));
    if (!buf) mylen = 0;
    int64_t k = 0;
    for (int i = 0; buf && i < tr_ncomms; i++) {
        const tr_comm_t *c = &tr_comms[i];
        buf[k++] = (int64_t)c->gid;
        buf[k++] = (int64_t)c->parent;
        buf[k++] = c->inter;
        buf[k++] = c->n;
        buf[k++] = c->nr;
        buf[k++] = c->how;
        buf[k++] = c->freed;
        for (int j = 0; j < c->n; j++) buf[k++] = c->world[j];
        for (int j = 0; j < c->nr; j++) buf[k++] = c->rworld[j];
    }
    int *lens = NULL, *displs = NULL;
    int64_t *all = NULL;
    int ok = 1;
    if (tr.rank == 0) {
        lens = calloc((size_t)tr.size, sizeof *lens);
        displs = calloc((size_t)tr.size, sizeof *displs);
        ok = lens && displs;
    }
    PMPI_Gather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, 0, tr.comm);
    int64_t tot = 0;
    if (tr.rank == 0 && ok) {
        for (int r = 0; r < tr.size; r++) {
            displs[r] = (int)tot;
            tot += lens[r];
        }
        if (tot > INT32_MAX) ok = 0, tot = 0;
        if (ok && !(all = malloc(sizeof *all * (size_t)(tot ? tot : 1)))) ok = 0;
        if (!ok) /* receive nothing */
            for (int r = 0; r < tr.size; r++) lens[r] = displs[r] = 0;
    }
    PMPI_Gatherv(buf, mylen, MPI_INT64_T, all, lens, displs, MPI_INT64_T, 0, tr.comm);
    free(buf);
    int rc = 0;
    if (tr.rank == 0 && ok) {
        tr_gcomm_t *g = NULL;
        int ng = 0, cap = 0;
        int64_t p = 0;
        while (p + 7 <= tot) {
            uint64_t gid = (uint64_t)all[p];
            int n = (int)all[p + 3], nr = (int)all[p + 4];
            if (n < 0 || nr < 0 || p + 7 + n + nr > tot) break;
            int j = 0;
            while (j < ng && g[j].gid != gid) j++;
            if (j < ng) {
                g[j].freed |= (int)all[p + 6];
            } else {
                if (ng == cap) {
                    cap = cap ? 2 * cap : 16;
                    tr_gcomm_t *x = realloc(g, sizeof *x * (size_t)cap);
                    if (!x) break;
                    g = x;
                }
                tr_gcomm_t *c = &g[ng];
                memset(c, 0, sizeof *c);
                c->gid = gid;
                c->parent = (uint64_t)all[p + 1];
                c->inter = (int)all[p + 2];
                c->n = n;
                c->nr = nr;
                int how = (int)all[p + 5];
                snprintf(c->how, sizeof c->how, "%s", how >= 0 && how < TR_NCALLS ? tr_calls[how].name
                                                       : how == -1 ? "predefined" : "untracked");
                c->freed = (int)all[p + 6];
                c->members = malloc(sizeof(int) * (size_t)(n ? n : 1));
                c->rmembers = malloc(sizeof(int) * (size_t)(nr ? nr : 1));
                if (!c->members || !c->rmembers) {
                    free(c->members);
                    free(c->rmembers);
                    break;
                }
                for (int q = 0; q < n; q++) c->members[q] = (int)all[p + 7 + q];
                for (int q = 0; q < nr; q++) c->rmembers[q] = (int)all[p + 7 + n + q];
                /* an intercommunicator is defined once: group A is the one holding the lower world rank */
                if (c->inter && nr > 0 && n > 0 && c->rmembers[0] < c->members[0]) {
                    int *t = c->members;
                    c->members = c->rmembers;
                    c->rmembers = t;
                    c->n = nr;
                    c->nr = n;
                }
                ng++;
            }
            p += 7 + n + nr;
        }
        qsort(g, (size_t)ng, sizeof *g, tr_gcomm_cmp);
        *out = g;
        *nout = ng;
    } else if (tr.rank == 0) {
        rc = -1;
    }
    free(lens);
    free(displs);
    free(all);
    return rc;
}

/* ---- requests: from initiation to completion (open addressing on the handle's bits) ----
 * Non-blocking point-to-point, non-blocking collectives and persistent requests. A persistent
 * request stays in the table (inactive between completion and the next MPI_Start) until
 * MPI_Request_free. */
#define TR_NREQ 8192
typedef struct tr_req {
    uint64_t key;   /* 0: empty */
    int64_t t0, bytes, rbytes;   /* collectives: sent, received (trace_bytes.c) */
    uint32_t comm, id;
    int32_t peer, tag, root;
    int16_t call, persistent, active;
} tr_req_t;
static tr_req_t tr_reqtab[TR_NREQ];
static int tr_nreq;
static int64_t tr_req_lost;
static uint32_t tr_nextreq;
static tr_req_t *tr_lastpost;   /* the entry of the last tr_req_post (tr_req_set_rbytes) */

static uint64_t tr_reqkey(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k ? k : 0x8000000000000000ull;
}

static unsigned tr_reqhome(uint64_t k) { return (unsigned)((k * 0x9e3779b97f4a7c15ull) >> 51) & (TR_NREQ - 1); }

int tr_req_pending(void) { return tr_nreq > 0; }

uint32_t tr_req_post(MPI_Request req, int call, int64_t t0, MPI_Comm comm, int peer, int tag, int64_t bytes,
                     int root, int persistent)
{
    if (req == MPI_REQUEST_NULL) return 0;
    uint64_t k = tr_reqkey(req);
    if (tr_nreq >= TR_NREQ / 2) {
        tr_req_lost++;
        return 0;
    }
    /* a new entry even when the handle is already there: MPICH returns one built-in handle for
     * every request that completed at once (two eager MPI_Isend in a row share it); completions
     * then take the entries in posting order (linear probing keeps it) */
    unsigned h = tr_reqhome(k);
    while (tr_reqtab[h].key) h = (h + 1) & (TR_NREQ - 1);
    tr_nreq++;
    uint32_t id = ++tr_nextreq;
    if (!id) id = ++tr_nextreq;
    tr_reqtab[h] = (tr_req_t){k, t0, bytes, 0, tr_comm_idx(comm), id, peer, tag, root, (int16_t)call,
                              (int16_t)persistent, (int16_t)!persistent};
    tr_lastpost = &tr_reqtab[h];
    return id;
}

void tr_req_set_rbytes(uint32_t id, int64_t rbytes)
{
    if (tr_lastpost && tr_lastpost->key && tr_lastpost->id == id) tr_lastpost->rbytes = rbytes;
}

static tr_req_t *tr_req_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL || !tr_nreq) return NULL;
    uint64_t k = tr_reqkey(req);
    unsigned h = tr_reqhome(k);
    while (tr_reqtab[h].key) {
        if (tr_reqtab[h].key == k) return &tr_reqtab[h];
        h = (h + 1) & (TR_NREQ - 1);
    }
    return NULL;
}

/* delete with backward shift so that probe chains stay intact */
static void tr_req_del(tr_req_t *e)
{
    unsigned i = (unsigned)(e - tr_reqtab), j = i;
    for (;;) {
        j = (j + 1) & (TR_NREQ - 1);
        if (!tr_reqtab[j].key) break;
        unsigned home = tr_reqhome(tr_reqtab[j].key);
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            tr_reqtab[i] = tr_reqtab[j];
            i = j;
        }
    }
    tr_reqtab[i].key = 0;
    tr_nreq--;
}

static int tr_is_recv_call(int call) { return call == TR_irecv || call == TR_imrecv || call == TR_recv_init; }

static void tr_req_emit(const tr_req_t *r, int pseudo, int64_t t0, int64_t t1, int peer, int tag, int64_t bytes,
                        int flags)
{
    tr_ev_t *e = tr_slot_ext();
    if (!e) return;
    memset(e, 0, sizeof *e);
    e->t0 = t0;
    e->t1 = t1;
    e->comm = r->comm;
    e->peer = peer;
    e->peer2 = -1;
    e->root = r->root;
    e->tag = tag;
    e->bytes = bytes;
    e->rbytes = pseudo == TR_icoll_done ? r->rbytes : 0;
    e->call = (int16_t)pseudo;
    e->req = r->id;
    e->orig = r->call;
    e->flags = (int16_t)flags;
}

void tr_req_start(MPI_Request req, int64_t t0, int64_t t1, int attached)
{
    tr_req_t *r = tr_req_find(req);
    if (!r || !r->persistent) return;
    r->active = 1;
    r->t0 = t0;
    r->id = ++tr_nextreq;
    if (!r->id) r->id = ++tr_nextreq;
    int recv = tr_is_recv_call(r->call);
    tr_req_emit(r, recv ? TR_start_recv : TR_start_send, t0, t1, r->peer, r->tag, r->bytes,
                attached ? TR_F_ATTACHED : 0);
}

void tr_req_done_one(MPI_Request before, const MPI_Status *st, int64_t t1, int attached)
{
    tr_req_t *p = tr_req_find(before);
    if (!p || !p->active) return;
    tr_req_t r = *p;
    if (p->persistent) p->active = 0;
    else tr_req_del(p);
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    int flags = (cancelled ? TR_F_CANCELLED : 0) | (attached ? TR_F_ATTACHED : 0);
    int kind = tr_calls[r.call].kind;
    if (tr_is_recv_call(r.call)) {
        int nb = 0;
        if (!cancelled) PMPI_Get_count(st, MPI_BYTE, &nb);
        int peer = cancelled ? -1 : st->MPI_SOURCE == MPI_PROC_NULL ? -2 : tr_world_rank_idx(r.comm, st->MPI_SOURCE);
        tr_req_emit(&r, TR_irecv_done, r.t0, t1, peer, cancelled ? -1 : st->MPI_TAG,
                    nb == MPI_UNDEFINED ? 0 : nb, flags);
    } else if (kind == TR_K_ICOLL) {
        tr_req_emit(&r, TR_icoll_done, r.t0, t1, -1, -1, r.bytes, flags);
    } else {
        tr_req_emit(&r, TR_isend_done, r.t0, t1, r.peer, r.tag, r.bytes, flags);
    }
}

void tr_req_freed(MPI_Request req, int64_t t1, int attached)
{
    tr_req_t *p = tr_req_find(req);
    if (!p) return;
    tr_req_t r = *p;
    tr_req_del(p);
    if (!r.active) return;
    int flags = TR_F_FREED | (attached ? TR_F_ATTACHED : 0);
    if (tr_is_recv_call(r.call)) tr_req_emit(&r, TR_irecv_done, r.t0, t1, -1, -1, 0, flags);
    else if (tr_calls[r.call].kind == TR_K_ICOLL) tr_req_emit(&r, TR_icoll_done, r.t0, t1, -1, -1, r.bytes, flags);
    else tr_req_emit(&r, TR_isend_done, r.t0, t1, r.peer, r.tag, r.bytes, flags);
}

/* ---- regions: MPI_Init, MPI_Finalize and the user's (mpitempo_region.h) ---- */
static char *tr_rnames[TR_MAX_REGION_NAMES];
static int tr_nrnames, tr_rstack[64], tr_rdepth;
static int64_t tr_rbad;   /* region calls not recorded: too many names or depth, an end without its begin */
char **tr_region_gnames;
int tr_region_ngnames;

static void tr_region_rec(int call, int idx, int flags, int64_t t0, int64_t t1)
{
    tr_ev_t *e = tr_slot_ext();
    if (!e) return;
    memset(e, 0, sizeof *e);
    e->t0 = t0;
    e->t1 = t1;
    e->peer = e->peer2 = e->root = -1;
    e->tag = idx;
    e->call = (int16_t)call;
    e->orig = -1;
    e->flags = (int16_t)flags;
}

void mt_trace_region_begin(const char *name);
void mt_trace_region_end(const char *name);

void mt_trace_region_begin(const char *name)
{
    if (!tr.on || !name) return;
    int64_t t = tr.timer.t->now();
    int i = 0;
    while (i < tr_nrnames && strcmp(tr_rnames[i], name)) i++;
    if (i == tr_nrnames) {
        if (tr_nrnames == TR_MAX_REGION_NAMES || !(tr_rnames[i] = strdup(name))) {
            tr_rbad++;
            return;
        }
        tr_nrnames++;
    }
    if (tr_rdepth == (int)(sizeof tr_rstack / sizeof *tr_rstack)) {
        tr_rbad++;
        return;
    }
    tr_rstack[tr_rdepth++] = i;
    tr_region_rec(TR_user_region, i, TR_F_BEGIN, t, t);
}

void mt_trace_region_end(const char *name)
{
    if (!tr.on || !name) return;
    int64_t t = tr.timer.t->now();
    if (!tr_rdepth || strcmp(tr_rnames[tr_rstack[tr_rdepth - 1]], name)) {
        tr_rbad++;
        return;
    }
    tr_rdepth--;
    tr_region_rec(TR_user_region, tr_rstack[tr_rdepth], TR_F_END, t, t);
}

/* every rank's region names to rank 0: the merged list there, and map[r][i] = global index of
 * rank r's name i (rank 0 only; NULL elsewhere) */
static int **tr_region_gather(void)
{
    int len = 0;
    for (int i = 0; i < tr_nrnames; i++) len += (int)strlen(tr_rnames[i]) + 1;
    char *buf = malloc((size_t)len + 1), *all = NULL;
    if (!buf) len = 0;
    for (int i = 0, k = 0; buf && i < tr_nrnames; i++) {
        size_t l = strlen(tr_rnames[i]) + 1;
        memcpy(buf + k, tr_rnames[i], l);
        k += (int)l;
    }
    int *lens = NULL, *displs = NULL, tot = 0;
    if (tr.rank == 0) {
        lens = calloc((size_t)tr.size, sizeof *lens);
        displs = calloc((size_t)tr.size, sizeof *displs);
    }
    PMPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, tr.comm);
    if (tr.rank == 0 && lens && displs) {
        for (int r = 0; r < tr.size; r++) {
            displs[r] = tot;
            tot += lens[r];
        }
        all = malloc((size_t)tot + 1);
    }
    if (tr.rank == 0 && !all && lens) /* receive nothing */
        for (int r = 0; r < tr.size; r++) lens[r] = displs ? (displs[r] = 0) : 0;
    PMPI_Gatherv(buf ? buf : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, tr.comm);
    free(buf);
    int **map = NULL;
    if (tr.rank == 0 && all && (map = calloc((size_t)tr.size, sizeof *map)) &&
        (tr_region_gnames = calloc(TR_MAX_REGION_NAMES, sizeof *tr_region_gnames))) {
        for (int r = 0; r < tr.size; r++) {
            int n = 0;
            for (int k = 0; k < lens[r]; k++) n += all[displs[r] + k] == 0;
            map[r] = calloc((size_t)(n ? n : 1), sizeof **map);
            const char *p = all + displs[r];
            for (int i = 0; i < n && map[r]; i++, p += strlen(p) + 1) {
                int g = 0;
                while (g < tr_region_ngnames && strcmp(tr_region_gnames[g], p)) g++;
                if (g == tr_region_ngnames && g < TR_MAX_REGION_NAMES && (tr_region_gnames[g] = strdup(p)))
                    tr_region_ngnames++;
                map[r][i] = g < tr_region_ngnames ? g : -1;
            }
        }
    }
    free(all);
    free(lens);
    free(displs);
    return map;
}

static void tr_region_free(int **map)
{
    for (int r = 0; map && r < tr.size; r++) free(map[r]);
    free(map);
    for (int g = 0; tr_region_gnames && g < tr_region_ngnames; g++) free(tr_region_gnames[g]);
    free(tr_region_gnames);
    tr_region_gnames = NULL;
    tr_region_ngnames = 0;
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
    const char *ec = getenv("MPITEMPO_TRACE_END_CORRECTION");
    if (!ec || !*ec || !strcmp(ec, "auto")) tr.end_mode = 0;
    else if (!strcmp(ec, "measured")) tr.end_mode = 1;
    else if (!strcmp(ec, "resync")) tr.end_mode = 2;
    else if (!strcmp(ec, "none")) tr.end_mode = 3;
    else return mt_fail(err, MT_EINVAL, "invalid MPITEMPO_TRACE_END_CORRECTION '%s' (allowed: auto, measured, resync, none)", ec);
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
static void tr_catch_signals(void);

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
        snprintf(tr.sync_note, sizeof tr.sync_note, "sync '%.200s' failed (%.240s); fell back to '%s'", tr.sync_str, err,
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
    tr_catch_signals();
    PMPI_Barrier(tr.comm);
    tr.tk_start = tr.timer.t->now();
    tr.on = 1;
}

/* the MPI_Init region: from the application's call (CLOCK_MONOTONIC, before the tracer's timer
 * exists) to the end of the tracer's set-up, in ticks */
static double tr_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void tr_init_region(double mono0)
{
    if (!tr.enabled) return;
    double ago = tr_mono() - mono0;
    int64_t now = tr.timer.t->now();
    int64_t t0 = now - (int64_t)(ago / tr.timer.s_per_tick);
    tr_region_rec(TR_init_region, -1, 0, t0 < now ? t0 : now, tr.tk_start);
}

int tr_c_init_seen;
double tr_init_clock(void) { return tr_mono(); }

void tr_init_done(double m0)
{
    static int done;
    if (done) return;
    done = 1;
    tr_self = 1;   /* the tracer's own MPI calls: not passed to the next tool (trace_next.c) */
    tr_start();
    tr_init_region(m0);
    tr_self = 0;
}

static __typeof__(&PMPI_Init) tr_nx_Init;
int MPI_Init(int *argc, char ***argv)
{
    tr_c_init_seen = 1;
    double m0 = tr_mono();
    int rc = TR_FWD(Init, (argc, argv));
    if (rc == MPI_SUCCESS) tr_init_done(m0);
    return rc;
}

static __typeof__(&PMPI_Init_thread) tr_nx_Init_thread;
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    tr_c_init_seen = 1;
    double m0 = tr_mono();
    int rc = TR_FWD(Init_thread, (argc, argv, required, provided));
    if (rc == MPI_SUCCESS) {
        tr_init_done(m0);
        if (tr.enabled && *provided == MPI_THREAD_MULTIPLE && tr.rank == 0)
            tr_warn("MPI_THREAD_MULTIPLE: only calls of one thread at a time are recorded correctly");
    }
    return rc;
}

/* ---- conversion to seconds ---- */
/* global time of raw base-clock time t: the init model, plus the correction
 * measured at finalize, interpolated linearly from none at r0 (the end of the
 * init sync) to all of it at tr.r_fin (the raw time the finalize sync's model
 * refers to: the middle of that sync on this rank) and held constant outside.
 * Extrapolating the line instead would multiply the finalize sync's noise by
 * (r0 - t)/(r1 - r0): for the MPI_Init region's start, a second before r0, and
 * a run of a few ms, a 5 ns correction became microseconds.
 * Why r_fin and not the trace's end r1: the finalize sync starts after r1 and
 * its model is exact only where its fit points lie (an offset-only model: at
 * their middle); evaluated at r1 it is off by the drift x (r_fin - r1), a
 * few ms x drift, which the correction then added to every late event
 * (issue 33: +521 ns at 200 ppm). The difference of the two models at r_fin
 * is the init model's true error there, up to the finalize sync's accuracy. */
static double tr_global(double raw, double r0, double r1)
{
    (void)r1;
    double g = tr.synced ? mt_clock_apply(&tr.g.res.clock, raw) : raw;
    if (tr.fin_synced && tr.r_fin > r0) {
        double w = (raw - r0) / (tr.r_fin - r0);
        g += tr.corr_ref_s * (w < 0 ? 0 : w > 1 ? 1 : w);
    } else if (tr.fin_synced && raw >= tr.r_fin) {
        g += tr.corr_ref_s;
    }
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
        x->rbytes = e->rbytes;
        x->comm = tr_comm_gid(e->comm);
        x->req = e->req;
        x->orig = e->call >= TR_NCALLS ? e->orig : -1;
        x->flags = e->flags;
        x->pad_ = 0;
        x->peer = e->peer;
        x->peer2 = e->peer2;
        x->root = e->root;
        x->tag = e->tag;
        int k = tr_calls[e->call].kind;
        int rk = k == TR_K_RECV || k == TR_K_MSGRECV || k == TR_K_PROBE;
        x->rtag = rk ? e->tag : k == TR_K_SENDRECV ? e->rtag15 : -1;
        if (rk) x->tag = -1;
        x->call = e->call;
        x->rank = tr.rank;
        x->seq = seq0 + i;
        x->site = e->site;
    }
    *nout = n;
    return o;
}

/* ---- MPI_Finalize ---- */
typedef struct tr_rank_info {
    double corr_end_s, sync_dur_s, corr_ref_s, ref_after_end_s;
    int64_t recorded, kept, dropped, req_lost, region_bad;
    char host[64];
} tr_rank_info_t;

/* what the tracer saw but did not record, summed over the ranks (index: table calls, then counted ones) */
static int64_t *tr_nr_all;   /* rank 0: [rank][TR_NCALLS + TRC_N] */
#define TR_NNR (TR_NCALLS + TRC_N)

static const char *tr_nr_name(int i) { return i < TR_NCALLS ? tr_calls[i].name : tr_count_names[i - TR_NCALLS]; }

static int64_t tr_nr_total(int i)
{
    int64_t t = 0;
    for (int r = 0; tr_nr_all && r < tr.size; r++) t += tr_nr_all[(size_t)r * TR_NNR + (size_t)i];
    return t;
}

/* DIR/not_recorded.json: per call, the calls made while the tracer recorded that are not in the trace */
static int tr_write_not_recorded(const char *dir)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/not_recorded.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "format", "mpitempo-trace-not-recorded");
    mt_json_kstr(&j, "note", "MPI calls made between MPI_Init and MPI_Finalize that the trace does not hold: "
                             "'not selected' (in the tracer's table, left out by --calls) or 'counted only' "
                             "(wrapped to be counted). Calls in neither table are not seen (docs/trace.md).");
    mt_json_key(&j, "calls");
    mt_json_obj_begin(&j);
    for (int i = 0; i < TR_NNR; i++) {
        int64_t t = tr_nr_total(i);
        if (!t) continue;
        mt_json_key(&j, tr_nr_name(i));
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "why", i < TR_NCALLS ? "not selected" : "counted only");
        mt_json_kint(&j, "total", t);
        mt_json_key(&j, "per_rank");
        mt_json_arr_begin(&j);
        for (int r = 0; r < tr.size; r++) mt_json_int(&j, tr_nr_all[(size_t)r * TR_NNR + (size_t)i]);
        mt_json_arr_end(&j);
        mt_json_obj_end(&j);
    }
    mt_json_obj_end(&j);
    mt_json_obj_end(&j);
    fputc('\n', f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static double tr_otf2_origin;      /* global time (s) of OTF2 time 0 */
static const tr_gcomm_t *tr_gc;   /* rank 0 at MPI_Finalize: every communicator */
static int tr_ngc;

static void tr_gid_str(uint64_t gid, char *buf, size_t len) { snprintf(buf, len, "%llx", (unsigned long long)gid); }

/* Whether the trace holds every event of the run (0: the reason in buf): a full buffer loses events. */
static int tr_complete(const tr_rank_info_t *info, char *buf, size_t len)
{
    int64_t drop = 0, over = 0, full = 0;
    for (int r = 0; r < tr.size; r++) {
        drop += info[r].dropped;
        over += info[r].recorded - info[r].kept;
        full += info[r].recorded > tr.cap || info[r].dropped > 0;
    }
    buf[0] = 0;
    if (!drop && !over) return 1;
    snprintf(buf, len, "buffer full on %lld of %d ranks (--buffer %lld, --on-full %s): %lld events not recorded, "
             "%lld overwritten", (long long)full, tr.size, (long long)tr.cap, tr.wrap ? "wrap" : "stop",
             (long long)drop, (long long)over);
    return 0;
}

static void tr_write_meta(FILE *f, const tr_rank_info_t *info, double fin_sync_max, int files_ok, const char *why)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "format", "mpitempo-trace");
    mt_json_kint(&j, "format_version", 2);
    char why_inc[256];
    mt_json_kbool(&j, "complete", tr_complete(info, why_inc, sizeof why_inc));
    if (why_inc[0]) mt_json_kstr(&j, "incomplete_reason", why_inc);
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
    mt_json_kint(&j, "requests_untracked", lost);
    int64_t rbad = 0;
    for (int r = 0; r < tr.size; r++) rbad += info[r].region_bad;
    mt_json_kint(&j, "region_calls_not_recorded", rbad);
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
    if (tr.end_how) mt_json_kstr(&j, "end_correction", tr.end_how);
    double mx = 0, md = 0;
    if (tr.synced) mt_check_summary(&tr.g.chk0, 0, &mx, &md);
    mt_json_knum(&j, "max_abs_offset_after_sync_s", tr.synced ? mx : NAN);
    /* measured after the finalize sync on the trace's corrected clock (tr_end_check) */
    double ex = NAN, ed = NAN;
    if (tr_chk_end_ok) mt_check_summary(&tr_chk_end, 0, &ex, &ed);
    mt_json_knum(&j, "max_abs_offset_at_end_s", ex);
    mt_json_key(&j, "offset_at_end_per_rank_s");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) {
        double v = r == 0 ? 0 : NAN;
        for (int i = 0; tr_chk_end_ok && i < tr_chk_end.nsample; i++)
            if (tr_chk_end.sample[i] == r) v = tr_chk_end.offset_s[i];
        mt_json_num(&j, v);
    }
    mt_json_arr_end(&j);
    mt_json_knum(&j, "run_s", mt_base_from_ticks(&tr.g.base, tr.tk_end) - mt_base_from_ticks(&tr.g.base, tr.tk_start));
    mt_json_key(&j, "drift_at_end_per_rank_s");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_num(&j, info[r].corr_end_s);
    mt_json_arr_end(&j);
    /* the finalize model minus the init model where the finalize sync measured it (the middle of
     * that sync, this long after the trace's end on each rank) */
    mt_json_key(&j, "correction_at_finalize_sync_per_rank_s");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_num(&j, info[r].corr_ref_s);
    mt_json_arr_end(&j);
    mt_json_key(&j, "finalize_sync_after_end_per_rank_s");
    mt_json_arr_begin(&j);
    for (int r = 0; r < tr.size; r++) mt_json_num(&j, info[r].ref_after_end_s);
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
    mt_json_key(&j, "communicators");
    mt_json_arr_begin(&j);
    for (int i = 0; i < tr_ngc; i++) {
        const tr_gcomm_t *c = &tr_gc[i];
        char id[32], par[32];
        tr_gid_str(c->gid, id, sizeof id);
        tr_gid_str(c->parent, par, sizeof par);
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "id", id);
        mt_json_kstr(&j, "created_by", c->how);
        mt_json_kstr(&j, "parent", c->parent ? par : "");
        mt_json_kbool(&j, "inter", c->inter);
        mt_json_kbool(&j, "freed", c->freed);
        mt_json_key(&j, "members");
        mt_json_arr_begin(&j);
        for (int k = 0; k < c->n; k++) mt_json_int(&j, c->members[k]);
        mt_json_arr_end(&j);
        if (c->inter) {
            mt_json_key(&j, "remote_members");
            mt_json_arr_begin(&j);
            for (int k = 0; k < c->nr; k++) mt_json_int(&j, c->rmembers[k]);
            mt_json_arr_end(&j);
        }
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
    mt_json_key(&j, "not_recorded");
    mt_json_obj_begin(&j);
    int64_t nsel = 0, ncnt = 0;
    for (int i = 0; i < TR_NNR; i++) *(i < TR_NCALLS ? &nsel : &ncnt) += tr_nr_total(i);
    mt_json_kint(&j, "not_selected_calls", nsel);
    mt_json_kint(&j, "counted_only_calls", ncnt);
    mt_json_kstr(&j, "file", "not_recorded.json");
    mt_json_obj_end(&j);
    mt_json_kstr(&j, "events", "events.csv");
    mt_json_kstr(&j, "perfetto", "perfetto.json");
    mt_json_key(&j, "otf2");
    if (files_ok & 2) mt_json_str(&j, "otf2/traces.otf2");
    else mt_json_null(&j);
    mt_json_knum(&j, "otf2_time_origin_s", tr_otf2_origin);
    if (why && *why) mt_json_kstr(&j, "otf2_note", why);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    mt_json_kstr(&j, "mpi_library", lib);
    /* how rank 0's Fortran calls reached the C wrappers (docs/trace.md, Fortran); null: MPI_Init from C */
    mt_json_key(&j, "fortran");
    if (tr_fort_mode) mt_json_str(&j, tr_fort_mode == 1 ? "forward" : "convert");
    else mt_json_null(&j);
    mt_json_obj_end(&j);
    fputc('\n', f);
}

/* the accuracy of the trace's clock at its end, measured: right after the finalize sync, the
 * offsets to rank 0 of the clock the timestamps use (the init model plus the correction line,
 * continued past r_fin by the check's few ms), as the init sync's accuracy is measured */
static void tr_end_check(double r0, char *err)
{
    mt_clock_t c = tr.g.res.clock;
    if (c.depth >= MT_CLOCK_MAXDEPTH) return;
    /* one more layer: out = g + corr_ref * (raw - r0) / (r_fin - r0), with raw = g + (raw - g) taken
     * at r_fin (the layer sees the global time g; the difference moves it by picoseconds) */
    double k = tr.r_fin > r0 ? tr.corr_ref_s / (tr.r_fin - r0) : 0;
    double off = tr.r_fin - mt_clock_apply(&tr.g.res.clock, tr.r_fin);
    c.m[c.depth].kind = MT_MODEL_LINEAR;
    c.m[c.depth].slope = -k;
    c.m[c.depth].intercept = -k * (off - r0);
    c.depth++;
    double w0 = 0;
    int rc = mt_check_run(tr.comm, &c, &mt_offset_skampi, TR_CHECK_PP, &w0, 1, 0, 1, tr.g.lazy, &tr_chk_end, err);
    tr_chk_end_ok = mt_agree(tr.comm, rc, err) == MT_OK;
    if (!tr_chk_end_ok && tr.rank == 0) tr_warn("the accuracy check at the trace's end failed (%s)", err);
}

/* The init model's error at the end of the run, measured directly (ranks <= TR_MEASURE_MAXP):
 * Check-Global-Clock (the offsets to rank 0 by the fastest of several SKaMPI ping-pong rounds,
 * Hunold and Carpen-Amarie 2018, Alg. 6) on the init model itself; the correction is minus that
 * offset, referred to the middle of the measurement on this rank. What is corrected is only the
 * init model's residual drift (its slope error, at most about a ppm), so where within the
 * measurement's few ms per rank a rank's offset was taken moves the result by less than a ns per
 * 10 ms. Why not a second sync: its fitted model carried an error of about 2.5 ms x the drift
 * (+470 ns at 200 ppm) where the direct measurement agreed with the simulated truth (issue 33). */
static int tr_end_measure(char *err)
{
    mt_check_t chk;
    memset(&chk, 0, sizeof chk);
    double w0 = 0;
    int64_t t0 = tr.timer.t->now();
    int rc = mt_check_run(tr.comm, &tr.g.res.clock, &mt_offset_skampi, TR_CHECK_PP, &w0, 1, 0, 1, tr.g.lazy, &chk, err);
    int64_t t1 = tr.timer.t->now();
    if (mt_agree(tr.comm, rc, err) != MT_OK) return 0;
    double *off = NULL, mine = 0;
    if (tr.rank == 0) {
        off = calloc((size_t)tr.size, sizeof *off);
        for (int i = 0; off && i < chk.nsample; i++)
            if (chk.sample[i] > 0 && chk.sample[i] < tr.size) off[chk.sample[i]] = chk.offset_s[i];
    }
    rc = off || tr.rank != 0 ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    if (mt_agree(tr.comm, rc, err) != MT_OK) {
        mt_check_free(&chk);
        return 0;
    }
    PMPI_Scatter(off, 1, MPI_DOUBLE, &mine, 1, MPI_DOUBLE, 0, tr.comm);
    free(off);
    /* a rank whose MPI_Init model is the identity reads rank 0's time source itself (ClockPropSync
     * found it the same): it cannot drift from it, and what was measured is the measurement's noise */
    int ident = 1;
    for (int i = 0; i < tr.g.res.clock.depth; i++)
        if (tr.g.res.clock.m[i].slope != 0 || tr.g.res.clock.m[i].intercept != 0) ident = 0;
    if (ident) mine = 0;
    mt_check_free(&chk);
    tr.r_fin = 0.5 * (mt_base_from_ticks(&tr.g.base, t0) + mt_base_from_ticks(&tr.g.base, t1));
    tr.corr_ref_s = -mine;
    tr.fin_sync_s = mt_base_from_ticks(&tr.g.base, t1) - mt_base_from_ticks(&tr.g.base, t0);
    tr.end_how = "measured";
    return 1;
}

/* more ranks: a second sync with the init sync's spec (its cost grows with log P, the
 * measurement's with P); the correction is the difference of the two models in its middle */
static int tr_end_resync(char *err)
{
    mt_clock_t in;
    mt_sync_result_t res1;
    mt_clock_init(&in, &tr.g.base);
    int64_t t0 = tr.timer.t->now();
    int rc = mt_sync_run(&tr.g.spec, tr.comm, &in, tr.g.lazy, &res1, err);
    int64_t t1 = tr.timer.t->now();
    if (mt_agree(tr.comm, rc, err) != MT_OK) return 0;
    tr.r_fin = 0.5 * (mt_base_from_ticks(&tr.g.base, t0) + mt_base_from_ticks(&tr.g.base, t1));
    tr.corr_ref_s = mt_clock_apply(&res1.clock, tr.r_fin) - mt_clock_apply(&tr.g.res.clock, tr.r_fin);
    tr.fin_sync_s = res1.duration_s;
    tr.end_how = "resync";
    return 1;
}

static void tr_finish(void)
{
    char err[MT_ERRLEN] = "";
    tr.on = 0;
    tr.tk_end = tr.timer.t->now();
    /* the user regions still open end here; MPI_Finalize is entered (the trace ends with it) */
    while (tr_rdepth > 0) {
        tr_rdepth--;
        tr_region_rec(TR_user_region, tr_rstack[tr_rdepth], TR_F_END, tr.tk_end, tr.tk_end);
    }
    tr_region_rec(TR_finalize_region, -1, 0, tr.tk_end, tr.tk_end);
    /* the init model's error at the end: measured, and removed over the run */
    if (tr.synced) {
        double r0 = mt_base_from_ticks(&tr.g.base, tr.tk_start), r1 = mt_base_from_ticks(&tr.g.base, tr.tk_end);
        int mode = tr.end_mode ? tr.end_mode : tr.size <= TR_MEASURE_MAXP ? 1 : 2;
        int ok = mode == 1 ? tr_end_measure(err) : mode == 2 ? tr_end_resync(err) : 0;
        if (mode == 3) {   /* no correction: the accuracy at the end of the MPI_Init model alone */
            tr.r_fin = r1;
            tr.corr_ref_s = 0;
            tr.end_how = "none";
            tr_end_check(r0, err);
        } else if (ok) {
            tr.fin_synced = 1;
            /* the correction applied at the trace's end */
            tr.corr_end_s = tr_global(r1, r0, r1) - mt_clock_apply(&tr.g.res.clock, r1);
            tr_end_check(r0, err);
        } else if (tr.rank == 0) {
            tr_warn("the clock measurement at MPI_Finalize failed (%s): timestamps use the MPI_Init model only", err);
        }
    }
    tr_rank_info_t mine;
    memset(&mine, 0, sizeof mine);
    mine.corr_end_s = tr.corr_end_s;
    mine.corr_ref_s = tr.corr_ref_s;
    mine.ref_after_end_s = tr.fin_synced ? tr.r_fin - mt_base_from_ticks(&tr.g.base, tr.tk_end) : 0;
    mine.sync_dur_s = tr.fin_sync_s;
    mine.recorded = tr.n;
    mine.kept = tr_nkept();
    mine.dropped = tr.dropped;
    mine.req_lost = tr_req_lost;
    mine.region_bad = tr_rbad;
    gethostname(mine.host, sizeof mine.host - 1);
    tr_rank_info_t *info = NULL;
    if (tr.rank == 0 && !(info = calloc((size_t)tr.size, sizeof *info))) {
        tr_warn("out of memory collecting the trace: nothing written");
    }
    PMPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, info, (int)sizeof mine, MPI_BYTE, 0, tr.comm);
    double fin_max = 0;
    PMPI_Reduce(&tr.fin_sync_s, &fin_max, 1, MPI_DOUBLE, MPI_MAX, 0, tr.comm);
    /* the communicators (merged on rank 0) and the counts of what was not recorded */
    tr_gcomm_t *gcomms = NULL;
    int ngcomms = 0;
    if (tr_comm_gather(&gcomms, &ngcomms) != 0 && tr.rank == 0) tr_warn("out of memory collecting the communicators");
    tr_gc = gcomms;
    tr_ngc = ngcomms;
    int64_t nr_mine[TR_NNR];
    for (int i = 0; i < TR_NCALLS; i++) nr_mine[i] = tr_unsel[i];
    for (int i = 0; i < TRC_N; i++) nr_mine[TR_NCALLS + i] = tr_cnt[i];
    if (tr.rank == 0) tr_nr_all = calloc((size_t)tr.size * TR_NNR, sizeof *tr_nr_all);
    {
        int64_t dummy;
        PMPI_Gather(nr_mine, TR_NNR, MPI_INT64_T, tr_nr_all ? tr_nr_all : &dummy, TR_NNR, MPI_INT64_T, 0, tr.comm);
    }

    int **rmap = tr_region_gather();
    int64_t n = 0;
    tr_out_ev_t *ev = tr_convert(&n);
    /* OTF2 timestamps are unsigned: its time 0 is the earliest event of any rank when that is
     * before the sync epoch (the MPI_Init region), else the epoch (trace.json otf2_time_origin_s) */
    double mymin = 0, gmin = 0;
    for (int64_t i = 0; i < n; i++)
        if (ev[i].t0 < mymin) mymin = ev[i].t0;
    PMPI_Allreduce(&mymin, &gmin, 1, MPI_DOUBLE, MPI_MIN, tr.comm);
    tr_otf2_origin = gmin;
    /* rank 0 writes; the others send their events in turn (one rank's events in memory at a time) */
    int ok = 1;
    if (tr.rank == 0) {
        tr_writer_t *w = info ? tr_writer_open(tr.dir, tr.size, err) : NULL;
        if (!w && info) tr_warn("%s: no trace written", err);
        tr_otf2_t *o = NULL;
        char otf2_why[MT_ERRLEN] = "";
        if (w && tr_have_otf2) {
            o = tr_otf2_open(tr.dir, tr.size, gcomms, ngcomms, otf2_why);
            if (!o) tr_warn("OTF2: %s", otf2_why);
        } else if (!tr_have_otf2) {
            snprintf(otf2_why, sizeof otf2_why, "built without OTF2 (libotf2 not found at build time)");
        }
        double t_origin = tr_otf2_origin, t_last = 0;
        /* the call sites of every rank (trace_sites.c), under a temporary name until complete */
        char sites_path[4200], sites_tmp[4300];
        snprintf(sites_path, sizeof sites_path, "%s/sites.tsv", tr.dir);
        snprintf(sites_tmp, sizeof sites_tmp, "%s.tmp", sites_path);
        FILE *sf = w ? fopen(sites_tmp, "w") : NULL;
        int sites_ok = sf != NULL;
        if (sf) fputs("rank\taddress\tobject\tobject_base\tsymbol\tsymbol_address\n", sf);
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
                /* its call sites: the length, then chunks of at most TR_SITES_CHUNK bytes (no allocation here) */
                int64_t slen = 0;
                if (PMPI_Recv(&slen, 1, MPI_INT64_T, r, 10, tr.comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) slen = 0, sites_ok = 0;
                for (int64_t off = 0; off < slen; off += TR_SITES_CHUNK) {
                    char chunk[TR_SITES_CHUNK];
                    int m = (int)(slen - off < TR_SITES_CHUNK ? slen - off : TR_SITES_CHUNK);
                    if (PMPI_Recv(chunk, m, MPI_BYTE, r, 11, tr.comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) sites_ok = 0;
                    else if (sf && fwrite(chunk, 1, (size_t)m, sf) != (size_t)m) sites_ok = 0;
                }
            } else if (sf) {
                int64_t slen = 0;
                char *stext = tr_sites_text(ev, n, 0, &slen);
                if (slen > 0 && fwrite(stext, 1, (size_t)slen, sf) != (size_t)slen) sites_ok = 0;
                free(stext);
            }
            for (int64_t i = 0; i < nr; i++) /* user regions: the merged name index */
                if (er[i].call == TR_user_region)
                    er[i].tag = rmap && rmap[r] && er[i].tag >= 0 ? rmap[r][er[i].tag] : -1;
            for (int64_t i = 0; i < nr; i++)
                if (er[i].t1 > t_last) t_last = er[i].t1;
            if (w && tr_writer_rank(w, r, info[r].host, er, nr, err) != MT_OK) {
                tr_warn("%s", err);
                ok = 0;
            }
            if (o && tr_otf2_rank(o, r, info[r].host, er, nr, t_origin, err) != MT_OK) {
                tr_warn("OTF2: %s", err);
                snprintf(otf2_why, sizeof otf2_why, "%s", err);
                o = NULL;
            }
            if (r > 0) free(er);
        }
        if (sf) {
            if (fclose(sf) != 0 || !sites_ok || rename(sites_tmp, sites_path) != 0) {
                tr_warn("cannot write '%s': the call sites are not named", sites_path);
                unlink(sites_tmp);
            }
        }
        int files = 0;
        if (o) {
            char why_inc[256];   /* the archive says whether it is partial (otf2-print -I) */
            int whole = tr_complete(info, why_inc, sizeof why_inc);
            tr_otf2_property(o, "TRACE_COMPLETE", whole ? "true" : "false");
            if (!whole) tr_otf2_property(o, "TRACE_INCOMPLETE_REASON", why_inc);
            if (tr_otf2_close(o, t_origin, t_last, err) == MT_OK) files |= 2;
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
                if (tr_write_not_recorded(tr.dir) != 0) {
                    tr_warn("cannot write '%s/not_recorded.json'", tr.dir);
                    ok = 0;
                }
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
        int64_t slen = 0;
        char *stext = tr_sites_text(ev, nr, tr.rank, &slen);   /* NULL (length 0): no site, or out of memory */
        PMPI_Send(&slen, 1, MPI_INT64_T, 0, 10, tr.comm);
        for (int64_t off = 0; off < slen; off += TR_SITES_CHUNK)
            PMPI_Send(stext + off, (int)(slen - off < TR_SITES_CHUNK ? slen - off : TR_SITES_CHUNK), MPI_BYTE, 0, 11,
                      tr.comm);
        free(stext);
    }
    free(ev);
    free(info);
    free(tr_nr_all);
    tr_nr_all = NULL;
    tr_region_free(rmap);
    tr_gcomms_free(gcomms, ngcomms);
    tr_gc = NULL;
    tr_ngc = 0;
    free(tr.ev);
    tr.ev = NULL;
    tr.cap = 0;
    tr.finalized = 1;
    PMPI_Barrier(tr.comm);
    mt_gclock_free(&tr.g);
    PMPI_Comm_free(&tr.comm);
}

static __typeof__(&PMPI_Finalize) tr_nx_Finalize;
int MPI_Finalize(void)
{
    if (tr.enabled && !tr.finalized) {
        tr_self = 1;   /* the tracer's own MPI calls: not passed to the next tool (trace_next.c) */
        tr_finish();
        tr_self = 0;
    }
    return TR_FWD(Finalize, ());
}

/* An application that exits without MPI_Finalize: each rank keeps what it
 * recorded in DIR/partial/rank-R.csv, on the MPI_Init model (no drift
 * correction, no OTF2 or Perfetto files). */
/* A run interrupted (Ctrl-C, the launcher's or a timeout's SIGTERM, a hang-up) keeps what its ranks
 * recorded, as a run without MPI_Finalize does, its first line naming the signal; then the signal's
 * default action. Only where the application left the default disposition. Not async-signal-safe
 * (stdio, malloc): a signal that lands inside the application's malloc can hang the rank until the
 * launcher's SIGKILL. */
static volatile sig_atomic_t tr_sig;
static const int tr_sigs[] = {SIGTERM, SIGINT, SIGHUP};

/* the partial files written so far (rank-R.csv, not the .tmp of one being written) */
static int tr_partial_count(void)
{
    char d[4200];
    snprintf(d, sizeof d, "%s/partial", tr.dir);
    DIR *dp = opendir(d);
    if (!dp) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t l = strlen(e->d_name);
        n += l > 4 && !strncmp(e->d_name, "rank-", 5) && !strcmp(e->d_name + l - 4, ".csv");
    }
    closedir(dp);
    return n;
}

static void tr_on_signal(int sig)
{
    if (!tr_sig) {
        tr_sig = sig;
        tr_atexit();
        /* A launcher ends the other ranks (SIGKILL) as soon as one has ended: wait up to 2 s for the
         * files of every rank that got the signal too, then end as the signal says. */
        struct timespec nap = {0, 20 * 1000 * 1000};
        for (int i = 0; i < 100 && tr_partial_count() < tr.size; i++) nanosleep(&nap, NULL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void tr_catch_signals(void)
{
    for (size_t i = 0; i < sizeof tr_sigs / sizeof tr_sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(tr_sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = tr_on_signal;
        sigemptyset(&sa.sa_mask);   /* the launcher may send another of them while the file is written */
        for (size_t k = 0; k < sizeof tr_sigs / sizeof tr_sigs[0]; k++) sigaddset(&sa.sa_mask, tr_sigs[k]);
        sigaction(tr_sigs[i], &sa, NULL);
    }
}

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
    char why[64] = "";
    if (tr_sig) snprintf(why, sizeof why, " (signal %d)", (int)tr_sig);
    fprintf(f, "# mpitempo-trace partial: rank %d of %d, no MPI_Finalize%s; timer %s, sync %s (MPI_Init model only)\n",
            tr.rank, tr.size, why, tr.timer_name, tr.sync_str);
    tr_csv_header(f);
    tr_csv_rows(f, ev, n);
    free(ev);
    if (fclose(f) == 0) rename(tmp, path);
    else unlink(tmp);
}
