/* mpitempo: the OTF2 archive of a trace (the format of Score-P, Vampir and
 * Scalasca), written by rank 0 with OTF2's serial collective callbacks: one
 * location per rank, one region per MPI call, a group and a communicator
 * definition per communicator, MPI point-to-point, non-blocking and
 * collective records on their communicator (ranks in it); timestamps are nanoseconds of the
 * global clock (after the interpolation) since its epoch. Built only when
 * libotf2 is found (CMake option MPITEMPO_OTF2). */
#include "trace/trace.h"

#include "base/mt_common.h"

#ifdef MT_HAVE_OTF2
#include <math.h>
#include <otf2/otf2.h>
#include <stdlib.h>
#include <string.h>

const int tr_have_otf2 = 1;

struct tr_otf2 {
    OTF2_Archive *a;
    int nranks;
    uint64_t *nev;
    char (*host)[64];
    const tr_gcomm_t *comms;   /* sorted by global id: the index is the OTF2 comm reference */
    int ncomms;
    int **loc;                 /* per communicator, lazily: world rank -> rank in its group (-1 none) */
    int *ref, *order;          /* OTF2 reference of sorted index i; sorted index of reference k (parents first) */
};

static OTF2_FlushType tr_pre_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void *cd, bool final)
{
    (void)ud, (void)ft, (void)loc, (void)cd, (void)final;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp tr_post_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc)
{
    (void)ud, (void)ft, (void)loc;
    return 0;
}
static OTF2_FlushCallbacks tr_flush_cb = {tr_pre_flush, tr_post_flush};

static void tr_otf2_free(tr_otf2_t *o)
{
    if (!o) return;
    for (int i = 0; o->loc && i < o->ncomms; i++) free(o->loc[i]);
    free(o->loc);
    free(o->ref);
    free(o->order);
    free(o->nev);
    free(o->host);
    free(o);
}

tr_otf2_t *tr_otf2_open(const char *dir, int nranks, const tr_gcomm_t *comms, int ncomms, char *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/otf2", dir);
    tr_otf2_t *o = calloc(1, sizeof *o);
    if (o) {
        o->nev = calloc((size_t)nranks, sizeof *o->nev);
        o->host = calloc((size_t)nranks, sizeof *o->host);
        o->loc = calloc((size_t)(ncomms ? ncomms : 1), sizeof *o->loc);
    }
    if (!o || !o->nev || !o->host || !o->loc) {
        tr_otf2_free(o);
        mt_fail(err, MT_ENOMEM, "out of memory");
        return NULL;
    }
    o->nranks = nranks;
    o->comms = comms;
    o->ncomms = ncomms;
    /* references in definition order: every communicator after its parent (OTF2 readers expect
     * references defined in increasing order) */
    o->ref = malloc(sizeof(int) * (size_t)(ncomms ? ncomms : 1));
    o->order = malloc(sizeof(int) * (size_t)(ncomms ? ncomms : 1));
    if (!o->ref || !o->order) {
        tr_otf2_free(o);
        mt_fail(err, MT_ENOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < ncomms; i++) o->ref[i] = -1;
    int next = 0, progress = 1;
    while (next < ncomms && progress) {
        progress = 0;
        for (int i = 0; i < ncomms; i++) {
            if (o->ref[i] >= 0) continue;
            int p = -1;
            if (comms[i].parent) { /* binary search of the parent */
                int lo = 0, hi = ncomms - 1;
                while (lo <= hi) {
                    int mid = (lo + hi) / 2;
                    if (comms[mid].gid == comms[i].parent) {
                        p = mid;
                        break;
                    }
                    if (comms[mid].gid < comms[i].parent) lo = mid + 1;
                    else hi = mid - 1;
                }
            }
            if (p >= 0 && p != i && o->ref[p] < 0) continue;
            o->order[next] = i;
            o->ref[i] = next++;
            progress = 1;
        }
    }
    for (int i = 0; i < ncomms; i++) /* a parent cycle cannot happen; keep every communicator anyway */
        if (o->ref[i] < 0) {
            o->order[next] = i;
            o->ref[i] = next++;
        }
    o->a = OTF2_Archive_Open(path, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
                             OTF2_COMPRESSION_NONE);
    if (!o->a) {
        mt_fail(err, MT_EIO, "cannot create the archive '%s/traces.otf2'", path);
        tr_otf2_free(o);
        return NULL;
    }
    OTF2_Archive_SetFlushCallbacks(o->a, &tr_flush_cb, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(o->a);
    OTF2_Archive_SetCreator(o->a, "mpitempo-trace " MT_VERSION);
    OTF2_Archive_SetDescription(o->a, "MPI calls on a synchronised global clock (mpitempo)");
    if (OTF2_Archive_OpenEvtFiles(o->a) != OTF2_SUCCESS) {
        mt_fail(err, MT_EIO, "cannot open the event files of '%s/traces.otf2'", path);
        OTF2_Archive_Close(o->a);
        tr_otf2_free(o);
        return NULL;
    }
    return o;
}

static uint64_t tr_ns(double t, double origin)
{
    double v = (t - origin) * 1e9;
    return v > 0 ? (uint64_t)llround(v) : 0;
}

static OTF2_CollectiveOp tr_collop(int call)
{
    static const OTF2_CollectiveOp ops[] = {
        OTF2_COLLECTIVE_OP_BARRIER, OTF2_COLLECTIVE_OP_BCAST, OTF2_COLLECTIVE_OP_GATHER, OTF2_COLLECTIVE_OP_GATHERV,
        OTF2_COLLECTIVE_OP_SCATTER, OTF2_COLLECTIVE_OP_SCATTERV, OTF2_COLLECTIVE_OP_ALLGATHER,
        OTF2_COLLECTIVE_OP_ALLGATHERV, OTF2_COLLECTIVE_OP_ALLTOALL, OTF2_COLLECTIVE_OP_ALLTOALLV,
        OTF2_COLLECTIVE_OP_ALLTOALLW, OTF2_COLLECTIVE_OP_ALLREDUCE, OTF2_COLLECTIVE_OP_REDUCE,
        OTF2_COLLECTIVE_OP_REDUCE_SCATTER, OTF2_COLLECTIVE_OP_SCAN, OTF2_COLLECTIVE_OP_EXSCAN,
        OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK};
    return ops[tr_calls[call].op];
}

/* the OTF2 reference of a global communicator id; -1 when unknown */
static int tr_cref(const tr_otf2_t *o, uint64_t gid)
{
    int lo = 0, hi = o->ncomms - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (o->comms[mid].gid == gid) return o->ref[mid];
        if (o->comms[mid].gid < gid) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* rank of world rank w in communicator c (for an intercommunicator: in the group that holds it) */
static uint32_t tr_lrank(tr_otf2_t *o, int c, int w)
{
    if (c < 0 || w < 0 || w >= o->nranks) return OTF2_UNDEFINED_UINT32;
    if (!o->loc[c]) {
        int *l = malloc(sizeof(int) * (size_t)o->nranks);
        if (!l) return OTF2_UNDEFINED_UINT32;
        for (int r = 0; r < o->nranks; r++) l[r] = -1;
        const tr_gcomm_t *g = &o->comms[o->order[c]];
        for (int k = 0; k < g->n; k++)
            if (g->members[k] >= 0 && g->members[k] < o->nranks) l[g->members[k]] = k;
        for (int k = 0; g->inter && k < g->nr; k++)
            if (g->rmembers[k] >= 0 && g->rmembers[k] < o->nranks) l[g->rmembers[k]] = k;
        o->loc[c] = l;
    }
    return o->loc[c][w] < 0 ? OTF2_UNDEFINED_UINT32 : (uint32_t)o->loc[c][w];
}

/* the root of a collective on communicator c as OTF2 has it, seen from location `self`: the rank
 * in c; on an intercommunicator, ROOT_SELF for the root itself (MPI_ROOT), ROOT_THIS_GROUP for
 * the other members of its group (MPI_PROC_NULL), the rank in the remote group for the others */
static uint32_t tr_lroot(tr_otf2_t *o, int c, int root, int self)
{
    int inter = c >= 0 && o->comms[o->order[c]].inter;
    if (root == -2) return inter ? OTF2_COLLECTIVE_ROOT_THIS_GROUP : OTF2_COLLECTIVE_ROOT_NONE;
    if (root < 0) return OTF2_UNDEFINED_UINT32;
    if (inter && root == self) return OTF2_COLLECTIVE_ROOT_SELF;
    return tr_lrank(o, c, root);
}

/* the records of a pseudo call (a request started or completed) at time t; the count written */
static uint64_t tr_pseudo(tr_otf2_t *o, OTF2_EvtWriter *w, const tr_out_ev_t *e, uint64_t t)
{
    int c = tr_cref(o, e->comm);
    if (!e->req) return 0;
    if (e->flags & TR_F_CANCELLED) {
        OTF2_EvtWriter_MpiRequestCancelled(w, NULL, t, e->req);
        return 1;
    }
    switch (e->call) {
    case TR_start_send: {
        uint32_t p = tr_lrank(o, c, e->peer);
        if (c < 0 || p == OTF2_UNDEFINED_UINT32) return 0;
        OTF2_EvtWriter_MpiIsend(w, NULL, t, p, (OTF2_CommRef)c, (uint32_t)e->tag, (uint64_t)e->bytes, e->req);
        return 1;
    }
    case TR_start_recv:
        OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t, e->req);
        return 1;
    case TR_isend_done:
        OTF2_EvtWriter_MpiIsendComplete(w, NULL, t, e->req);
        return 1;
    case TR_irecv_done: {
        uint32_t p = tr_lrank(o, c, e->peer);
        if (e->flags & TR_F_FREED) return 0;   /* freed before completion: no matched message */
        if (c < 0 || p == OTF2_UNDEFINED_UINT32) { /* MPI_PROC_NULL source: the request ends */
            OTF2_EvtWriter_MpiRequestCancelled(w, NULL, t, e->req);
            return 1;
        }
        OTF2_EvtWriter_MpiIrecv(w, NULL, t, p, (OTF2_CommRef)c, (uint32_t)e->rtag, (uint64_t)e->bytes, e->req);
        return 1;
    }
    case TR_icoll_done:
        if (c < 0 || e->orig < 0 || tr_calls[e->orig].op == TR_OP_NONE) return 0;
#if OTF2_VERSION_MAJOR >= 3
        OTF2_EvtWriter_NonBlockingCollectiveComplete(w, NULL, t, tr_collop(e->orig), (OTF2_CommRef)c,
                                                     tr_lroot(o, c, e->root, e->rank), (uint64_t)e->bytes, (uint64_t)e->rbytes,
                                                     e->req);
        return 1;
#else /* OTF2 2.x has no non-blocking collective records: the collective at its completion */
        OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t);
        OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t, tr_collop(e->orig), (OTF2_CommRef)c, tr_lroot(o, c, e->root, e->rank),
                                        (uint64_t)e->bytes, (uint64_t)e->rbytes);
        return 2;
#endif
    }
    return 0;
}

static int tr_is_region(int call) { return call < TR_NCALLS || tr_calls[call].kind == TR_K_REGION; }

int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err)
{
    snprintf(o->host[rank], sizeof o->host[rank], "%s", host);
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(o->a, (OTF2_LocationRef)rank);
    if (!w) return mt_fail(err, MT_EIO, "no OTF2 event writer for rank %d", rank);
    uint64_t cnt = 0, last = 0;
#define TR_CLAMP(t) ((t) < last ? last : (last = (t)))
    for (int64_t i = 0; i < n; i++) {
        const tr_out_ev_t *e = &ev[i];
        if (e->call == TR_user_region) { /* a user region's begin or end */
            if (e->tag < 0 || e->tag >= tr_region_ngnames) continue;
            uint64_t t = TR_CLAMP(tr_ns(e->t0, t_origin));
            if (e->flags & TR_F_BEGIN) OTF2_EvtWriter_Enter(w, NULL, t, (OTF2_RegionRef)(TR_NALL + e->tag));
            else OTF2_EvtWriter_Leave(w, NULL, t, (OTF2_RegionRef)(TR_NALL + e->tag));
            cnt++;
            continue;
        }
        if (!tr_is_region(e->call)) { /* a request event on its own (its wait or start not recorded) */
            uint64_t t = tr_ns(e->call == TR_start_send || e->call == TR_start_recv ? e->t0 : e->t1, t_origin);
            cnt += tr_pseudo(o, w, e, TR_CLAMP(t));
            continue;
        }
        int kind = tr_calls[e->call].kind;
        uint64_t t0 = TR_CLAMP(tr_ns(e->t0, t_origin));
        OTF2_EvtWriter_Enter(w, NULL, t0, (OTF2_RegionRef)e->call);
        cnt++;
        int c = tr_cref(o, e->comm);
        uint32_t peer = tr_lrank(o, c, e->peer);
        int has_peer = c >= 0 && peer != OTF2_UNDEFINED_UINT32;
        if (has_peer && (kind == TR_K_SEND || kind == TR_K_SENDRECV || (kind == TR_K_ISEND && !e->req))) {
            OTF2_EvtWriter_MpiSend(w, NULL, t0, peer, (OTF2_CommRef)c, (uint32_t)e->tag, (uint64_t)e->bytes);
            cnt++;
        }
        if (has_peer && kind == TR_K_ISEND && e->req) {
            OTF2_EvtWriter_MpiIsend(w, NULL, t0, peer, (OTF2_CommRef)c, (uint32_t)e->tag, (uint64_t)e->bytes, e->req);
            cnt++;
        }
        if (kind == TR_K_IRECV && e->req) {
            OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t0, e->req);
            cnt++;
        }
        int coll = kind == TR_K_A2A || kind == TR_K_12A || kind == TR_K_A21 || kind == TR_K_COLL;
        uint64_t t1 = TR_CLAMP(tr_ns(e->t1, t_origin));
        if (c >= 0 && coll && tr_calls[e->call].op != TR_OP_NONE) {
            OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t0);
            OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t1, tr_collop(e->call), (OTF2_CommRef)c, tr_lroot(o, c, e->root, e->rank),
                                            (uint64_t)e->bytes, (uint64_t)e->rbytes);
            cnt += 2;
        }
#if OTF2_VERSION_MAJOR >= 3
        if (c >= 0 && kind == TR_K_ICOLL && e->req && tr_calls[e->call].op != TR_OP_NONE) {
            OTF2_EvtWriter_NonBlockingCollectiveRequest(w, NULL, t0, e->req);
            cnt++;
        }
#endif
        if (kind == TR_K_RECV && has_peer) {
            OTF2_EvtWriter_MpiRecv(w, NULL, t1, peer, (OTF2_CommRef)c, (uint32_t)e->rtag, (uint64_t)e->bytes);
            cnt++;
        }
        if (kind == TR_K_SENDRECV && c >= 0) {
            uint32_t src = tr_lrank(o, c, e->peer2);
            if (src != OTF2_UNDEFINED_UINT32) {
                OTF2_EvtWriter_MpiRecv(w, NULL, t1, src, (OTF2_CommRef)c, (uint32_t)e->rtag, (uint64_t)e->rbytes);
                cnt++;
            }
        }
        /* the requests this call started or completed, inside its region */
        while (i + 1 < n && !tr_is_region(ev[i + 1].call) && (ev[i + 1].flags & TR_F_ATTACHED)) {
            const tr_out_ev_t *p = &ev[++i];
            uint64_t t = p->call == TR_start_send || p->call == TR_start_recv ? t0 : t1;
            cnt += tr_pseudo(o, w, p, t);
        }
        OTF2_EvtWriter_Leave(w, NULL, t1, (OTF2_RegionRef)e->call);
        cnt++;
    }
#undef TR_CLAMP
    o->nev[rank] = cnt;
    if (OTF2_Archive_CloseEvtWriter(o->a, w) != OTF2_SUCCESS)
        return mt_fail(err, MT_EIO, "cannot close the OTF2 event writer of rank %d", rank);
    return MT_OK;
}

static OTF2_RegionRole tr_role(int call)
{
    switch (tr_calls[call].kind) {
    case TR_K_A2A: return call == TR_barrier ? OTF2_REGION_ROLE_BARRIER : OTF2_REGION_ROLE_COLL_ALL2ALL;
    case TR_K_12A: return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case TR_K_A21: return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case TR_K_COLL: case TR_K_ICOLL: return OTF2_REGION_ROLE_COLL_OTHER;
    case TR_K_WAIT: case TR_K_REQ: case TR_K_COMMC: case TR_K_REGION: return OTF2_REGION_ROLE_FUNCTION;
    }
    return OTF2_REGION_ROLE_POINT2POINT;
}

/* strings: 0 "", 1 "MPI_COMM_WORLD", 2 "machine", 3 "node", 4 "Master thread", 5 "MPI",
 * 10 + call: call names; S_HOST + h: host names; S_HOST + nranks + r: "MPI Rank r";
 * S_HOST + 2 nranks + i: communicator names */
#define S_HOST 1000u

static void tr_comm_name(const tr_gcomm_t *c, char *buf, size_t len)
{
    if (c->gid == 1) snprintf(buf, len, "MPI_COMM_WORLD");
    else if ((c->gid >> 60) == 2) snprintf(buf, len, "MPI_COMM_SELF (rank %llu)", (unsigned long long)(c->gid & 0xffffffffu));
    else if (c->gid >> 62) snprintf(buf, len, "communicator %llx (creation not seen)", (unsigned long long)c->gid);
    else
        snprintf(buf, len, "%s %llu.%llu", c->how, (unsigned long long)(c->gid >> 32) - 1,
                 (unsigned long long)(c->gid & 0xffffffffu));
}

void tr_otf2_property(tr_otf2_t *o, const char *name, const char *value)
{
    char key[128];
    snprintf(key, sizeof key, "MPITEMPO::%s", name);
    OTF2_Archive_SetProperty(o->a, key, value, true);
}

int tr_otf2_close(tr_otf2_t *o, double t_origin, double t_last, char *err)
{
    int bad = OTF2_Archive_CloseEvtFiles(o->a) != OTF2_SUCCESS;
    OTF2_Archive_OpenDefFiles(o->a);
    for (int r = 0; r < o->nranks; r++) {
        OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(o->a, (OTF2_LocationRef)r);
        if (dw) OTF2_Archive_CloseDefWriter(o->a, dw);
    }
    OTF2_Archive_CloseDefFiles(o->a);
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(o->a);
    if (!g) bad = 1;
    if (g) {
        OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000ull, 0, tr_ns(t_last, t_origin) + 1,
                                                  OTF2_UNDEFINED_TIMESTAMP);
        const char *fixed[] = {"", "MPI_COMM_WORLD", "machine", "node", "Master thread", "MPI"};
        for (int i = 0; i < 6; i++) OTF2_GlobalDefWriter_WriteString(g, (OTF2_StringRef)i, fixed[i]);
        for (int c = 0; c < TR_NALL; c++) OTF2_GlobalDefWriter_WriteString(g, 10 + (uint32_t)c, tr_calls[c].name);
        for (int u = 0; u < tr_region_ngnames; u++) /* user regions: strings below S_HOST (at most 512) */
            OTF2_GlobalDefWriter_WriteString(g, 10 + (uint32_t)TR_NALL + (uint32_t)u, tr_region_gnames[u]);
        int *hidx = calloc((size_t)o->nranks, sizeof *hidx);
        int nh = 0;
        for (int r = 0; r < o->nranks && hidx; r++) {
            int k = 0;
            while (k < r && strcmp(o->host[k], o->host[r])) k++;
            if (k == r) {
                hidx[r] = nh++;
                OTF2_GlobalDefWriter_WriteString(g, S_HOST + (uint32_t)hidx[r], o->host[r]);
            } else {
                hidx[r] = hidx[k];
            }
        }
        uint32_t s_rank = S_HOST + (uint32_t)o->nranks, s_comm = S_HOST + 2 * (uint32_t)o->nranks;
        for (int r = 0; r < o->nranks; r++) {
            char nm[64];
            snprintf(nm, sizeof nm, "MPI Rank %d", r);
            OTF2_GlobalDefWriter_WriteString(g, s_rank + (uint32_t)r, nm);
        }
        for (int i = 0; i < o->ncomms; i++) {
            char nm[128];
            tr_comm_name(&o->comms[o->order[i]], nm, sizeof nm);
            OTF2_GlobalDefWriter_WriteString(g, s_comm + (uint32_t)i, nm);
        }
        for (int c = 0; c < TR_NALL; c++) /* the pseudo calls too: references stay dense */
                OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)c, 10 + (uint32_t)c, 10 + (uint32_t)c, 0, tr_role(c),
                                                 tr_calls[c].kind == TR_K_REGION && c == TR_user_region
                                                     ? OTF2_PARADIGM_USER : OTF2_PARADIGM_MPI,
                                                 OTF2_REGION_FLAG_NONE, 0, 0, 0);
        for (int u = 0; u < tr_region_ngnames; u++)
            OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)(TR_NALL + u), 10 + (uint32_t)TR_NALL + (uint32_t)u,
                                             10 + (uint32_t)TR_NALL + (uint32_t)u, 0, OTF2_REGION_ROLE_FUNCTION,
                                             OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, 0, 0, 0);
        OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 2, 2, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
        for (int h = 0; h < nh; h++) OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1 + (uint32_t)h, S_HOST + (uint32_t)h, 3, 0);
        for (int r = 0; r < o->nranks; r++)
            OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, s_rank + (uint32_t)r,
                                                    OTF2_LOCATION_GROUP_TYPE_PROCESS,
                                                    hidx ? 1 + (uint32_t)hidx[r] : 0, OTF2_UNDEFINED_LOCATION_GROUP);
        for (int r = 0; r < o->nranks; r++)
            OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)r, 4, OTF2_LOCATION_TYPE_CPU_THREAD, o->nev[r],
                                               (OTF2_LocationGroupRef)r);
        /* groups: 0 every location (rank order); 1 + i: communicator i's (local) group; 1 + n + i: the
         * remote group of intercommunicator i. Members are world ranks (= positions in group 0). */
        uint64_t *mem = malloc(sizeof *mem * (size_t)o->nranks);
        if (mem) {
            for (int r = 0; r < o->nranks; r++) mem[r] = (uint64_t)r;
            OTF2_GlobalDefWriter_WriteGroup(g, 0, 0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, (uint32_t)o->nranks, mem);
            /* communicator k (in reference order): its group(s) get the next group references */
            uint32_t gnext = 1;
            for (int k = 0; k < o->ncomms; k++) {
                const tr_gcomm_t *c = &o->comms[o->order[k]];
                uint32_t gref[2] = {0, 0};
                for (int pass = 0; pass < 1 + c->inter; pass++) {
                    const int *m = pass ? c->rmembers : c->members;
                    int cnt = pass ? c->nr : c->n, ok = cnt <= o->nranks;
                    for (int q = 0; ok && q < cnt; q++) {
                        mem[q] = (uint64_t)m[q];
                        ok &= m[q] >= 0 && m[q] < o->nranks;
                    }
                    gref[pass] = gnext++;
                    OTF2_GlobalDefWriter_WriteGroup(g, gref[pass], 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                                    OTF2_GROUP_FLAG_NONE, ok ? (uint32_t)cnt : 0, mem);
                }
                int p = c->parent ? tr_cref(o, c->parent) : -1;
                OTF2_CommRef pref = p >= 0 && p < k ? (OTF2_CommRef)p : OTF2_UNDEFINED_COMM;
                if (c->inter)
                    OTF2_GlobalDefWriter_WriteInterComm(g, (OTF2_CommRef)k, s_comm + (uint32_t)k, gref[0], gref[1], pref,
                                                        OTF2_COMM_FLAG_NONE);
                else
                    OTF2_GlobalDefWriter_WriteComm(g, (OTF2_CommRef)k, s_comm + (uint32_t)k, gref[0], pref,
                                                   OTF2_COMM_FLAG_NONE);
            }
            free(mem);
        } else {
            bad = 1;
        }
        free(hidx);
        OTF2_Archive_CloseGlobalDefWriter(o->a, g);
    }
    if (OTF2_Archive_Close(o->a) != OTF2_SUCCESS) bad = 1;
    tr_otf2_free(o);
    return bad ? mt_fail(err, MT_EIO, "writing the OTF2 archive failed") : MT_OK;
}

#else /* no OTF2 */

const int tr_have_otf2 = 0;
tr_otf2_t *tr_otf2_open(const char *dir, int nranks, const tr_gcomm_t *comms, int ncomms, char *err)
{
    (void)dir, (void)nranks, (void)comms, (void)ncomms;
    mt_fail(err, MT_EUNSUP, "built without OTF2 (libotf2 not found at build time)");
    return NULL;
}
int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err)
{
    (void)o, (void)rank, (void)host, (void)ev, (void)n, (void)t_origin;
    return mt_fail(err, MT_EUNSUP, "built without OTF2");
}
void tr_otf2_property(tr_otf2_t *o, const char *name, const char *value) { (void)o, (void)name, (void)value; }
int tr_otf2_close(tr_otf2_t *o, double t_origin, double t_last, char *err)
{
    (void)o, (void)t_origin, (void)t_last;
    return mt_fail(err, MT_EUNSUP, "built without OTF2");
}
#endif
