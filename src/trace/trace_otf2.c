/* mpitempo: the OTF2 archive of a trace (the format of Score-P, Vampir and
 * Scalasca), written by rank 0 with OTF2's serial collective callbacks: one
 * location per rank, one region per MPI call, MPI point-to-point and
 * collective records on MPI_COMM_WORLD; timestamps are nanoseconds of the
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
    uint32_t world_key;
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

tr_otf2_t *tr_otf2_open(const char *dir, int nranks, char *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/otf2", dir);
    tr_otf2_t *o = calloc(1, sizeof *o);
    if (o) {
        o->nev = calloc((size_t)nranks, sizeof *o->nev);
        o->host = calloc((size_t)nranks, sizeof *o->host);
    }
    if (!o || !o->nev || !o->host) {
        if (o) free(o->nev), free(o->host);
        free(o);
        mt_fail(err, MT_ENOMEM, "out of memory");
        return NULL;
    }
    o->nranks = nranks;
    o->world_key = tr_commkey(MPI_COMM_WORLD);
    o->a = OTF2_Archive_Open(path, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
                             OTF2_COMPRESSION_NONE);
    if (!o->a) {
        mt_fail(err, MT_EIO, "cannot create the archive '%s/traces.otf2'", path);
        free(o->nev), free(o->host), free(o);
        return NULL;
    }
    OTF2_Archive_SetFlushCallbacks(o->a, &tr_flush_cb, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(o->a);
    OTF2_Archive_SetCreator(o->a, "mpitempo-trace " MT_VERSION);
    OTF2_Archive_SetDescription(o->a, "MPI calls on a synchronised global clock (mpitempo)");
    if (OTF2_Archive_OpenEvtFiles(o->a) != OTF2_SUCCESS) {
        mt_fail(err, MT_EIO, "cannot open the event files of '%s/traces.otf2'", path);
        OTF2_Archive_Close(o->a);
        free(o->nev), free(o->host), free(o);
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
    switch (call) {
    case TR_barrier: case TR_ibarrier: return OTF2_COLLECTIVE_OP_BARRIER;
    case TR_bcast: case TR_ibcast: return OTF2_COLLECTIVE_OP_BCAST;
    case TR_reduce: case TR_ireduce: return OTF2_COLLECTIVE_OP_REDUCE;
    case TR_allreduce: case TR_iallreduce: return OTF2_COLLECTIVE_OP_ALLREDUCE;
    case TR_gather: return OTF2_COLLECTIVE_OP_GATHER;
    case TR_gatherv: return OTF2_COLLECTIVE_OP_GATHERV;
    case TR_scatter: return OTF2_COLLECTIVE_OP_SCATTER;
    case TR_scatterv: return OTF2_COLLECTIVE_OP_SCATTERV;
    case TR_allgather: return OTF2_COLLECTIVE_OP_ALLGATHER;
    case TR_allgatherv: return OTF2_COLLECTIVE_OP_ALLGATHERV;
    case TR_alltoall: return OTF2_COLLECTIVE_OP_ALLTOALL;
    case TR_alltoallv: return OTF2_COLLECTIVE_OP_ALLTOALLV;
    case TR_reduce_scatter: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER;
    case TR_reduce_scatter_block: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK;
    case TR_scan: return OTF2_COLLECTIVE_OP_SCAN;
    case TR_exscan: return OTF2_COLLECTIVE_OP_EXSCAN;
    }
    return OTF2_COLLECTIVE_OP_BARRIER;
}

int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err)
{
    snprintf(o->host[rank], sizeof o->host[rank], "%s", host);
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(o->a, (OTF2_LocationRef)rank);
    if (!w) return mt_fail(err, MT_EIO, "no OTF2 event writer for rank %d", rank);
    uint64_t cnt = 0, last = 0;
    for (int64_t i = 0; i < n; i++) {
        const tr_out_ev_t *e = &ev[i];
        int kind = tr_calls[e->call].kind;
        uint64_t t0 = tr_ns(e->t0, t_origin), t1 = tr_ns(e->t1, t_origin);
        /* OTF2 wants non-decreasing timestamps per location */
        if (t0 < last) t0 = last;
        if (t1 < t0) t1 = t0;
        last = t1;
        int world = e->commkey == o->world_key;
        if (kind == TR_K_MSGRECV) { /* an MPI_Irecv completed (in the wait recorded just before) */
            if (world && e->peer >= 0) {
                OTF2_EvtWriter_MpiRecv(w, NULL, t1, (uint32_t)e->peer, 0, (uint32_t)e->rtag, (uint64_t)e->bytes);
                cnt++;
            }
            continue;
        }
        OTF2_EvtWriter_Enter(w, NULL, t0, (OTF2_RegionRef)e->call);
        cnt++;
        if (world && (kind == TR_K_SEND || kind == TR_K_ISEND || kind == TR_K_SENDRECV) && e->peer >= 0) {
            OTF2_EvtWriter_MpiSend(w, NULL, t0, (uint32_t)e->peer, 0, (uint32_t)e->tag, (uint64_t)e->bytes);
            cnt++;
        }
        int coll = kind == TR_K_A2A || kind == TR_K_12A || kind == TR_K_A21 || kind == TR_K_COLL;
        if (world && coll) {
            OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t0);
            OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t1, tr_collop(e->call), 0,
                                            e->root >= 0 ? (uint32_t)e->root : OTF2_UNDEFINED_UINT32,
                                            (uint64_t)e->bytes, (uint64_t)e->bytes);
            cnt += 2;
        }
        if (world && kind == TR_K_RECV && e->peer >= 0) {
            OTF2_EvtWriter_MpiRecv(w, NULL, t1, (uint32_t)e->peer, 0, (uint32_t)e->rtag, (uint64_t)e->bytes);
            cnt++;
        }
        if (world && kind == TR_K_SENDRECV && e->peer2 >= 0) {
            OTF2_EvtWriter_MpiRecv(w, NULL, t1, (uint32_t)e->peer2, 0, (uint32_t)e->rtag, (uint64_t)e->bytes);
            cnt++;
        }
        OTF2_EvtWriter_Leave(w, NULL, t1, (OTF2_RegionRef)e->call);
        cnt++;
    }
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
    case TR_K_COLL: return OTF2_REGION_ROLE_COLL_OTHER;
    case TR_K_WAIT: return OTF2_REGION_ROLE_FUNCTION;
    }
    return OTF2_REGION_ROLE_POINT2POINT;
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
        /* strings: 0 "", 1 "MPI_COMM_WORLD", 2 "machine", 3 "node", 4 "Master thread", 5 "MPI",
         * 10 + call: call names, 100 + host index: host names, 100 + nranks + r: "MPI Rank r" */
        const char *fixed[] = {"", "MPI_COMM_WORLD", "machine", "node", "Master thread", "MPI"};
        for (int i = 0; i < 6; i++) OTF2_GlobalDefWriter_WriteString(g, (OTF2_StringRef)i, fixed[i]);
        for (int c = 0; c < TR_NCALLS; c++) OTF2_GlobalDefWriter_WriteString(g, 10 + c, tr_calls[c].name);
        int *hidx = calloc((size_t)o->nranks, sizeof *hidx);
        int nh = 0;
        for (int r = 0; r < o->nranks && hidx; r++) {
            int k = 0;
            while (k < r && strcmp(o->host[k], o->host[r])) k++;
            if (k == r) {
                hidx[r] = nh++;
                OTF2_GlobalDefWriter_WriteString(g, 100 + (uint32_t)hidx[r], o->host[r]);
            } else {
                hidx[r] = hidx[k];
            }
        }
        for (int r = 0; r < o->nranks; r++) {
            char nm[64];
            snprintf(nm, sizeof nm, "MPI Rank %d", r);
            OTF2_GlobalDefWriter_WriteString(g, 100 + (uint32_t)o->nranks + (uint32_t)r, nm);
        }
        for (int c = 0; c < TR_NCALLS; c++)
            OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)c, 10 + c, 10 + c, 0, tr_role(c), OTF2_PARADIGM_MPI,
                                             OTF2_REGION_FLAG_NONE, 0, 0, 0);
        OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 2, 2, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
        for (int h = 0; h < nh; h++) OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1 + (uint32_t)h, 100 + (uint32_t)h, 3, 0);
        for (int r = 0; r < o->nranks; r++)
            OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, 100 + (uint32_t)o->nranks + (uint32_t)r,
                                                    OTF2_LOCATION_GROUP_TYPE_PROCESS,
                                                    hidx ? 1 + (uint32_t)hidx[r] : 0, OTF2_UNDEFINED_LOCATION_GROUP);
        for (int r = 0; r < o->nranks; r++)
            OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)r, 4, OTF2_LOCATION_TYPE_CPU_THREAD, o->nev[r],
                                               (OTF2_LocationGroupRef)r);
        uint64_t *mem = malloc(sizeof *mem * (size_t)o->nranks);
        if (mem) {
            for (int r = 0; r < o->nranks; r++) mem[r] = (uint64_t)r;
            OTF2_GlobalDefWriter_WriteGroup(g, 0, 0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, (uint32_t)o->nranks, mem);
            OTF2_GlobalDefWriter_WriteGroup(g, 1, 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, (uint32_t)o->nranks, mem);
            OTF2_GlobalDefWriter_WriteComm(g, 0, 1, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
            free(mem);
        } else {
            bad = 1;
        }
        free(hidx);
        OTF2_Archive_CloseGlobalDefWriter(o->a, g);
    }
    if (OTF2_Archive_Close(o->a) != OTF2_SUCCESS) bad = 1;
    free(o->nev);
    free(o->host);
    free(o);
    return bad ? mt_fail(err, MT_EIO, "writing the OTF2 archive failed") : MT_OK;
}

#else /* no OTF2 */

const int tr_have_otf2 = 0;
tr_otf2_t *tr_otf2_open(const char *dir, int nranks, char *err)
{
    (void)dir, (void)nranks;
    mt_fail(err, MT_EUNSUP, "built without OTF2 (libotf2 not found at build time)");
    return NULL;
}
int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err)
{
    (void)o, (void)rank, (void)host, (void)ev, (void)n, (void)t_origin;
    return mt_fail(err, MT_EUNSUP, "built without OTF2");
}
int tr_otf2_close(tr_otf2_t *o, double t_origin, double t_last, char *err)
{
    (void)o, (void)t_origin, (void)t_last;
    return mt_fail(err, MT_EUNSUP, "built without OTF2");
}
#endif
