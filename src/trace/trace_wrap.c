/* mpitempo: the PMPI wrappers of the tracer. Each one reads the timer, calls
 * the PMPI entry point, reads the timer again and fills one preallocated
 * record; nothing else happens on the application's path (no allocation, no
 * I/O, no MPI call but PMPI_Type_size). When the call is not selected or the
 * tracer is off, the wrapper is a plain forward. */
#include "trace/trace.h"

#include <stdlib.h>
#include <string.h>

static inline int64_t tr_now(void) { return tr.timer.t->now(); }

/* the next record, or NULL when the buffer is full in stop mode */
static int64_t tr_widx;
static inline tr_ev_t *tr_slot(void)
{
    if (tr.n >= tr.cap && !tr.wrap) {
        tr.dropped++;
        return NULL;
    }
    if (tr_widx == tr.cap) tr_widx = 0;
    tr.n++;
    return &tr.ev[tr_widx++];
}

tr_ev_t *tr_slot_ext(void) { return tr_slot(); }

static inline int64_t tr_bytes(int count, MPI_Datatype dt)
{
    int sz = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &sz) != MPI_SUCCESS) return 0;
    return (int64_t)count * sz;
}

static inline int64_t tr_vbytes(const int *counts, int n, MPI_Datatype dt)
{
    int64_t c = 0;
    if (counts)
        for (int i = 0; i < n; i++) c += counts[i];
    return c * tr_bytes(1, dt);
}

static inline int tr_comm_size(MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return n;
}

#define TR_REC(id) (tr.on && tr.sel[TR_##id])

static inline void tr_fill(tr_ev_t *e, int call, int64_t t0, int64_t t1, MPI_Comm comm, int64_t bytes,
                           int peer, int peer2, int root, int tag)
{
    e->t0 = t0;
    e->t1 = t1;
    e->bytes = bytes;
    e->commkey = tr_commkey(comm);
    e->peer = peer;
    e->peer2 = peer2;
    e->root = root;
    e->tag = tag;
    e->call = (int16_t)call;
    e->rtag15 = 0;
}

/* a collective: enter, PMPI call, exit, record */
#define TR_COLL(id, comm, rootarg, bytesexpr, pmpicall)                                                     \
    do {                                                                                                   \
        if (!TR_REC(id)) return pmpicall;                                                                  \
        int64_t t0_ = tr_now();                                                                            \
        int rc_ = pmpicall;                                                                                \
        int64_t t1_ = tr_now();                                                                            \
        tr_ev_t *e_ = tr_slot();                                                                           \
        if (e_) tr_fill(e_, TR_##id, t0_, t1_, comm, (bytesexpr), -1, -1,                                 \
                        (rootarg) >= 0 ? tr_world_rank(comm, rootarg) : -1, -1);                          \
        return rc_;                                                                                        \
    } while (0)

int MPI_Barrier(MPI_Comm comm) { TR_COLL(barrier, comm, -1, 0, PMPI_Barrier(comm)); }

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    TR_COLL(bcast, comm, root, tr_bytes(count, dt), PMPI_Bcast(buf, count, dt, root, comm));
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    TR_COLL(reduce, comm, root, tr_bytes(count, dt), PMPI_Reduce(sb, rb, count, dt, op, root, comm));
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(allreduce, comm, -1, tr_bytes(count, dt), PMPI_Allreduce(sb, rb, count, dt, op, comm));
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(gather, comm, root, tr_bytes(sc, st), PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(gatherv, comm, root, tr_bytes(sc, st), PMPI_Gatherv(sb, sc, st, rb, rcs, displs, rt, root, comm));
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm)
{
    TR_COLL(scatter, comm, root, tr_bytes(rc, rt), PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb, int rc,
                 MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(scatterv, comm, root, tr_bytes(rc, rt), PMPI_Scatterv(sb, scs, displs, st, rb, rc, rt, root, comm));
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(allgather, comm, -1, tr_bytes(sc, st), PMPI_Allgather(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(allgatherv, comm, -1, tr_bytes(sc, st), PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm));
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(alltoall, comm, -1, tr_bytes(sc, st) * tr_comm_size(comm), PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Alltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st, void *rb, const int rcs[],
                  const int rds[], MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(alltoallv, comm, -1, tr_vbytes(scs, tr_comm_size(comm), st),
            PMPI_Alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm));
}

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(reduce_scatter, comm, -1, tr_vbytes(rcs, tr_comm_size(comm), dt),
            PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm));
}

int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(reduce_scatter_block, comm, -1, tr_bytes(rc, dt) * tr_comm_size(comm),
            PMPI_Reduce_scatter_block(sb, rb, rc, dt, op, comm));
}

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(scan, comm, -1, tr_bytes(count, dt), PMPI_Scan(sb, rb, count, dt, op, comm));
}

int MPI_Exscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(exscan, comm, -1, tr_bytes(count, dt), PMPI_Exscan(sb, rb, count, dt, op, comm));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) { TR_COLL(ibarrier, comm, -1, 0, PMPI_Ibarrier(comm, req)); }

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    TR_COLL(ibcast, comm, root, tr_bytes(count, dt), PMPI_Ibcast(buf, count, dt, root, comm, req));
}

int MPI_Ireduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req)
{
    TR_COLL(ireduce, comm, root, tr_bytes(count, dt), PMPI_Ireduce(sb, rb, count, dt, op, root, comm, req));
}

int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    TR_COLL(iallreduce, comm, -1, tr_bytes(count, dt), PMPI_Iallreduce(sb, rb, count, dt, op, comm, req));
}

/* ---- point-to-point ---- */
static inline int tr_peer(MPI_Comm comm, int r)
{
    if (r == MPI_PROC_NULL) return -2;
    if (r == MPI_ANY_SOURCE || r < 0) return -1;
    return tr_world_rank(comm, r);
}

#define TR_SEND(id, pmpi)                                                                                  \
    int MPI_##pmpi(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)          \
    {                                                                                                      \
        if (!TR_REC(id)) return PMPI_##pmpi(buf, count, dt, dest, tag, comm);                              \
        int64_t t0 = tr_now();                                                                             \
        int rc = PMPI_##pmpi(buf, count, dt, dest, tag, comm);                                             \
        int64_t t1 = tr_now();                                                                             \
        tr_ev_t *e = tr_slot();                                                                            \
        if (e) tr_fill(e, TR_##id, t0, t1, comm, tr_bytes(count, dt), tr_peer(comm, dest), -1, -1, tag);  \
        return rc;                                                                                         \
    }
TR_SEND(send, Send)
TR_SEND(ssend, Ssend)
TR_SEND(bsend, Bsend)
TR_SEND(rsend, Rsend)

#define TR_ISEND(id, pmpi)                                                                                 \
    int MPI_##pmpi(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,          \
                   MPI_Request *req)                                                                       \
    {                                                                                                      \
        if (!TR_REC(id)) return PMPI_##pmpi(buf, count, dt, dest, tag, comm, req);                         \
        int64_t t0 = tr_now();                                                                             \
        int rc = PMPI_##pmpi(buf, count, dt, dest, tag, comm, req);                                        \
        int64_t t1 = tr_now();                                                                             \
        tr_ev_t *e = tr_slot();                                                                            \
        if (e) tr_fill(e, TR_##id, t0, t1, comm, tr_bytes(count, dt), tr_peer(comm, dest), -1, -1, tag);  \
        return rc;                                                                                         \
    }
TR_ISEND(isend, Isend)
TR_ISEND(issend, Issend)
TR_ISEND(ibsend, Ibsend)
TR_ISEND(irsend, Irsend)

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (!TR_REC(recv)) return PMPI_Recv(buf, count, dt, src, tag, comm, status);
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Recv(buf, count, dt, src, tag, comm, s);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) {
        int n = 0;
        PMPI_Get_count(s, dt, &n);
        int peer = src == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE);
        tr_fill(e, TR_recv, t0, t1, comm, n == MPI_UNDEFINED ? 0 : tr_bytes(n, dt), peer, -1, -1, s->MPI_TAG);
    }
    return rc;
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    if (!TR_REC(sendrecv)) return PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status);
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int r = PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, s);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) {
        tr_fill(e, TR_sendrecv, t0, t1, comm, tr_bytes(sc, st), tr_peer(comm, dest),
                src == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE), -1, stag);
        e->rtag15 = (int16_t)(s->MPI_TAG & 0x7fff); /* the received tag (low bits) */
    }
    return r;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src, int rtag,
                         MPI_Comm comm, MPI_Status *status)
{
    if (!TR_REC(sendrecv_replace)) return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, status);
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int r = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, s);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) {
        tr_fill(e, TR_sendrecv_replace, t0, t1, comm, tr_bytes(count, dt), tr_peer(comm, dest),
                src == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE), -1, stag);
        e->rtag15 = (int16_t)(s->MPI_TAG & 0x7fff);
    }
    return r;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    if (!TR_REC(irecv)) return PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    int64_t t0 = tr_now();
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, TR_irecv, t0, t1, comm, tr_bytes(count, dt), tr_peer(comm, src), -1, -1, tag);
    if (rc == MPI_SUCCESS && src != MPI_PROC_NULL) tr_req_post(*req, t0, tr_commkey(comm), comm);
    return rc;
}

/* ---- completion: the call itself (when selected) and the MPI_Irecv it completes ---- */
/* scratch copies of request arrays (single-threaded use; see docs/trace.md) */
static MPI_Request *tr_reqs;
static MPI_Status *tr_stats;
static int *tr_flags;
static int tr_nscratch;

static int tr_scratch(int n)
{
    if (n <= tr_nscratch) return 1;
    MPI_Request *r = realloc(tr_reqs, sizeof *r * (size_t)n);
    if (r) tr_reqs = r;
    MPI_Status *s = realloc(tr_stats, sizeof *s * (size_t)n);
    if (s) tr_stats = s;
    int *f = realloc(tr_flags, sizeof *f * (size_t)n);
    if (f) tr_flags = f;
    if (!r || !s || !f) return 0;
    tr_nscratch = n;
    return 1;
}

static inline void tr_rec_wait(int id, int64_t t0, int64_t t1)
{
    if (!tr.sel[id]) return;
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, id, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    int track = tr.on && tr_req_pending();
    if (!TR_REC(wait) && !track) return PMPI_Wait(req, status);
    MPI_Request before = *req;
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Wait(req, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_wait, t0, t1);
    if (track) tr_req_done_one(before, s, t1);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    int track = tr.on && tr_req_pending();
    if (!TR_REC(test) && !track) return PMPI_Test(req, flag, status);
    MPI_Request before = *req;
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Test(req, flag, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_test, t0, t1);
    if (track && *flag) tr_req_done_one(before, s, t1);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitall) && !track) return PMPI_Waitall(n, reqs, sts);
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Waitall(n, reqs, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_waitall, t0, t1);
    if (track)
        for (int i = 0; i < n; i++) tr_req_done_one(tr_reqs[i], &s[i], t1);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testall) && !track) return PMPI_Testall(n, reqs, flag, sts);
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Testall(n, reqs, flag, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_testall, t0, t1);
    if (track && *flag)
        for (int i = 0; i < n; i++) tr_req_done_one(tr_reqs[i], &s[i], t1);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *status)
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitany) && !track) return PMPI_Waitany(n, reqs, idx, status);
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    if (track) memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
    int64_t t0 = tr_now();
    int rc = PMPI_Waitany(n, reqs, idx, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_waitany, t0, t1);
    if (track && *idx != MPI_UNDEFINED && *idx >= 0 && *idx < n) tr_req_done_one(tr_reqs[*idx], s, t1);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *status)
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testany) && !track) return PMPI_Testany(n, reqs, idx, flag, status);
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    if (track) memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
    int64_t t0 = tr_now();
    int rc = PMPI_Testany(n, reqs, idx, flag, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_testany, t0, t1);
    if (track && *flag && *idx != MPI_UNDEFINED && *idx >= 0 && *idx < n) tr_req_done_one(tr_reqs[*idx], s, t1);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outn, int idx[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitsome) && !track) return PMPI_Waitsome(n, reqs, outn, idx, sts);
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Waitsome(n, reqs, outn, idx, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_waitsome, t0, t1);
    if (track && *outn != MPI_UNDEFINED)
        for (int k = 0; k < *outn; k++)
            if (idx[k] >= 0 && idx[k] < n) tr_req_done_one(tr_reqs[idx[k]], &s[k], t1);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outn, int idx[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testsome) && !track) return PMPI_Testsome(n, reqs, outn, idx, sts);
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Testsome(n, reqs, outn, idx, s);
    int64_t t1 = tr_now();
    tr_rec_wait(TR_testsome, t0, t1);
    if (track && *outn != MPI_UNDEFINED)
        for (int k = 0; k < *outn; k++)
            if (idx[k] >= 0 && idx[k] < n) tr_req_done_one(tr_reqs[idx[k]], &s[k], t1);
    return rc;
}
