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

#define TR_REC(id) (tr.on && tr.sel[TR_##id])
#define TR_NOROOT INT32_MIN

int64_t tr_unsel[TR_NCALLS];

/* not recorded (not selected, or the tracer is off): forward; counted while the tracer records */
#define TR_SKIP(id, pmpicall)                                                                              \
    do {                                                                                                   \
        if (!TR_REC(id)) {                                                                                 \
            if (tr.on) tr_unsel[TR_##id]++;                                                                \
            return pmpicall;                                                                               \
        }                                                                                                  \
    } while (0)

static inline void tr_fill_(tr_ev_t *e, int call, int64_t t0, int64_t t1, MPI_Comm comm, int64_t bytes,
                           int peer, int peer2, int root, int tag)
{
    e->t0 = t0;
    e->t1 = t1;
    e->bytes = bytes;
    e->rbytes = 0;
    e->comm = comm == MPI_COMM_NULL ? 0 : tr_comm_idx(comm);
    e->peer = peer;
    e->peer2 = peer2;
    e->root = root;
    e->tag = tag;
    e->call = (int16_t)call;
    e->rtag15 = 0;
    e->req = 0;
    e->orig = -1;
    e->flags = 0;
}

/* every record of a wrapper carries its call site: the wrapper's return address, read where the
 * macro expands (in the exported wrapper, or in a helper always inlined into it) */
#define TR_SITE() ((uint64_t)(uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))
#define tr_fill(e, ...) (tr_fill_((e), __VA_ARGS__), (void)((e)->site = TR_SITE()))

static inline int tr_rootw(MPI_Comm comm, int root) { return root == TR_NOROOT ? -1 : tr_root_world(comm, root); }

/* a blocking collective: enter, PMPI call, exit, record; srexpr: the bytes sent and received
 * (tr_sr_t, trace_bytes.c), computed after the exit */
#define TR_COLL(id, comm, rootarg, srexpr, pmpicall)                                                        \
    do {                                                                                                   \
        TR_SKIP(id, pmpicall);                                                                             \
        int64_t t0_ = tr_now();                                                                            \
        int rc_ = pmpicall;                                                                                \
        int64_t t1_ = tr_now();                                                                            \
        tr_ev_t *e_ = tr_slot();                                                                           \
        if (e_) {                                                                                          \
            tr_sr_t sr_ = (srexpr);                                                                        \
            tr_fill(e_, TR_##id, t0_, t1_, comm, sr_.s, -1, -1, tr_rootw(comm, rootarg), -1);             \
            e_->rbytes = sr_.r;                                                                            \
        }                                                                                                  \
        return rc_;                                                                                        \
    } while (0)

/* a non-blocking collective: the initiation with its request id; completed in a wait or test */
#define TR_ICOLL(id, comm, rootarg, srexpr, req, pmpicall)                                                  \
    do {                                                                                                   \
        TR_SKIP(id, pmpicall);                                                                             \
        int64_t t0_ = tr_now();                                                                            \
        int rc_ = pmpicall;                                                                                \
        int64_t t1_ = tr_now();                                                                            \
        tr_sr_t b_ = (srexpr);                                                                             \
        int root_ = tr_rootw(comm, rootarg);                                                               \
        uint32_t id_ = rc_ == MPI_SUCCESS ? tr_req_post(*(req), TR_##id, t0_, comm, -1, -1, b_.s, root_, 0) : 0; \
        if (id_) tr_req_set_rbytes(id_, b_.r);                                                             \
        tr_ev_t *e_ = tr_slot();                                                                           \
        if (e_) {                                                                                          \
            tr_fill(e_, TR_##id, t0_, t1_, comm, b_.s, -1, -1, root_, -1);                                 \
            e_->req = id_;                                                                                 \
            e_->rbytes = b_.r;                                                                             \
        }                                                                                                  \
        return rc_;                                                                                        \
    } while (0)

int MPI_Barrier(MPI_Comm comm) { TR_COLL(barrier, comm, TR_NOROOT, ((tr_sr_t){0, 0}), PMPI_Barrier(comm)); }

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    TR_COLL(bcast, comm, root, tr_cb_bcast(count, dt, root, comm), PMPI_Bcast(buf, count, dt, root, comm));
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    TR_COLL(reduce, comm, root, tr_cb_reduce(sb, count, dt, root, comm), PMPI_Reduce(sb, rb, count, dt, op, root, comm));
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(allreduce, comm, TR_NOROOT, tr_cb_allreduce(sb, count, dt, comm), PMPI_Allreduce(sb, rb, count, dt, op, comm));
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(gather, comm, root, tr_cb_gather(sb, sc, st, rc, rt, root, comm), PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(gatherv, comm, root, tr_cb_gatherv(sb, sc, st, rcs, rt, root, comm), PMPI_Gatherv(sb, sc, st, rb, rcs, displs, rt, root, comm));
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm)
{
    TR_COLL(scatter, comm, root, tr_cb_scatter(sc, st, rb, rc, rt, root, comm), PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb, int rc,
                 MPI_Datatype rt, int root, MPI_Comm comm)
{
    TR_COLL(scatterv, comm, root, tr_cb_scatterv(scs, st, rb, rc, rt, root, comm), PMPI_Scatterv(sb, scs, displs, st, rb, rc, rt, root, comm));
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(allgather, comm, TR_NOROOT, tr_cb_alltoall(sb, sc, st, rc, rt, comm), PMPI_Allgather(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(allgatherv, comm, TR_NOROOT, tr_cb_allgatherv(sb, sc, st, rcs, rt, comm), PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm));
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(alltoall, comm, TR_NOROOT, tr_cb_alltoall(sb, sc, st, rc, rt, comm),
            PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Alltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st, void *rb, const int rcs[],
                  const int rds[], MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(alltoallv, comm, TR_NOROOT, tr_cb_alltoallv(sb, scs, st, rcs, rt, comm),
            PMPI_Alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm));
}

int MPI_Alltoallw(const void *sb, const int scs[], const int sds[], const MPI_Datatype sts[], void *rb,
                  const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm comm)
{
    TR_COLL(alltoallw, comm, TR_NOROOT, tr_cb_alltoallw(sb, scs, sts, rcs, rts, comm),
            PMPI_Alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm));
}

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(reduce_scatter, comm, TR_NOROOT, tr_cb_reduce_scatter(sb, rcs, dt, comm),
            PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm));
}

int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(reduce_scatter_block, comm, TR_NOROOT, tr_cb_reduce_scatter_block(sb, rc, dt, comm),
            PMPI_Reduce_scatter_block(sb, rb, rc, dt, op, comm));
}

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(scan, comm, TR_NOROOT, tr_cb_scan(sb, count, dt, comm, 0), PMPI_Scan(sb, rb, count, dt, op, comm));
}

int MPI_Exscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    TR_COLL(exscan, comm, TR_NOROOT, tr_cb_scan(sb, count, dt, comm, 1), PMPI_Exscan(sb, rb, count, dt, op, comm));
}

/* neighbourhood collectives: bytes are those sent to one neighbour (the topology is not read on
 * the application's path) */
int MPI_Neighbor_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(neighbor_allgather, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, rc, NULL, NULL, rt, comm), PMPI_Neighbor_allgather(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Neighbor_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                            MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(neighbor_allgatherv, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, 0, rcs, NULL, rt, comm),
            PMPI_Neighbor_allgatherv(sb, sc, st, rb, rcs, displs, rt, comm));
}

int MPI_Neighbor_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(neighbor_alltoall, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, rc, NULL, NULL, rt, comm), PMPI_Neighbor_alltoall(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Neighbor_alltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st, void *rb,
                           const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm comm)
{
    TR_COLL(neighbor_alltoallv, comm, TR_NOROOT, tr_cb_neighbor(0, scs, NULL, st, 0, rcs, NULL, rt, comm),
            PMPI_Neighbor_alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm));
}

int MPI_Neighbor_alltoallw(const void *sb, const int scs[], const MPI_Aint sds[], const MPI_Datatype sts[], void *rb,
                           const int rcs[], const MPI_Aint rds[], const MPI_Datatype rts[], MPI_Comm comm)
{
    TR_COLL(neighbor_alltoallw, comm, TR_NOROOT, tr_cb_neighbor(0, scs, sts, MPI_DATATYPE_NULL, 0, rcs, rts, MPI_DATATYPE_NULL, comm),
            PMPI_Neighbor_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm));
}

/* ---- non-blocking collectives ---- */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) { TR_ICOLL(ibarrier, comm, TR_NOROOT, ((tr_sr_t){0, 0}), req, PMPI_Ibarrier(comm, req)); }

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ibcast, comm, root, tr_cb_bcast(count, dt, root, comm), req, PMPI_Ibcast(buf, count, dt, root, comm, req));
}

int MPI_Ireduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req)
{
    TR_ICOLL(ireduce, comm, root, tr_cb_reduce(sb, count, dt, root, comm), req, PMPI_Ireduce(sb, rb, count, dt, op, root, comm, req));
}

int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    TR_ICOLL(iallreduce, comm, TR_NOROOT, tr_cb_allreduce(sb, count, dt, comm), req, PMPI_Iallreduce(sb, rb, count, dt, op, comm, req));
}

int MPI_Igather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                MPI_Request *req)
{
    TR_ICOLL(igather, comm, root, tr_cb_gather(sb, sc, st, rc, rt, root, comm), req, PMPI_Igather(sb, sc, st, rb, rc, rt, root, comm, req));
}

int MPI_Igatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                 MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(igatherv, comm, root, tr_cb_gatherv(sb, sc, st, rcs, rt, root, comm), req,
             PMPI_Igatherv(sb, sc, st, rb, rcs, displs, rt, root, comm, req));
}

int MPI_Iscatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                 MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(iscatter, comm, root, tr_cb_scatter(sc, st, rb, rc, rt, root, comm), req, PMPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, req));
}

int MPI_Iscatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb, int rc,
                  MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(iscatterv, comm, root, tr_cb_scatterv(scs, st, rb, rc, rt, root, comm), req,
             PMPI_Iscatterv(sb, scs, displs, st, rb, rc, rt, root, comm, req));
}

int MPI_Iallgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *req)
{
    TR_ICOLL(iallgather, comm, TR_NOROOT, tr_cb_alltoall(sb, sc, st, rc, rt, comm), req, PMPI_Iallgather(sb, sc, st, rb, rc, rt, comm, req));
}

int MPI_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                    MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(iallgatherv, comm, TR_NOROOT, tr_cb_allgatherv(sb, sc, st, rcs, rt, comm), req,
             PMPI_Iallgatherv(sb, sc, st, rb, rcs, displs, rt, comm, req));
}

int MPI_Ialltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request *req)
{
    TR_ICOLL(ialltoall, comm, TR_NOROOT, tr_cb_alltoall(sb, sc, st, rc, rt, comm), req,
             PMPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, req));
}

int MPI_Ialltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st, void *rb, const int rcs[],
                   const int rds[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ialltoallv, comm, TR_NOROOT, tr_cb_alltoallv(sb, scs, st, rcs, rt, comm), req,
             PMPI_Ialltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm, req));
}

int MPI_Ialltoallw(const void *sb, const int scs[], const int sds[], const MPI_Datatype sts[], void *rb,
                   const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ialltoallw, comm, TR_NOROOT, tr_cb_alltoallw(sb, scs, sts, rcs, rts, comm), req,
             PMPI_Ialltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req));
}

int MPI_Ireduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                        MPI_Request *req)
{
    TR_ICOLL(ireduce_scatter, comm, TR_NOROOT, tr_cb_reduce_scatter(sb, rcs, dt, comm), req,
             PMPI_Ireduce_scatter(sb, rb, rcs, dt, op, comm, req));
}

int MPI_Ireduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req)
{
    TR_ICOLL(ireduce_scatter_block, comm, TR_NOROOT, tr_cb_reduce_scatter_block(sb, rc, dt, comm), req,
             PMPI_Ireduce_scatter_block(sb, rb, rc, dt, op, comm, req));
}

int MPI_Iscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(iscan, comm, TR_NOROOT, tr_cb_scan(sb, count, dt, comm, 0), req, PMPI_Iscan(sb, rb, count, dt, op, comm, req));
}

int MPI_Iexscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(iexscan, comm, TR_NOROOT, tr_cb_scan(sb, count, dt, comm, 1), req, PMPI_Iexscan(sb, rb, count, dt, op, comm, req));
}

int MPI_Ineighbor_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ineighbor_allgather, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, rc, NULL, NULL, rt, comm), req,
             PMPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, req));
}

int MPI_Ineighbor_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                             MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ineighbor_allgatherv, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, 0, rcs, NULL, rt, comm), req,
             PMPI_Ineighbor_allgatherv(sb, sc, st, rb, rcs, displs, rt, comm, req));
}

int MPI_Ineighbor_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                           MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ineighbor_alltoall, comm, TR_NOROOT, tr_cb_neighbor(sc, NULL, NULL, st, rc, NULL, NULL, rt, comm), req,
             PMPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, req));
}

int MPI_Ineighbor_alltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st, void *rb,
                            const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    TR_ICOLL(ineighbor_alltoallv, comm, TR_NOROOT, tr_cb_neighbor(0, scs, NULL, st, 0, rcs, NULL, rt, comm), req,
             PMPI_Ineighbor_alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm, req));
}

int MPI_Ineighbor_alltoallw(const void *sb, const int scs[], const MPI_Aint sds[], const MPI_Datatype sts[],
                            void *rb, const int rcs[], const MPI_Aint rds[], const MPI_Datatype rts[], MPI_Comm comm,
                            MPI_Request *req)
{
    TR_ICOLL(ineighbor_alltoallw, comm, TR_NOROOT, tr_cb_neighbor(0, scs, sts, MPI_DATATYPE_NULL, 0, rcs, rts, MPI_DATATYPE_NULL, comm), req,
             PMPI_Ineighbor_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req));
}

/* ---- point-to-point ---- */
/* the bytes a completed receive got (0 from MPI_PROC_NULL) */
static inline int64_t tr_recvd(const MPI_Status *s, int src)
{
    int nb = 0;
    if (src == MPI_PROC_NULL || PMPI_Get_count(s, MPI_BYTE, &nb) != MPI_SUCCESS || nb == MPI_UNDEFINED) return 0;
    return nb;
}

static inline int tr_peer(MPI_Comm comm, int r)
{
    if (r == MPI_PROC_NULL) return -2;
    if (r == MPI_ANY_SOURCE || r < 0) return -1;
    return tr_world_rank(comm, r);
}

#define TR_SEND(id, pmpi)                                                                                  \
    int MPI_##pmpi(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)          \
    {                                                                                                      \
        TR_SKIP(id, PMPI_##pmpi(buf, count, dt, dest, tag, comm));                                         \
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

/* a posted send or receive request: an Isend (persist 0: the message is recorded now) or a
 * persistent request (persist 1: no message until MPI_Start) */
#define TR_POST(id, pmpi, cbuf, persist)                                                                   \
    int MPI_##pmpi(cbuf void *buf, int count, MPI_Datatype dt, int peer_, int tag, MPI_Comm comm,          \
                   MPI_Request *req)                                                                       \
    {                                                                                                      \
        TR_SKIP(id, PMPI_##pmpi(buf, count, dt, peer_, tag, comm, req));                                   \
        int64_t t0 = tr_now();                                                                             \
        int rc = PMPI_##pmpi(buf, count, dt, peer_, tag, comm, req);                                       \
        int64_t t1 = tr_now();                                                                             \
        int64_t b = tr_bytes(count, dt);                                                                   \
        int peer = tr_peer(comm, peer_);                                                                   \
        uint32_t id = rc == MPI_SUCCESS && peer_ != MPI_PROC_NULL                                          \
                          ? tr_req_post(*req, TR_##id, t0, comm, peer, tag, b, -1, persist) : 0;           \
        tr_ev_t *e = tr_slot();                                                                            \
        if (e) {                                                                                           \
            tr_fill(e, TR_##id, t0, t1, comm, b, peer, -1, -1, tag);                                       \
            e->req = id;                                                                                   \
        }                                                                                                  \
        return rc;                                                                                         \
    }
#define TR_ISEND(id, pmpi) TR_POST(id, pmpi, const, 0)
TR_ISEND(isend, Isend)
TR_ISEND(issend, Issend)
TR_ISEND(ibsend, Ibsend)
TR_ISEND(irsend, Irsend)

/* persistent requests */
#define TR_INIT(id, pmpi, cbuf) TR_POST(id, pmpi, cbuf, 1)
TR_INIT(send_init, Send_init, const)
TR_INIT(ssend_init, Ssend_init, const)
TR_INIT(bsend_init, Bsend_init, const)
TR_INIT(rsend_init, Rsend_init, const)
TR_INIT(recv_init, Recv_init, )

int MPI_Start(MPI_Request *req)
{
    int rec = TR_REC(start);
    if (!rec && !(tr.on && tr_req_pending())) {
        if (tr.on) tr_unsel[TR_start]++;
        return PMPI_Start(req);
    }
    if (!rec) tr_unsel[TR_start]++;
    MPI_Request before = *req;
    int64_t t0 = tr_now();
    int rc = PMPI_Start(req);
    int64_t t1 = tr_now();
    if (rec) {
        tr_ev_t *e = tr_slot();
        if (e) tr_fill(e, TR_start, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    }
    if (rc == MPI_SUCCESS) tr_req_start(before, t0, t1, rec);
    return rc;
}

int MPI_Startall(int n, MPI_Request reqs[])
{
    int rec = TR_REC(startall);
    if (!rec && !(tr.on && tr_req_pending())) {
        if (tr.on) tr_unsel[TR_startall]++;
        return PMPI_Startall(n, reqs);
    }
    if (!rec) tr_unsel[TR_startall]++;
    int64_t t0 = tr_now();
    int rc = PMPI_Startall(n, reqs);
    int64_t t1 = tr_now();
    if (rec) {
        tr_ev_t *e = tr_slot();
        if (e) tr_fill(e, TR_startall, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    }
    if (rc == MPI_SUCCESS) /* persistent handles do not change at MPI_Start */
        for (int i = 0; i < n; i++) tr_req_start(reqs[i], t0, t1, rec);
    return rc;
}

/* a completed receive: the matched source, tag and size */
static inline __attribute__((always_inline)) void tr_fill_recv(tr_ev_t *e, int call, int64_t t0, int64_t t1,
                                                               MPI_Comm comm, int src, MPI_Datatype dt,
                                                               const MPI_Status *s)
{
    int n = 0;
    PMPI_Get_count(s, dt, &n);
    int peer = src == MPI_PROC_NULL || s->MPI_SOURCE == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE);
    tr_fill(e, call, t0, t1, comm, n == MPI_UNDEFINED ? 0 : tr_bytes(n, dt), peer, -1, -1, s->MPI_TAG);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    TR_SKIP(recv, PMPI_Recv(buf, count, dt, src, tag, comm, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Recv(buf, count, dt, src, tag, comm, s);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) tr_fill_recv(e, TR_recv, t0, t1, comm, src, dt, s);
    return rc;
}

/* matched probes and receives: the message handle carries no communicator; the probe's is kept */
static MPI_Comm tr_mcomm = MPI_COMM_NULL;

int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *status)
{
    TR_SKIP(mrecv, PMPI_Mrecv(buf, count, dt, msg, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int noproc = *msg == MPI_MESSAGE_NO_PROC;
    int64_t t0 = tr_now();
    int rc = PMPI_Mrecv(buf, count, dt, msg, s);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) tr_fill_recv(e, TR_mrecv, t0, t1, tr_mcomm, noproc ? MPI_PROC_NULL : 0, dt, s);
    return rc;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
    TR_SKIP(imrecv, PMPI_Imrecv(buf, count, dt, msg, req));
    int noproc = *msg == MPI_MESSAGE_NO_PROC;
    int64_t t0 = tr_now();
    int rc = PMPI_Imrecv(buf, count, dt, msg, req);
    int64_t t1 = tr_now();
    uint32_t id = rc == MPI_SUCCESS && !noproc ? tr_req_post(*req, TR_imrecv, t0, tr_mcomm, -1, -1, 0, -1, 0) : 0;
    tr_ev_t *e = tr_slot();
    if (e) {
        tr_fill(e, TR_imrecv, t0, t1, tr_mcomm, tr_bytes(count, dt), noproc ? -2 : -1, -1, -1, -1);
        e->req = id;
    }
    return rc;
}

/* probes: recorded with the matched message when one was found */
#define TR_PROBE_REC(id, found)                                                                            \
    do {                                                                                                   \
        tr_ev_t *e = tr_slot();                                                                            \
        if (!e) break;                                                                                     \
        if (found) tr_fill_recv(e, TR_##id, t0, t1, comm, src, MPI_BYTE, s);                               \
        else tr_fill(e, TR_##id, t0, t1, comm, 0, -1, -1, -1, -1);                                         \
    } while (0)

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    TR_SKIP(probe, PMPI_Probe(src, tag, comm, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Probe(src, tag, comm, s);
    int64_t t1 = tr_now();
    TR_PROBE_REC(probe, rc == MPI_SUCCESS);
    return rc;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    TR_SKIP(iprobe, PMPI_Iprobe(src, tag, comm, flag, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Iprobe(src, tag, comm, flag, s);
    int64_t t1 = tr_now();
    TR_PROBE_REC(iprobe, rc == MPI_SUCCESS && *flag);
    return rc;
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status)
{
    if (tr.on) tr_mcomm = comm;
    TR_SKIP(mprobe, PMPI_Mprobe(src, tag, comm, msg, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Mprobe(src, tag, comm, msg, s);
    int64_t t1 = tr_now();
    TR_PROBE_REC(mprobe, rc == MPI_SUCCESS);
    return rc;
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg, MPI_Status *status)
{
    if (tr.on) tr_mcomm = comm;
    TR_SKIP(improbe, PMPI_Improbe(src, tag, comm, flag, msg, status));
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Improbe(src, tag, comm, flag, msg, s);
    int64_t t1 = tr_now();
    TR_PROBE_REC(improbe, rc == MPI_SUCCESS && *flag);
    return rc;
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    TR_SKIP(sendrecv, PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status));
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
        e->rbytes = tr_recvd(s, src);   /* the received size (the send size may differ) */
    }
    return r;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src, int rtag,
                         MPI_Comm comm, MPI_Status *status)
{
    TR_SKIP(sendrecv_replace, PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, status));
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
        e->rbytes = tr_recvd(s, src);   /* the received size (the send size may differ) */
    }
    return r;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    TR_SKIP(irecv, PMPI_Irecv(buf, count, dt, src, tag, comm, req));
    int64_t t0 = tr_now();
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    int64_t t1 = tr_now();
    int peer = tr_peer(comm, src);
    uint32_t id = rc == MPI_SUCCESS && src != MPI_PROC_NULL
                      ? tr_req_post(*req, TR_irecv, t0, comm, peer, tag, tr_bytes(count, dt), -1, 0) : 0;
    tr_ev_t *e = tr_slot();
    if (e) {
        tr_fill(e, TR_irecv, t0, t1, comm, tr_bytes(count, dt), peer, -1, -1, tag);
        e->req = id;
    }
    return rc;
}

/* ---- communicators: the creation is agreed by the members (trace_core.c), then recorded ---- */
#define TR_COMMC(id, parent, newp, pmpicall)                                                               \
    do {                                                                                                   \
        if (!tr.on) return pmpicall;                                                                       \
        int rec_ = tr.sel[TR_##id];                                                                        \
        if (!rec_) tr_unsel[TR_##id]++;                                                                    \
        int64_t t0_ = tr_now();                                                                            \
        int rc_ = pmpicall;                                                                                \
        int64_t t1_ = tr_now();                                                                            \
        if (rc_ == MPI_SUCCESS) tr_comm_created(*(newp), parent, TR_##id);                                 \
        if (rec_) {                                                                                        \
            tr_ev_t *e_ = tr_slot();                                                                       \
            if (e_) tr_fill(e_, TR_##id, t0_, t1_, parent, 0, -1, -1, -1, -1);                             \
        }                                                                                                  \
        return rc_;                                                                                        \
    } while (0)

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) { TR_COMMC(comm_dup, comm, newcomm, PMPI_Comm_dup(comm, newcomm)); }

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    TR_COMMC(comm_dup_with_info, comm, newcomm, PMPI_Comm_dup_with_info(comm, info, newcomm));
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    TR_COMMC(comm_split, comm, newcomm, PMPI_Comm_split(comm, color, key, newcomm));
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    TR_COMMC(comm_split_type, comm, newcomm, PMPI_Comm_split_type(comm, type, key, info, newcomm));
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    TR_COMMC(comm_create, comm, newcomm, PMPI_Comm_create(comm, group, newcomm));
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    TR_COMMC(comm_create_group, comm, newcomm, PMPI_Comm_create_group(comm, group, tag, newcomm));
}

int MPI_Intercomm_create(MPI_Comm local, int lleader, MPI_Comm peer, int rleader, int tag, MPI_Comm *newcomm)
{
    TR_COMMC(intercomm_create, peer, newcomm, PMPI_Intercomm_create(local, lleader, peer, rleader, tag, newcomm));
}

int MPI_Intercomm_merge(MPI_Comm inter, int high, MPI_Comm *newcomm)
{
    TR_COMMC(intercomm_merge, inter, newcomm, PMPI_Intercomm_merge(inter, high, newcomm));
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *newcomm)
{
    TR_COMMC(cart_create, comm, newcomm, PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *newcomm)
{
    TR_COMMC(cart_sub, comm, newcomm, PMPI_Cart_sub(comm, remain, newcomm));
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *newcomm)
{
    TR_COMMC(graph_create, comm, newcomm, PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm));
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[], const int dests[],
                          const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    TR_COMMC(dist_graph_create, comm, newcomm,
             PMPI_Dist_graph_create(comm, n, sources, degrees, dests, weights, info, reorder, newcomm));
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indeg, const int sources[], const int sweights[], int outdeg,
                                   const int dests[], const int dweights[], MPI_Info info, int reorder,
                                   MPI_Comm *newcomm)
{
    TR_COMMC(dist_graph_create_adjacent, comm, newcomm,
             PMPI_Dist_graph_create_adjacent(comm, indeg, sources, sweights, outdeg, dests, dweights, info, reorder,
                                             newcomm));
}

/* a freed communicator's handle can come back for another one: its entry is closed */
int MPI_Comm_free(MPI_Comm *comm)
{
    if (!tr.on) {
        if (tr.enabled) tr_comm_freed(*comm);
        return PMPI_Comm_free(comm);
    }
    int rec = tr.sel[TR_comm_free];
    if (!rec) tr_unsel[TR_comm_free]++;
    MPI_Comm c = *comm;
    tr_ev_t *e = NULL;
    int64_t t0 = tr_now();
    if (rec && (e = tr_slot())) tr_fill(e, TR_comm_free, t0, t0, c, 0, -1, -1, -1, -1);
    int rc = PMPI_Comm_free(comm);
    if (e) e->t1 = tr_now();
    tr_comm_freed(c);
    return rc;
}

/* ---- completion: the call itself (when selected) and the tracked requests it completes ---- */
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

/* the wait or test itself; 1 when recorded (the completions that follow are attached to it) */
static inline __attribute__((always_inline)) int tr_rec_wait(int id, int64_t t0, int64_t t1)
{
    if (!tr.sel[id]) {
        tr_unsel[id]++;
        return 0;
    }
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, id, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    return e != NULL;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    int track = tr.on && tr_req_pending();
    if (!TR_REC(wait) && !track) {
        if (tr.on) tr_unsel[TR_wait]++;
        return PMPI_Wait(req, status);
    }
    MPI_Request before = *req;
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Wait(req, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_wait, t0, t1);
    if (track) tr_req_done_one(before, s, t1, att);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    int track = tr.on && tr_req_pending();
    if (!TR_REC(test) && !track) {
        if (tr.on) tr_unsel[TR_test]++;
        return PMPI_Test(req, flag, status);
    }
    MPI_Request before = *req;
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    int64_t t0 = tr_now();
    int rc = PMPI_Test(req, flag, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_test, t0, t1);
    if (track && *flag) tr_req_done_one(before, s, t1, att);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitall) && !track) {
        if (tr.on) tr_unsel[TR_waitall]++;
        return PMPI_Waitall(n, reqs, sts);
    }
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Waitall(n, reqs, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_waitall, t0, t1);
    if (track)
        for (int i = 0; i < n; i++) tr_req_done_one(tr_reqs[i], &s[i], t1, att);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testall) && !track) {
        if (tr.on) tr_unsel[TR_testall]++;
        return PMPI_Testall(n, reqs, flag, sts);
    }
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Testall(n, reqs, flag, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_testall, t0, t1);
    if (track && *flag)
        for (int i = 0; i < n; i++) tr_req_done_one(tr_reqs[i], &s[i], t1, att);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *status)
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitany) && !track) {
        if (tr.on) tr_unsel[TR_waitany]++;
        return PMPI_Waitany(n, reqs, idx, status);
    }
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    if (track) memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
    int64_t t0 = tr_now();
    int rc = PMPI_Waitany(n, reqs, idx, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_waitany, t0, t1);
    if (track && *idx != MPI_UNDEFINED && *idx >= 0 && *idx < n) tr_req_done_one(tr_reqs[*idx], s, t1, att);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *status)
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testany) && !track) {
        if (tr.on) tr_unsel[TR_testany]++;
        return PMPI_Testany(n, reqs, idx, flag, status);
    }
    MPI_Status own;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own : status;
    if (track) memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
    int64_t t0 = tr_now();
    int rc = PMPI_Testany(n, reqs, idx, flag, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_testany, t0, t1);
    if (track && *flag && *idx != MPI_UNDEFINED && *idx >= 0 && *idx < n) tr_req_done_one(tr_reqs[*idx], s, t1, att);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outn, int idx[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(waitsome) && !track) {
        if (tr.on) tr_unsel[TR_waitsome]++;
        return PMPI_Waitsome(n, reqs, outn, idx, sts);
    }
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Waitsome(n, reqs, outn, idx, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_waitsome, t0, t1);
    if (track && *outn != MPI_UNDEFINED)
        for (int k = 0; k < *outn; k++)
            if (idx[k] >= 0 && idx[k] < n) tr_req_done_one(tr_reqs[idx[k]], &s[k], t1, att);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outn, int idx[], MPI_Status sts[])
{
    int track = tr.on && tr_req_pending() && n > 0 && tr_scratch(n);
    if (!TR_REC(testsome) && !track) {
        if (tr.on) tr_unsel[TR_testsome]++;
        return PMPI_Testsome(n, reqs, outn, idx, sts);
    }
    MPI_Status *s = sts;
    if (track) {
        memcpy(tr_reqs, reqs, sizeof *reqs * (size_t)n);
        if (sts == MPI_STATUSES_IGNORE) s = tr_stats;
    }
    int64_t t0 = tr_now();
    int rc = PMPI_Testsome(n, reqs, outn, idx, s);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_testsome, t0, t1);
    if (track && *outn != MPI_UNDEFINED)
        for (int k = 0; k < *outn; k++)
            if (idx[k] >= 0 && idx[k] < n) tr_req_done_one(tr_reqs[idx[k]], &s[k], t1, att);
    return rc;
}

int MPI_Request_free(MPI_Request *req)
{
    int track = tr.on && tr_req_pending();
    if (!TR_REC(request_free) && !track) {
        if (tr.on) tr_unsel[TR_request_free]++;
        return PMPI_Request_free(req);
    }
    MPI_Request before = *req;
    int64_t t0 = tr_now();
    int rc = PMPI_Request_free(req);
    int64_t t1 = tr_now();
    int att = tr_rec_wait(TR_request_free, t0, t1);
    if (track && rc == MPI_SUCCESS) tr_req_freed(before, t1, att);
    return rc;
}

/* a cancelled request is marked when it completes (the status says whether the cancel succeeded) */
int MPI_Cancel(MPI_Request *req)
{
    TR_SKIP(cancel, PMPI_Cancel(req));
    int64_t t0 = tr_now();
    int rc = PMPI_Cancel(req);
    int64_t t1 = tr_now();
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, TR_cancel, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    return rc;
}
