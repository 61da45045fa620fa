/* mpitempo: the counting layer of the op truth tests (see op_count.h). */
#include "op_count.h"

#include "base/mt_common.h"
#include "timer/timer.h"

#include <string.h>

mt_cnt_t mt_cnt;
void mt_cnt_reset(void) { memset(&mt_cnt, 0, sizeof mt_cnt); }

static long long bytes_of(int count, MPI_Datatype t)
{
    int sz = 0;
    PMPI_Type_size(t, &sz);
    return (long long)count * sz;
}

/* ---- point-to-point ---- */
#define SENT(c, t) (mt_cnt.sent_msgs++, mt_cnt.sent_bytes += bytes_of((c), (t)))
#define RECV(c, t) (mt_cnt.recv_msgs++, mt_cnt.recv_bytes += bytes_of((c), (t)))
int MPI_Send(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm cm)
{
    SENT(c, t);
    return PMPI_Send(b, c, t, d, tag, cm);
}
int MPI_Ssend(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm cm)
{
    SENT(c, t);
    return PMPI_Ssend(b, c, t, d, tag, cm);
}
int MPI_Isend(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm cm, MPI_Request *r)
{
    SENT(c, t);
    return PMPI_Isend(b, c, t, d, tag, cm, r);
}
int MPI_Recv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm cm, MPI_Status *st)
{
    RECV(c, t);
    return PMPI_Recv(b, c, t, s, tag, cm, st);
}
int MPI_Irecv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm cm, MPI_Request *r)
{
    RECV(c, t);
    const unsigned char *p = b;
    if (!mt_cnt.irecv_lo || p < mt_cnt.irecv_lo) mt_cnt.irecv_lo = p;
    if (!mt_cnt.irecv_hi || p > mt_cnt.irecv_hi) mt_cnt.irecv_hi = p;
    return PMPI_Irecv(b, c, t, s, tag, cm, r);
}
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int d, int stag, void *rb, int rc, MPI_Datatype rt, int s,
                 int rtag, MPI_Comm cm, MPI_Status *status)
{
    SENT(sc, st);
    RECV(rc, rt);
    return PMPI_Sendrecv(sb, sc, st, d, stag, rb, rc, rt, s, rtag, cm, status);
}
int MPI_Wait(MPI_Request *r, MPI_Status *s)
{
    mt_cnt.waits++;
    return PMPI_Wait(r, s);
}
int MPI_Waitall(int n, MPI_Request r[], MPI_Status s[])
{
    mt_cnt.waits += n;
    return PMPI_Waitall(n, r, s);
}
int MPI_Test(MPI_Request *r, int *flag, MPI_Status *s)
{
    mt_cnt.tests++;
    return PMPI_Test(r, flag, s);
}
int MPI_Start(MPI_Request *r)
{
    mt_cnt.persist_starts++;
    return PMPI_Start(r);
}
int MPI_Startall(int n, MPI_Request r[])
{
    mt_cnt.persist_starts += n;
    return PMPI_Startall(n, r);
}
int MPI_Send_init(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm cm, MPI_Request *r)
{
    mt_cnt.psend_inits++;
    mt_cnt.psend_bytes += bytes_of(c, t);
    return PMPI_Send_init(b, c, t, d, tag, cm, r);
}
int MPI_Recv_init(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm cm, MPI_Request *r)
{
    mt_cnt.precv_inits++;
    mt_cnt.precv_bytes += bytes_of(c, t);
    return PMPI_Recv_init(b, c, t, s, tag, cm, r);
}

/* ---- one-sided ---- */
#define RMA(c, t) (mt_cnt.rma_ops++, mt_cnt.rma_bytes += bytes_of((c), (t)))
int MPI_Put(const void *b, int c, MPI_Datatype t, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w)
{
    RMA(c, t);
    return PMPI_Put(b, c, t, tr, td, tc, tt, w);
}
int MPI_Get(void *b, int c, MPI_Datatype t, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win w)
{
    RMA(c, t);
    return PMPI_Get(b, c, t, tr, td, tc, tt, w);
}
int MPI_Accumulate(const void *b, int c, MPI_Datatype t, int tr, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Op op,
                   MPI_Win w)
{
    RMA(c, t);
    return PMPI_Accumulate(b, c, t, tr, td, tc, tt, op, w);
}
int MPI_Get_accumulate(const void *b, int c, MPI_Datatype t, void *rb, int rc, MPI_Datatype rt, int tr, MPI_Aint td,
                       int tc, MPI_Datatype tt, MPI_Op op, MPI_Win w)
{
    RMA(c, t);
    return PMPI_Get_accumulate(b, c, t, rb, rc, rt, tr, td, tc, tt, op, w);
}
int MPI_Fetch_and_op(const void *b, void *rb, MPI_Datatype t, int tr, MPI_Aint td, MPI_Op op, MPI_Win w)
{
    RMA(1, t);
    return PMPI_Fetch_and_op(b, rb, t, tr, td, op, w);
}
int MPI_Compare_and_swap(const void *b, const void *cb, void *rb, MPI_Datatype t, int tr, MPI_Aint td, MPI_Win w)
{
    RMA(1, t);
    return PMPI_Compare_and_swap(b, cb, rb, t, tr, td, w);
}
int MPI_Win_fence(int a, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_fence(a, w);
}
int MPI_Win_lock(int l, int r, int a, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_lock(l, r, a, w);
}
int MPI_Win_unlock(int r, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_unlock(r, w);
}
int MPI_Win_lock_all(int a, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_lock_all(a, w);
}
int MPI_Win_unlock_all(MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_unlock_all(w);
}
int MPI_Win_flush(int r, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_flush(r, w);
}
int MPI_Win_flush_local(int r, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_flush_local(r, w);
}
int MPI_Win_flush_all(MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_flush_all(w);
}
int MPI_Win_start(MPI_Group g, int a, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_start(g, a, w);
}
int MPI_Win_complete(MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_complete(w);
}
int MPI_Win_post(MPI_Group g, int a, MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_post(g, a, w);
}
int MPI_Win_wait(MPI_Win w)
{
    mt_cnt.rma_syncs++;
    return PMPI_Win_wait(w);
}

/* ---- coll: blocking collectives, MPI_*_init (persistent) and neighbourhood
 * collectives; each records what it was passed in mt_coll_last ---- */
mt_cnt_t mt_cnt_setup;
mt_coll_rec_t mt_coll_last;

static void rec_begin(const char *fn, const void *sb, const void *rb)
{
    memset(&mt_coll_last, 0, sizeof mt_coll_last);
    mt_coll_last.fn = fn;
    mt_coll_last.send_in_place = sb == MPI_IN_PLACE;
    mt_coll_last.recv_in_place = rb == MPI_IN_PLACE;
    mt_coll_last.scount = mt_coll_last.rcount = -1;
    mt_coll_last.topo = MPI_UNDEFINED;
}
/* n entries of a count array (n <= MT_REC_MAX recorded) */
static void rec_arr(int *dst, int *ndst, const int *src, int n)
{
    if (!src) return;
    if (n > MT_REC_MAX) n = MT_REC_MAX;
    for (int i = 0; i < n; i++) dst[i] = src[i];
    *ndst = n;
}
static int comm_size(MPI_Comm c)
{
    int p = 0;
    PMPI_Comm_size(c, &p);
    return p;
}
#define COLL(fn, sb, rb) (mt_cnt.colls++, rec_begin((fn), (sb), (rb)))
#define SC(v) (mt_coll_last.scount = (v))
#define RC(v) (mt_coll_last.rcount = (v))
#define SA(arr, n) rec_arr(mt_coll_last.scounts, &mt_coll_last.nscounts, (arr), (n))
#define RA(arr, n) rec_arr(mt_coll_last.rcounts, &mt_coll_last.nrcounts, (arr), (n))

int MPI_Barrier(MPI_Comm c)
{
    COLL("MPI_Barrier", NULL, NULL);
    return PMPI_Barrier(c);
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    COLL("MPI_Bcast", b, NULL), SC(n);
    return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Reduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    COLL("MPI_Reduce", sb, rb), SC(n);
    return PMPI_Reduce(sb, rb, n, t, op, root, c);
}
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    COLL("MPI_Allreduce", sb, rb), SC(n);
    return PMPI_Allreduce(sb, rb, n, t, op, c);
}
int MPI_Gather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
    COLL("MPI_Gather", sb, rb), SC(sn), RC(rn);
    return PMPI_Gather(sb, sn, st, rb, rn, rt, root, c);
}
int MPI_Gatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[], MPI_Datatype rt,
                int root, MPI_Comm c)
{
    COLL("MPI_Gatherv", sb, rb), SC(sn), RA(rn, comm_size(c));
    return PMPI_Gatherv(sb, sn, st, rb, rn, rd, rt, root, c);
}
int MPI_Scatter(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
    COLL("MPI_Scatter", sb, rb), SC(sn), RC(rn);
    return PMPI_Scatter(sb, sn, st, rb, rn, rt, root, c);
}
int MPI_Scatterv(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                 int root, MPI_Comm c)
{
    COLL("MPI_Scatterv", sb, rb), SA(sn, comm_size(c)), RC(rn);
    return PMPI_Scatterv(sb, sn, sd, st, rb, rn, rt, root, c);
}
int MPI_Allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    COLL("MPI_Allgather", sb, rb), SC(sn), RC(rn);
    return PMPI_Allgather(sb, sn, st, rb, rn, rt, c);
}
int MPI_Allgatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[],
                   MPI_Datatype rt, MPI_Comm c)
{
    COLL("MPI_Allgatherv", sb, rb), SC(sn), RA(rn, comm_size(c));
    return PMPI_Allgatherv(sb, sn, st, rb, rn, rd, rt, c);
}
int MPI_Alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    COLL("MPI_Alltoall", sb, rb), SC(sn), RC(rn);
    return PMPI_Alltoall(sb, sn, st, rb, rn, rt, c);
}
int MPI_Alltoallw(const void *sb, const int sn[], const int sd[], const MPI_Datatype st[], void *rb, const int rn[],
                  const int rd[], const MPI_Datatype rt[], MPI_Comm c)
{
    COLL("MPI_Alltoallw", sb, rb), SA(sn, comm_size(c)), RA(rn, comm_size(c));
    return PMPI_Alltoallw(sb, sn, sd, st, rb, rn, rd, rt, c);
}
int MPI_Alltoallv(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, const int rn[],
                  const int rd[], MPI_Datatype rt, MPI_Comm c)
{
    COLL("MPI_Alltoallv", sb, rb), SA(sn, comm_size(c)), RA(rn, comm_size(c));
    return PMPI_Alltoallv(sb, sn, sd, st, rb, rn, rd, rt, c);
}
int MPI_Reduce_scatter(const void *sb, void *rb, const int rn[], MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    COLL("MPI_Reduce_scatter", sb, rb), RA(rn, comm_size(c));
    return PMPI_Reduce_scatter(sb, rb, rn, t, op, c);
}
int MPI_Reduce_scatter_block(const void *sb, void *rb, int rn, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    COLL("MPI_Reduce_scatter_block", sb, rb), RC(rn);
    return PMPI_Reduce_scatter_block(sb, rb, rn, t, op, c);
}
int MPI_Scan(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    COLL("MPI_Scan", sb, rb), SC(n);
    return PMPI_Scan(sb, rb, n, t, op, c);
}
int MPI_Exscan(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    COLL("MPI_Exscan", sb, rb), SC(n);
    return PMPI_Exscan(sb, rb, n, t, op, c);
}

#ifdef MT_HAVE_PERSISTENT_COLL
typedef MPI_Info I_;
typedef MPI_Request R_;
int MPI_Barrier_init(MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Barrier_init", NULL, NULL);
    return PMPI_Barrier_init(c, i, q);
}
int MPI_Bcast_init(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Bcast_init", b, NULL), SC(n);
    return PMPI_Bcast_init(b, n, t, root, c, i, q);
}
int MPI_Reduce_init(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Reduce_init", sb, rb), SC(n);
    return PMPI_Reduce_init(sb, rb, n, t, op, root, c, i, q);
}
int MPI_Allreduce_init(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Allreduce_init", sb, rb), SC(n);
    return PMPI_Allreduce_init(sb, rb, n, t, op, c, i, q);
}
int MPI_Gather_init(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c,
                    I_ i, R_ *q)
{
    COLL("MPI_Gather_init", sb, rb), SC(sn), RC(rn);
    return PMPI_Gather_init(sb, sn, st, rb, rn, rt, root, c, i, q);
}
int MPI_Gatherv_init(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[],
                     MPI_Datatype rt, int root, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Gatherv_init", sb, rb), SC(sn), RA(rn, comm_size(c));
    return PMPI_Gatherv_init(sb, sn, st, rb, rn, rd, rt, root, c, i, q);
}
int MPI_Scatter_init(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root,
                     MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Scatter_init", sb, rb), SC(sn), RC(rn);
    return PMPI_Scatter_init(sb, sn, st, rb, rn, rt, root, c, i, q);
}
int MPI_Scatterv_init(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, int rn,
                      MPI_Datatype rt, int root, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Scatterv_init", sb, rb), SA(sn, comm_size(c)), RC(rn);
    return PMPI_Scatterv_init(sb, sn, sd, st, rb, rn, rt, root, c, i, q);
}
int MPI_Allgather_init(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c, I_ i,
                       R_ *q)
{
    COLL("MPI_Allgather_init", sb, rb), SC(sn), RC(rn);
    return PMPI_Allgather_init(sb, sn, st, rb, rn, rt, c, i, q);
}
int MPI_Allgatherv_init(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[],
                        MPI_Datatype rt, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Allgatherv_init", sb, rb), SC(sn), RA(rn, comm_size(c));
    return PMPI_Allgatherv_init(sb, sn, st, rb, rn, rd, rt, c, i, q);
}
int MPI_Alltoall_init(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c, I_ i,
                      R_ *q)
{
    COLL("MPI_Alltoall_init", sb, rb), SC(sn), RC(rn);
    return PMPI_Alltoall_init(sb, sn, st, rb, rn, rt, c, i, q);
}
int MPI_Alltoallw_init(const void *sb, const int sn[], const int sd[], const MPI_Datatype st[], void *rb,
                       const int rn[], const int rd[], const MPI_Datatype rt[], MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Alltoallw_init", sb, rb), SA(sn, comm_size(c)), RA(rn, comm_size(c));
    return PMPI_Alltoallw_init(sb, sn, sd, st, rb, rn, rd, rt, c, i, q);
}
int MPI_Alltoallv_init(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, const int rn[],
                       const int rd[], MPI_Datatype rt, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Alltoallv_init", sb, rb), SA(sn, comm_size(c)), RA(rn, comm_size(c));
    return PMPI_Alltoallv_init(sb, sn, sd, st, rb, rn, rd, rt, c, i, q);
}
int MPI_Reduce_scatter_init(const void *sb, void *rb, const int rn[], MPI_Datatype t, MPI_Op op, MPI_Comm c, I_ i,
                            R_ *q)
{
    COLL("MPI_Reduce_scatter_init", sb, rb), RA(rn, comm_size(c));
    return PMPI_Reduce_scatter_init(sb, rb, rn, t, op, c, i, q);
}
int MPI_Reduce_scatter_block_init(const void *sb, void *rb, int rn, MPI_Datatype t, MPI_Op op, MPI_Comm c, I_ i,
                                  R_ *q)
{
    COLL("MPI_Reduce_scatter_block_init", sb, rb), RC(rn);
    return PMPI_Reduce_scatter_block_init(sb, rb, rn, t, op, c, i, q);
}
int MPI_Scan_init(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Scan_init", sb, rb), SC(n);
    return PMPI_Scan_init(sb, rb, n, t, op, c, i, q);
}
int MPI_Exscan_init(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, I_ i, R_ *q)
{
    COLL("MPI_Exscan_init", sb, rb), SC(n);
    return PMPI_Exscan_init(sb, rb, n, t, op, c, i, q);
}
#endif

/* the topology of a neighbourhood collective's communicator, as MPI reports it */
static void rec_topo(MPI_Comm c)
{
    mt_coll_rec_t *r = &mt_coll_last;
    PMPI_Topo_test(c, &r->topo);
    if (r->topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(c, &nd);
        r->indeg = r->outdeg = 2 * nd;
        if (nd == 2) {
            int periods[2], coords[2];
            PMPI_Cart_get(c, 2, r->dims, periods, coords);
        }
        for (int d = 0; d < nd && 2 * d + 1 < MT_REC_MAX; d++) {
            int s, t;
            PMPI_Cart_shift(c, d, 1, &s, &t);
            r->sources[2 * d] = r->dests[2 * d] = s;
            r->sources[2 * d + 1] = r->dests[2 * d + 1] = t;
        }
    } else if (r->topo == MPI_DIST_GRAPH) {
        int w = 0;
        PMPI_Dist_graph_neighbors_count(c, &r->indeg, &r->outdeg, &w);
/* Open MPI's MPI_UNWEIGHTED is the address 2, which GCC >= 11 takes for an empty array */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
        if (r->indeg <= MT_REC_MAX && r->outdeg <= MT_REC_MAX)
            PMPI_Dist_graph_neighbors(c, r->indeg, r->sources, MPI_UNWEIGHTED, r->outdeg, r->dests, MPI_UNWEIGHTED);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
    }
}
#define NBR(fn, sb, rb, c) (mt_cnt.neighbor++, rec_begin((fn), (sb), (rb)), rec_topo(c))

int MPI_Neighbor_allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    NBR("MPI_Neighbor_allgather", sb, rb, c), SC(sn), RC(rn);
    return PMPI_Neighbor_allgather(sb, sn, st, rb, rn, rt, c);
}
int MPI_Neighbor_allgatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[],
                            MPI_Datatype rt, MPI_Comm c)
{
    NBR("MPI_Neighbor_allgatherv", sb, rb, c), SC(sn), RA(rn, mt_coll_last.indeg);
    return PMPI_Neighbor_allgatherv(sb, sn, st, rb, rn, rd, rt, c);
}
int MPI_Neighbor_alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    NBR("MPI_Neighbor_alltoall", sb, rb, c), SC(sn), RC(rn);
    return PMPI_Neighbor_alltoall(sb, sn, st, rb, rn, rt, c);
}
int MPI_Neighbor_alltoallv(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, const int rn[],
                           const int rd[], MPI_Datatype rt, MPI_Comm c)
{
    NBR("MPI_Neighbor_alltoallv", sb, rb, c), SA(sn, mt_coll_last.outdeg), RA(rn, mt_coll_last.indeg);
    return PMPI_Neighbor_alltoallv(sb, sn, sd, st, rb, rn, rd, rt, c);
}
int MPI_Neighbor_alltoallw(const void *sb, const int sn[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb,
                           const int rn[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm c)
{
    NBR("MPI_Neighbor_alltoallw", sb, rb, c), SA(sn, mt_coll_last.outdeg), RA(rn, mt_coll_last.indeg);
    return PMPI_Neighbor_alltoallw(sb, sn, sd, st, rb, rn, rd, rt, c);
}

/* the non-blocking forms: counted and recorded as the blocking ones (neighbor), the wait apart */
int MPI_Ineighbor_allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c,
                            MPI_Request *q)
{
    NBR("MPI_Ineighbor_allgather", sb, rb, c), SC(sn), RC(rn);
    return PMPI_Ineighbor_allgather(sb, sn, st, rb, rn, rt, c, q);
}
int MPI_Ineighbor_allgatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[], const int rd[],
                             MPI_Datatype rt, MPI_Comm c, MPI_Request *q)
{
    NBR("MPI_Ineighbor_allgatherv", sb, rb, c), SC(sn), RA(rn, mt_coll_last.indeg);
    return PMPI_Ineighbor_allgatherv(sb, sn, st, rb, rn, rd, rt, c, q);
}
int MPI_Ineighbor_alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c,
                           MPI_Request *q)
{
    NBR("MPI_Ineighbor_alltoall", sb, rb, c), SC(sn), RC(rn);
    return PMPI_Ineighbor_alltoall(sb, sn, st, rb, rn, rt, c, q);
}
int MPI_Ineighbor_alltoallv(const void *sb, const int sn[], const int sd[], MPI_Datatype st, void *rb, const int rn[],
                            const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request *q)
{
    NBR("MPI_Ineighbor_alltoallv", sb, rb, c), SA(sn, mt_coll_last.outdeg), RA(rn, mt_coll_last.indeg);
    return PMPI_Ineighbor_alltoallv(sb, sn, sd, st, rb, rn, rd, rt, c, q);
}
int MPI_Ineighbor_alltoallw(const void *sb, const int sn[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb,
                            const int rn[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm c, MPI_Request *q)
{
    NBR("MPI_Ineighbor_alltoallw", sb, rb, c), SA(sn, mt_coll_last.outdeg), RA(rn, mt_coll_last.indeg);
    return PMPI_Ineighbor_alltoallw(sb, sn, sd, st, rb, rn, rd, rt, c, q);
}

mt_op_opts_t mt_cnt_default_opts(void)
{
    mt_op_opts_t o = {.window = 64, .rma_sync = MT_RMA_FLUSH, .rma_win = MT_WIN_ALLOCATE, .rma_epochs = 1,
                      .vcounts = MT_VCOUNTS_UNIFORM, .compute_s = -1, .topo = MT_TOPO_CART};
    return o;
}

int mt_cnt_run(const char *name, int64_t msize, const mt_op_opts_t *opts, int warm, int calls, mt_cnt_t *out,
               mt_op_info_t *info, char *err)
{
    const mt_op_t *op = mt_op_lookup(name, err);
    if (!op) return MT_EINVAL;
    static mt_timer_inst_t timer;
    if (!timer.t && mt_timer_open("monotonic", &timer, err) != MT_OK) return MT_EINVAL;
    mt_op_args_t a;
    mt_op_args_init(&a, MPI_COMM_WORLD, &mt_dtypes[0], MPI_SUM, &timer, opts);
    a.delay_s = 1e-6;
    mt_cnt_reset();
    int rc = mt_op_prepare(op, &a, msize, err);
    mt_cnt_setup = mt_cnt;
    if (rc != MT_OK) return rc;
    for (int i = 0; i < warm; i++) op->call(&a);
    PMPI_Barrier(a.comm);
    mt_cnt_reset();
    for (int i = 0; i < calls; i++) {
        int e = op->call(&a);
        if (e != MPI_SUCCESS) {
            mt_op_release(&a);
            return mt_fail(err, MT_EMPI, "%s returned MPI error %d", op->mpi_name, e);
        }
    }
    *out = mt_cnt;
    memset(info, 0, sizeof *info);
    PMPI_Barrier(a.comm);
    if (op->info) op->info(&a, info);
    mt_op_release(&a);
    return MT_OK;
}

/* ---- nbc: the non-blocking collectives (MPI_I*) ---- */
const char *const mt_cnt_nb_names[MT_CNT_NB_FNS] = {
    "MPI_Ibarrier",   "MPI_Ibcast",     "MPI_Ireduce",    "MPI_Iallreduce",      "MPI_Igather",
    "MPI_Igatherv",   "MPI_Iscatter",   "MPI_Iscatterv",  "MPI_Iallgather",      "MPI_Iallgatherv",
    "MPI_Ialltoall",  "MPI_Ialltoallv", "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block", "MPI_Iscan",
    "MPI_Iexscan",    "MPI_Ialltoallw",
};
long long mt_cnt_nb_of(const mt_cnt_t *c, const char *mpi_name)
{
    for (int i = 0; i < MT_CNT_NB_FNS; i++)
        if (strcmp(mt_cnt_nb_names[i], mpi_name) == 0) return c->nb_by_fn[i];
    return 0;
}
static int nb_rank(MPI_Comm c)
{
    int r = 0;
    PMPI_Comm_rank(c, &r);
    return r;
}
static int nb_size(MPI_Comm c)
{
    int p = 0;
    PMPI_Comm_size(c, &p);
    return p;
}
static long long nb_sum(const int *counts, MPI_Comm c)
{
    long long s = 0;
    for (int i = 0, p = nb_size(c); i < p; i++) s += counts[i];
    return s;
}
/* one post of function k, declaring sb bytes to send and rb to receive */
static void nb_count(int k, long long sb, long long rb)
{
    mt_cnt.nb_colls++;
    mt_cnt.nb_by_fn[k]++;
    mt_cnt.nb_sbytes += sb;
    mt_cnt.nb_rbytes += rb;
}
#define NB_BYTES(n, t) ((long long)(n) * bytes_of(1, (t)))
int MPI_Ibarrier(MPI_Comm c, MPI_Request *r)
{
    nb_count(0, 0, 0);
    return PMPI_Ibarrier(c, r);
}
int MPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r)
{
    int me = nb_rank(c) == root;
    nb_count(1, me ? NB_BYTES(n, t) : 0, me ? 0 : NB_BYTES(n, t));
    return PMPI_Ibcast(b, n, t, root, c, r);
}
int MPI_Ireduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, MPI_Request *r)
{
    nb_count(2, NB_BYTES(n, t), nb_rank(c) == root ? NB_BYTES(n, t) : 0);
    return PMPI_Ireduce(sb, rb, n, t, op, root, c, r);
}
int MPI_Iallreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *r)
{
    nb_count(3, NB_BYTES(n, t), NB_BYTES(n, t));
    return PMPI_Iallreduce(sb, rb, n, t, op, c, r);
}
int MPI_Igather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm c,
                MPI_Request *r)
{
    nb_count(4, NB_BYTES(sc, st), nb_rank(c) == root ? NB_BYTES((long long)rc * nb_size(c), rt) : 0);
    return PMPI_Igather(sb, sc, st, rb, rc, rt, root, c, r);
}
int MPI_Igatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int rd[], MPI_Datatype rt,
                 int root, MPI_Comm c, MPI_Request *r)
{
    nb_count(5, NB_BYTES(sc, st), nb_rank(c) == root ? NB_BYTES(nb_sum(rc, c), rt) : 0);
    return PMPI_Igatherv(sb, sc, st, rb, rc, rd, rt, root, c, r);
}
int MPI_Iscatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm c,
                 MPI_Request *r)
{
    nb_count(6, nb_rank(c) == root ? NB_BYTES((long long)sc * nb_size(c), st) : 0, NB_BYTES(rc, rt));
    return PMPI_Iscatter(sb, sc, st, rb, rc, rt, root, c, r);
}
int MPI_Iscatterv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                  int root, MPI_Comm c, MPI_Request *r)
{
    nb_count(7, nb_rank(c) == root ? NB_BYTES(nb_sum(sc, c), st) : 0, NB_BYTES(rc, rt));
    return PMPI_Iscatterv(sb, sc, sd, st, rb, rc, rt, root, c, r);
}
int MPI_Iallgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm c,
                   MPI_Request *r)
{
    nb_count(8, NB_BYTES(sc, st), NB_BYTES((long long)rc * nb_size(c), rt));
    return PMPI_Iallgather(sb, sc, st, rb, rc, rt, c, r);
}
int MPI_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int rd[],
                    MPI_Datatype rt, MPI_Comm c, MPI_Request *r)
{
    nb_count(9, NB_BYTES(sc, st), NB_BYTES(nb_sum(rc, c), rt));
    return PMPI_Iallgatherv(sb, sc, st, rb, rc, rd, rt, c, r);
}
int MPI_Ialltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm c,
                  MPI_Request *r)
{
    nb_count(10, NB_BYTES((long long)sc * nb_size(c), st), NB_BYTES((long long)rc * nb_size(c), rt));
    return PMPI_Ialltoall(sb, sc, st, rb, rc, rt, c, r);
}
int MPI_Ialltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc[],
                   const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request *r)
{
    nb_count(11, NB_BYTES(nb_sum(sc, c), st), NB_BYTES(nb_sum(rc, c), rt));
    return PMPI_Ialltoallv(sb, sc, sd, st, rb, rc, rd, rt, c, r);
}
int MPI_Ialltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc[],
                   const int rd[], const MPI_Datatype rt[], MPI_Comm c, MPI_Request *r)
{
    long long sbytes = 0, rbytes = 0;
    for (int i = 0, p = nb_size(c); i < p; i++) {
        sbytes += NB_BYTES(sc[i], st[i]);
        rbytes += NB_BYTES(rc[i], rt[i]);
    }
    nb_count(16, sbytes, rbytes);
    return PMPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, c, r);
}
int MPI_Ireduce_scatter(const void *sb, void *rb, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm c,
                        MPI_Request *r)
{
    nb_count(12, NB_BYTES(nb_sum(rc, c), t), NB_BYTES(rc[nb_rank(c)], t));
    return PMPI_Ireduce_scatter(sb, rb, rc, t, op, c, r);
}
int MPI_Ireduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                              MPI_Request *r)
{
    nb_count(13, NB_BYTES((long long)rc * nb_size(c), t), NB_BYTES(rc, t));
    return PMPI_Ireduce_scatter_block(sb, rb, rc, t, op, c, r);
}
int MPI_Iscan(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *r)
{
    nb_count(14, NB_BYTES(n, t), NB_BYTES(n, t));
    return PMPI_Iscan(sb, rb, n, t, op, c, r);
}
int MPI_Iexscan(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *r)
{
    nb_count(15, NB_BYTES(n, t), NB_BYTES(n, t));
    return PMPI_Iexscan(sb, rb, n, t, op, c, r);
}
