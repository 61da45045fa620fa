/* mpitempo: the bytes a rank sends and receives in one collective, per the convention of
 * Score-P's MPI adapter (its collective byte rules, read in its source: scorep_mpi_coll bytes
 * functions, 2023), so that communication volumes from an mpitempo trace compare with those of a
 * Score-P trace in Vampir, Cube or Scalasca. In short (docs/trace.md, "Collective volumes"):
 *  - a block b is count x type size; N the size of the communicator (intercommunicator: the
 *    remote group's size);
 *  - all-to-one (gather, reduce): the root receives N blocks and sends its own block (in place:
 *    N-1 blocks received, nothing sent); the others send one block and receive nothing;
 *  - one-to-all (bcast, scatter): the same with sent and received exchanged;
 *  - intercommunicator rooted: MPI_ROOT moves N blocks of the remote group, the remote group's
 *    ranks one block each, MPI_PROC_NULL nothing;
 *  - all-to-all (allgather, alltoall, allreduce): N blocks each way (in place: N-1);
 *  - v/w variants: the sums of their count arrays (x the per-peer type sizes for w);
 *  - reduce_scatter(_block): the whole vector sent, N times the own block received;
 *  - scan: the rank r of N sends N-r blocks and receives r+1 (exscan: as scan in place);
 *  - neighbourhood: per neighbour (Cartesian: the neighbours that are not MPI_PROC_NULL).
 * Called after the PMPI call, outside the timed interval. */
#include "trace/trace.h"

static int64_t tsz(MPI_Datatype dt)
{
    int sz = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &sz) != MPI_SUCCESS) return 0;
    return sz;
}

static int is_inter(MPI_Comm comm)
{
    int f = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &f) != MPI_SUCCESS) return 0;
    return f;
}

static int crank(MPI_Comm comm)
{
    int r = -1;
    if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &r);
    return r;
}

static int csize(MPI_Comm comm)
{
    int n = 0;
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &n);
    return n;
}

/* N: the ranks a non-rooted collective exchanges with */
static int npeers(MPI_Comm comm)
{
    int n = 0;
    if (comm == MPI_COMM_NULL) return 0;
    if (is_inter(comm)) PMPI_Comm_remote_size(comm, &n);
    else PMPI_Comm_size(comm, &n);
    return n;
}

static int64_t vsum(const int *c, int n)
{
    int64_t s = 0;
    for (int i = 0; c && i < n; i++) s += c[i];
    return s;
}

/* all-to-one with per-rank counts at the root (rc: NULL -> `rc1` for every rank) */
static tr_sr_t to_root(int64_t sblock, const int *rc, int64_t rc1, int64_t rsize, int root, int inplace,
                       MPI_Comm comm)
{
    tr_sr_t b = {0, 0};
    if (comm == MPI_COMM_NULL) return b;
    if (!is_inter(comm)) {
        int me = crank(comm), n = csize(comm);
        if (me != root) {
            b.s = sblock;
            return b;
        }
        int64_t all = rc ? vsum(rc, n) * rsize : rc1 * rsize * n;
        int64_t own = rc ? (me < n ? (int64_t)rc[me] * rsize : 0) : rc1 * rsize;
        if (inplace) b.r = all - own;
        else {
            b.s = own;   /* the root's own block, to itself (equal type signatures) */
            b.r = all;
        }
        return b;
    }
    if (root == MPI_ROOT) {
        int n = npeers(comm);
        b.r = rc ? vsum(rc, n) * rsize : rc1 * rsize * n;
    } else if (root != MPI_PROC_NULL) {
        b.s = sblock;
    }
    return b;
}

static tr_sr_t swap(tr_sr_t b) { return (tr_sr_t){b.r, b.s}; }

tr_sr_t tr_cb_gather(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    return to_root((int64_t)sc * tsz(st), NULL, rc, tsz(rt), root, sb == MPI_IN_PLACE, comm);
}

tr_sr_t tr_cb_gatherv(const void *sb, int sc, MPI_Datatype st, const int *rcs, MPI_Datatype rt, int root,
                      MPI_Comm comm)
{
    return to_root((int64_t)sc * tsz(st), rcs ? rcs : NULL, 0, tsz(rt), root, sb == MPI_IN_PLACE, comm);
}

tr_sr_t tr_cb_reduce(const void *sb, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return to_root((int64_t)count * tsz(dt), NULL, count, tsz(dt), root, sb == MPI_IN_PLACE, comm);
}

tr_sr_t tr_cb_bcast(int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return swap(to_root((int64_t)count * tsz(dt), NULL, count, tsz(dt), root, 0, comm));
}

tr_sr_t tr_cb_scatter(int sc, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    return swap(to_root((int64_t)rc * tsz(rt), NULL, sc, tsz(st), root, rb == MPI_IN_PLACE, comm));
}

tr_sr_t tr_cb_scatterv(const int *scs, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, int root,
                       MPI_Comm comm)
{
    return swap(to_root((int64_t)rc * tsz(rt), scs, 0, tsz(st), root, rb == MPI_IN_PLACE, comm));
}

tr_sr_t tr_cb_alltoall(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    int64_t n = npeers(comm);
    if (sb == MPI_IN_PLACE) {
        int64_t x = (n > 0 ? n - 1 : 0) * rc * tsz(rt);
        return (tr_sr_t){x, x};
    }
    return (tr_sr_t){n * sc * tsz(st), n * rc * tsz(rt)};
}

tr_sr_t tr_cb_allreduce(const void *sb, int count, MPI_Datatype dt, MPI_Comm comm)
{
    return tr_cb_alltoall(sb, count, dt, count, dt, comm);
}

tr_sr_t tr_cb_allgatherv(const void *sb, int sc, MPI_Datatype st, const int *rcs, MPI_Datatype rt, MPI_Comm comm)
{
    int n = npeers(comm);
    int64_t rs = tsz(rt), all = vsum(rcs, n) * rs;
    if (sb == MPI_IN_PLACE) {
        int me = crank(comm);
        int64_t own = rcs && me >= 0 && me < n ? (int64_t)rcs[me] * rs : 0;
        return (tr_sr_t){(int64_t)(n > 0 ? n - 1 : 0) * own, all - own};
    }
    return (tr_sr_t){(int64_t)n * sc * tsz(st), all};
}

tr_sr_t tr_cb_alltoallv(const void *sb, const int *scs, MPI_Datatype st, const int *rcs, MPI_Datatype rt,
                        MPI_Comm comm)
{
    int n = npeers(comm);
    int64_t rs = tsz(rt);
    if (sb == MPI_IN_PLACE) {
        int me = crank(comm);
        int64_t x = vsum(rcs, n) * rs - (rcs && me >= 0 && me < n ? (int64_t)rcs[me] * rs : 0);
        return (tr_sr_t){x, x};
    }
    return (tr_sr_t){vsum(scs, n) * tsz(st), vsum(rcs, n) * rs};
}

tr_sr_t tr_cb_alltoallw(const void *sb, const int *scs, const MPI_Datatype *sts, const int *rcs,
                        const MPI_Datatype *rts, MPI_Comm comm)
{
    int n = npeers(comm);
    tr_sr_t b = {0, 0};
    for (int i = 0; rcs && rts && i < n; i++) b.r += (int64_t)rcs[i] * tsz(rts[i]);
    if (sb == MPI_IN_PLACE) {
        int me = crank(comm);
        if (rcs && rts && me >= 0 && me < n) b.r -= (int64_t)rcs[me] * tsz(rts[me]);
        b.s = b.r;
        return b;
    }
    for (int i = 0; scs && sts && i < n; i++) b.s += (int64_t)scs[i] * tsz(sts[i]);
    return b;
}

tr_sr_t tr_cb_reduce_scatter_block(const void *sb, int rc, MPI_Datatype dt, MPI_Comm comm)
{
    int64_t n = csize(comm), x = (sb == MPI_IN_PLACE ? n - 1 : n) * rc * tsz(dt);
    return (tr_sr_t){x, x};
}

tr_sr_t tr_cb_reduce_scatter(const void *sb, const int *rcs, MPI_Datatype dt, MPI_Comm comm)
{
    int n = csize(comm), me = crank(comm);
    int64_t ts = tsz(dt), all = vsum(rcs, n), own = rcs && me >= 0 && me < n ? rcs[me] : 0;
    if (is_inter(comm)) return (tr_sr_t){all * ts, (int64_t)npeers(comm) * own * ts};
    if (sb == MPI_IN_PLACE) return (tr_sr_t){(all - own) * ts, (int64_t)(n - 1) * own * ts};
    return (tr_sr_t){all * ts, (int64_t)n * own * ts};
}

tr_sr_t tr_cb_scan(const void *sb, int count, MPI_Datatype dt, MPI_Comm comm, int exclusive)
{
    int64_t n = csize(comm), me = crank(comm), b = (int64_t)count * tsz(dt);
    if (exclusive || sb == MPI_IN_PLACE) return (tr_sr_t){(n - me - 1) * b, me * b};
    return (tr_sr_t){(n - me) * b, (me + 1) * b};
}

/* the neighbours of a process topology: in/out degree, and for a Cartesian one which of the
 * 2*ndims slots are real (not MPI_PROC_NULL) */
#define TR_MAXNB 64
static void neighbours(MPI_Comm comm, int *in, int *out, int *cart, unsigned char *real)
{
    int st = MPI_UNDEFINED;
    *in = *out = 0;
    *cart = 0;
    if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &st) != MPI_SUCCESS) return;
    if (st == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        *cart = 1;
        if (nd > TR_MAXNB / 2) nd = TR_MAXNB / 2;
        for (int d = 0; d < nd; d++) {
            int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
            PMPI_Cart_shift(comm, d, 1, &lo, &hi);
            real[2 * d] = lo != MPI_PROC_NULL;
            real[2 * d + 1] = hi != MPI_PROC_NULL;
        }
        *in = *out = 2 * nd; /* slots of the count arrays; `real` says which are neighbours */
    } else if (st == MPI_GRAPH) {
        int n = 0;
        PMPI_Graph_neighbors_count(comm, crank(comm), &n);
        *in = *out = n;
    } else if (st == MPI_DIST_GRAPH) {
        int w = 0;
        PMPI_Dist_graph_neighbors_count(comm, in, out, &w);
    }
}

tr_sr_t tr_cb_neighbor(int sc, const int *scs, const MPI_Datatype *sts, MPI_Datatype st, int rc, const int *rcs,
                       const MPI_Datatype *rts, MPI_Datatype rt, MPI_Comm comm)
{
    int in, out, cart;
    unsigned char real[TR_MAXNB] = {0};
    neighbours(comm, &in, &out, &cart, real);
    tr_sr_t b = {0, 0};
    int64_t s1 = sts ? 0 : tsz(st), r1 = rts ? 0 : tsz(rt);
    for (int i = 0; i < out; i++) {
        if (cart && !real[i]) continue;
        int64_t c = scs ? scs[i] : sc;
        b.s += c * (sts ? tsz(sts[i]) : s1);
    }
    for (int i = 0; i < in; i++) {
        if (cart && !real[i]) continue;
        int64_t c = rcs ? rcs[i] : rc;
        b.r += c * (rts ? tsz(rts[i]) : r1);
    }
    return b;
}
