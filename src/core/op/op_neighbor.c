/* mpitempo: the neighbourhood collectives (MPI-3.0, section 7.6) on a
 * topology communicator made in setup from --neighbor-topo:
 *  cart  - MPI_Dims_create(p, 2) then MPI_Cart_create, periodic in both
 *          dimensions, no reordering: 4 neighbours per rank (2 per dimension,
 *          the -1 and the +1 shift), counted as MPI counts them, duplicates
 *          included (a dimension of size 2 gives the same rank twice, of size
 *          1 the rank itself twice);
 *  graph - MPI_Dist_graph_create_adjacent: rank i sends to (i+1) mod p and
 *          (i + p/2) mod p, without duplicates or itself, and receives from
 *          the inverse ((i-1) mod p, (i - p/2) mod p): 2 neighbours each way
 *          for p >= 4, 1 for p = 2 or 3, none for p = 1;
 *  ring  - MPI_Dist_graph_create_adjacent: rank i sends to and receives from
 *          (i-1) mod p and (i+1) mod p, in that order, never itself, a repeat
 *          kept: OSU Micro-Benchmarks 7.4's default neighbourhood (a periodic
 *          1-D grid of radius 1 as a distributed graph, c/util/osu_util_mpi.c;
 *          OSU runs it on 3 ranks or more, where the 2 neighbours differ).
 * msize is the block per neighbour. The buffers, count/displacement/type
 * arrays and the communicator are the op's own (sized for the neighbour
 * counts in setup, freed in teardown).
 *
 * One call (the timed region), on every rank: neighbor_allgather sends its
 * block to each out-neighbour and receives one block from each in-neighbour
 * (MPI_Neighbor_allgather; allgatherv the same with count arrays);
 * neighbor_alltoall sends a distinct block to each out-neighbour and receives
 * one from each in-neighbour (MPI_Neighbor_alltoall; alltoallv with count and
 * displacement arrays, alltoallw with byte displacements and a type per
 * neighbour). The ineighbor_* ops are the non-blocking forms (MPI_Ineighbor_*
 * + MPI_Wait in one call, on the same topology and buffers). bytes_per_call =
 * msgs_per_call = 0: latency ops, OSU 7.4's osu_neighbor_* and osu_ineighbor_*
 * tests (with ring; OSU also offers a grid of more dimensions or radius and a
 * graph read from a file); IMB has none. */
#include "op/op.h"
#include "base/mt_common.h"

#include <stdlib.h>
#include <string.h>

typedef struct nstate {
    MPI_Comm topo;
    int indeg, outdeg;
    void *s, *r;
    int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint *swdispls, *rwdispls;
    MPI_Datatype *stypes, *rtypes;
} nstate_t;

static int one(int p) { (void)p; return 1; }

static void info_latency(mt_op_args_t *a, mt_op_info_t *out)
{
    (void)a;
    memset(out, 0, sizeof *out);
}

static void n_free(nstate_t *st)
{
    if (st->topo != MPI_COMM_NULL) MPI_Comm_free(&st->topo);
    free(st->s);
    free(st->r);
    free(st->scounts);
    free(st->sdispls);
    free(st->rcounts);
    free(st->rdispls);
    free(st->swdispls);
    free(st->rwdispls);
    free(st->stypes);
    free(st->rtypes);
    free(st);
}

static void n_teardown(mt_op_args_t *a) { n_free(a->state); }

/* the graph: out-neighbours (i+1, i+p/2) and in-neighbours (i-1, i-p/2) mod p,
 * without the rank itself and without repeats; returns the count */
static int graph_nbrs(int rank, int p, int sign, int out[2])
{
    int n = 0;
    int cand[2] = {1, p / 2};
    for (int k = 0; k < 2; k++) {
        int j = ((rank + sign * cand[k]) % p + p) % p;
        if (j == rank || (n == 1 && out[0] == j)) continue;
        out[n++] = j;
    }
    return n;
}

/* the ring: (i-1) and (i+1) mod p, without the rank itself, a repeat kept (p = 2: the other rank twice) */
static int ring_nbrs(int rank, int p, int out[2])
{
    int n = 0;
    for (int d = -1; d <= 1; d += 2) {
        int j = ((rank + d) % p + p) % p;
        if (j != rank) out[n++] = j;
    }
    return n;
}

static int n_setup(mt_op_args_t *a, char *err)
{
    nstate_t *st = calloc(1, sizeof *st);
    if (!st) return mt_fail(err, MT_ENOMEM, "cannot allocate the state of %s", a->op->mpi_name);
    st->topo = MPI_COMM_NULL;
    int rc;
    if (a->opts->topo == MT_TOPO_CART) {
        int dims[2] = {0, 0}, periods[2] = {1, 1};
        rc = MPI_Dims_create(a->size, 2, dims);
        if (rc == MPI_SUCCESS) rc = MPI_Cart_create(a->comm, 2, dims, periods, 0, &st->topo);
        if (rc != MPI_SUCCESS) {
            n_free(st);
            return mt_fail(err, MT_EMPI, "%s: MPI_Cart_create of a periodic %d x %d grid failed (MPI error %d)",
                           a->op->mpi_name, dims[0], dims[1], rc);
        }
        st->indeg = st->outdeg = 4; /* 2 x ndims: the -1 and +1 shift of each dimension */
    } else {
        int src[2], dst[2], nin, nout;
        if (a->opts->topo == MT_TOPO_RING) {
            nin = ring_nbrs(a->rank, a->size, src);
            nout = ring_nbrs(a->rank, a->size, dst);
        } else {
            nin = graph_nbrs(a->rank, a->size, -1, src);
            nout = graph_nbrs(a->rank, a->size, +1, dst);
        }
/* Open MPI's MPI_UNWEIGHTED is the address 2, which GCC >= 11 takes for an empty array */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
        rc = MPI_Dist_graph_create_adjacent(a->comm, nin, src, MPI_UNWEIGHTED, nout, dst, MPI_UNWEIGHTED,
                                            MPI_INFO_NULL, 0, &st->topo);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
        int w = 0;
        if (rc == MPI_SUCCESS) rc = MPI_Dist_graph_neighbors_count(st->topo, &st->indeg, &st->outdeg, &w);
        if (rc != MPI_SUCCESS) {
            n_free(st);
            return mt_fail(err, MT_EMPI, "%s: MPI_Dist_graph_create_adjacent failed (MPI error %d)", a->op->mpi_name,
                           rc);
        }
    }
    int nmax = st->indeg > st->outdeg ? st->indeg : st->outdeg;
    if (nmax < 1) nmax = 1;
    size_t block = (size_t)a->count * (size_t)a->dtype->size;
    size_t bytes = block * (size_t)nmax;
    if (bytes < 64) bytes = 64;
    st->s = mt_op_alloc(bytes);
    st->r = mt_op_alloc(bytes);
    st->scounts = malloc(sizeof(int) * nmax);
    st->sdispls = malloc(sizeof(int) * nmax);
    st->rcounts = malloc(sizeof(int) * nmax);
    st->rdispls = malloc(sizeof(int) * nmax);
    st->swdispls = malloc(sizeof(MPI_Aint) * nmax);
    st->rwdispls = malloc(sizeof(MPI_Aint) * nmax);
    st->stypes = malloc(sizeof(MPI_Datatype) * nmax);
    st->rtypes = malloc(sizeof(MPI_Datatype) * nmax);
    if (!st->s || !st->r || !st->scounts || !st->sdispls || !st->rcounts || !st->rdispls || !st->swdispls ||
        !st->rwdispls || !st->stypes || !st->rtypes) {
        n_free(st);
        return mt_fail(err, MT_ENOMEM, "cannot allocate 2 x %zu bytes of buffers for %s", bytes, a->op->mpi_name);
    }
    memset(st->s, 1, bytes);
    memset(st->r, 0, bytes);
    for (int i = 0; i < nmax; i++) {
        st->scounts[i] = st->rcounts[i] = a->count;
        st->sdispls[i] = st->rdispls[i] = i * a->count;
        st->swdispls[i] = st->rwdispls[i] = (MPI_Aint)i * (MPI_Aint)block;
        st->stypes[i] = st->rtypes[i] = a->type;
    }
    a->state = st;
    return MT_OK;
}

static int c_allgather(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    return MPI_Neighbor_allgather(st->s, a->count, a->type, st->r, a->count, a->type, st->topo);
}
static int c_allgatherv(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    return MPI_Neighbor_allgatherv(st->s, a->count, a->type, st->r, st->rcounts, st->rdispls, a->type, st->topo);
}
static int c_alltoall(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    return MPI_Neighbor_alltoall(st->s, a->count, a->type, st->r, a->count, a->type, st->topo);
}
static int c_alltoallv(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    return MPI_Neighbor_alltoallv(st->s, st->scounts, st->sdispls, a->type, st->r, st->rcounts, st->rdispls, a->type,
                                  st->topo);
}
static int c_alltoallw(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    return MPI_Neighbor_alltoallw(st->s, st->scounts, st->swdispls, st->stypes, st->r, st->rcounts, st->rwdispls,
                                  st->rtypes, st->topo);
}

/* the non-blocking forms (MPI-3): post + MPI_Wait, OSU's "Pure Comm." of osu_ineighbor_<op> */
static int c_iallgather(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    MPI_Request q;
    int rc = MPI_Ineighbor_allgather(st->s, a->count, a->type, st->r, a->count, a->type, st->topo, &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}
static int c_iallgatherv(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    MPI_Request q;
    int rc = MPI_Ineighbor_allgatherv(st->s, a->count, a->type, st->r, st->rcounts, st->rdispls, a->type, st->topo,
                                      &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}
static int c_ialltoall(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    MPI_Request q;
    int rc = MPI_Ineighbor_alltoall(st->s, a->count, a->type, st->r, a->count, a->type, st->topo, &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}
static int c_ialltoallv(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    MPI_Request q;
    int rc = MPI_Ineighbor_alltoallv(st->s, st->scounts, st->sdispls, a->type, st->r, st->rcounts, st->rdispls,
                                     a->type, st->topo, &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}
static int c_ialltoallw(mt_op_args_t *a)
{
    nstate_t *st = a->state;
    MPI_Request q;
    int rc = MPI_Ineighbor_alltoallw(st->s, st->scounts, st->swdispls, st->stypes, st->r, st->rcounts, st->rwdispls,
                                     st->rtypes, st->topo, &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}

#define N(id, mpi)                                                                                                 \
    static const mt_op_t mt_op_neighbor_##id = {.name = "neighbor_" #id, .mpi_name = mpi, .min_procs = 1,       \
                                                .flags = 0, .blocks = one, .call = c_##id, .setup = n_setup,       \
                                                .teardown = n_teardown, .family = "neighbor",                      \
                                                .opts = MT_OPT_TOPO, .info = info_latency};
N(allgather, "MPI_Neighbor_allgather")
N(allgatherv, "MPI_Neighbor_allgatherv")
N(alltoall, "MPI_Neighbor_alltoall")
N(alltoallv, "MPI_Neighbor_alltoallv")
N(alltoallw, "MPI_Neighbor_alltoallw")
#define NI(id, mpi)                                                                                                \
    static const mt_op_t mt_op_ineighbor_##id = {.name = "ineighbor_" #id, .mpi_name = mpi, .min_procs = 1,     \
                                                 .flags = 0, .blocks = one, .call = c_i##id, .setup = n_setup,    \
                                                 .teardown = n_teardown, .family = "neighbor",                    \
                                                 .opts = MT_OPT_TOPO, .info = info_latency};
NI(allgather, "MPI_Ineighbor_allgather")
NI(allgatherv, "MPI_Ineighbor_allgatherv")
NI(alltoall, "MPI_Ineighbor_alltoall")
NI(alltoallv, "MPI_Ineighbor_alltoallv")
NI(alltoallw, "MPI_Ineighbor_alltoallw")

const mt_op_t *const mt_ops_neighbor[] = {
    &mt_op_neighbor_allgather, &mt_op_neighbor_allgatherv, &mt_op_neighbor_alltoall,
    &mt_op_neighbor_alltoallv, &mt_op_neighbor_alltoallw, &mt_op_ineighbor_allgather, &mt_op_ineighbor_allgatherv,
    &mt_op_ineighbor_alltoall, &mt_op_ineighbor_alltoallv, &mt_op_ineighbor_alltoallw, NULL,
};
