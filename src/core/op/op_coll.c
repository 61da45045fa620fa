/* mpitempo: the blocking MPI collectives. msize is the block a rank
 * contributes or receives (IMB convention): Bcast/Reduce/Allreduce/Scan/Exscan
 * move msize bytes per rank; Gather/Scatter/Allgather/Alltoall(v) move one
 * block of msize bytes per rank pair; Reduce_scatter(_block) delivers msize
 * bytes to every rank (input p x msize).
 *
 * One call (the timed region) is one call of the MPI function on every rank of
 * the communicator; rooted ops use --root. bytes_per_call = msgs_per_call = 0:
 * latency ops (a collective has no single bandwidth definition here). They
 * correspond to OSU osu_<name> (osu_barrier, osu_allreduce, osu_gatherv, ...)
 * and IMB-MPI1 Barrier, Bcast, Reduce, Allreduce, Gather(v), Scatter(v),
 * Allgather(v), Alltoall(v), Reduce_scatter(_block), Scan, Exscan.
 *
 * alltoallw is alltoallv with byte displacements and one datatype per block
 * (all the op's type, as OSU's osu_alltoallw; IMB-MPI1 has no Alltoallw).
 *
 * Options:
 *  --vcounts (gatherv, scatterv, allgatherv, alltoallv, alltoallw, reduce_scatter): the
 *    per-rank blocks of mt_op_vcounts (a->counts, a->displs); a rank's own
 *    block is counts[rank]. alltoallv sends counts[j] to rank j and receives
 *    counts[rank] from every rank (a->rcounts, a->rdispls).
 *  --in-place (every op where MPI allows MPI_IN_PLACE): the MPI standard's rule
 *    per op (MPI-4.0, chapter 6): reduce at the root only (input in recvbuf);
 *    allreduce, scan, exscan, reduce_scatter(_block), alltoall(v) on every rank
 *    (input in recvbuf, replaced by the result); allgather(v) on every rank (the
 *    rank's block already at its place in recvbuf); gather(v) at the root (its
 *    block already at its place in recvbuf: sendbuf = MPI_IN_PLACE); scatter(v)
 *    at the root (its block stays in sendbuf: recvbuf = MPI_IN_PLACE). */
#include "op/op.h"
#include "base/mt_common.h"

#include <string.h>

static int one(int p) { (void)p; return 1; }
static int per_rank(int p) { return p; }

/* latency ops: no bandwidth or message-rate definition */
static void info_latency(mt_op_args_t *a, mt_op_info_t *out)
{
    (void)a;
    memset(out, 0, sizeof *out);
}

/* MPI_IN_PLACE for the send buffer on every rank / on the root only */
#define SEND_ALL(a) ((a)->opts->in_place ? MPI_IN_PLACE : (const void *)(a)->sbuf)
#define SEND_ROOT(a) ((a)->opts->in_place && (a)->rank == (a)->root ? MPI_IN_PLACE : (const void *)(a)->sbuf)
#define RECV_ROOT(a) ((a)->opts->in_place && (a)->rank == (a)->root ? MPI_IN_PLACE : (a)->rbuf)

static int c_barrier(mt_op_args_t *a) { return MPI_Barrier(a->comm); }
static int c_bcast(mt_op_args_t *a) { return MPI_Bcast(a->sbuf, a->count, a->type, a->root, a->comm); }
static int c_reduce(mt_op_args_t *a)
{
    return MPI_Reduce(SEND_ROOT(a), a->rbuf, a->count, a->type, a->redop, a->root, a->comm);
}
static int c_allreduce(mt_op_args_t *a)
{
    return MPI_Allreduce(SEND_ALL(a), a->rbuf, a->count, a->type, a->redop, a->comm);
}
static int c_gather(mt_op_args_t *a)
{
    return MPI_Gather(SEND_ROOT(a), a->count, a->type, a->rbuf, a->count, a->type, a->root, a->comm);
}
static int c_gatherv(mt_op_args_t *a)
{
    return MPI_Gatherv(SEND_ROOT(a), a->counts[a->rank], a->type, a->rbuf, a->counts, a->displs, a->type, a->root,
                       a->comm);
}
static int c_scatter(mt_op_args_t *a)
{
    return MPI_Scatter(a->sbuf, a->count, a->type, RECV_ROOT(a), a->count, a->type, a->root, a->comm);
}
static int c_scatterv(mt_op_args_t *a)
{
    return MPI_Scatterv(a->sbuf, a->counts, a->displs, a->type, RECV_ROOT(a), a->counts[a->rank], a->type, a->root,
                        a->comm);
}
static int c_allgather(mt_op_args_t *a)
{
    return MPI_Allgather(SEND_ALL(a), a->count, a->type, a->rbuf, a->count, a->type, a->comm);
}
static int c_allgatherv(mt_op_args_t *a)
{
    return MPI_Allgatherv(SEND_ALL(a), a->counts[a->rank], a->type, a->rbuf, a->counts, a->displs, a->type, a->comm);
}
static int c_alltoall(mt_op_args_t *a)
{
    return MPI_Alltoall(SEND_ALL(a), a->count, a->type, a->rbuf, a->count, a->type, a->comm);
}
static int c_alltoallv(mt_op_args_t *a)
{
    return MPI_Alltoallv(SEND_ALL(a), a->counts, a->displs, a->type, a->rbuf, a->rcounts, a->rdispls, a->type,
                         a->comm);
}
/* as alltoallv, with byte displacements and a type per block (all the op's type, as osu_alltoallw) */
static int c_alltoallw(mt_op_args_t *a)
{
    return MPI_Alltoallw(SEND_ALL(a), a->counts, a->wsdispls, a->wtypes, a->rbuf, a->rcounts, a->wrdispls, a->wtypes,
                         a->comm);
}
static int c_reduce_scatter(mt_op_args_t *a)
{
    return MPI_Reduce_scatter(SEND_ALL(a), a->rbuf, a->counts, a->type, a->redop, a->comm);
}
static int c_reduce_scatter_block(mt_op_args_t *a)
{
    return MPI_Reduce_scatter_block(SEND_ALL(a), a->rbuf, a->count, a->type, a->redop, a->comm);
}
static int c_scan(mt_op_args_t *a) { return MPI_Scan(SEND_ALL(a), a->rbuf, a->count, a->type, a->redop, a->comm); }
static int c_exscan(mt_op_args_t *a)
{
    return MPI_Exscan(SEND_ALL(a), a->rbuf, a->count, a->type, a->redop, a->comm);
}

/* In-place alltoallv (and alltoallw) takes the send counts from the receive
 * counts, so the count matrix must be symmetric (what i sends to j = what j
 * receives from i); the skewed pattern (rank j receives counts[j] from
 * everyone) is not. */
static int k_alltoallv(const mt_op_opts_t *o, int nprocs, char *err)
{
    if (o->in_place && o->vcounts == MT_VCOUNTS_SKEWED && nprocs != 1)
        return mt_fail(err, MT_EINVAL, "--in-place alltoallv and alltoallw need symmetric counts (MPI sends the "
                       "receive counts) and --vcounts skewed is not: use --vcounts uniform with --in-place");
    return MT_OK;
}
static int s_alltoallv(mt_op_args_t *a, char *err) { return k_alltoallv(a->opts, a->size, err); }

#define V MT_OPT_VCOUNTS
#define IP MT_OPT_IN_PLACE
#define OP(id, nm, mpi, minp, fl, blk, o, su)                                                                      \
    const mt_op_t mt_op_##id = {.name = nm, .mpi_name = mpi, .min_procs = minp, .flags = fl, .blocks = blk,      \
                                .call = c_##id, .opts = o, .info = info_latency, .setup = su}
OP(barrier, "barrier", "MPI_Barrier", 1, MT_OP_NOSIZE, one, 0, NULL);
OP(bcast, "bcast", "MPI_Bcast", 1, MT_OP_ROOTED, one, 0, NULL);
OP(reduce, "reduce", "MPI_Reduce", 1, MT_OP_ROOTED | MT_OP_REDUCTION, one, IP, NULL);
OP(allreduce, "allreduce", "MPI_Allreduce", 1, MT_OP_REDUCTION, one, IP, NULL);
OP(gather, "gather", "MPI_Gather", 1, MT_OP_ROOTED, per_rank, IP, NULL);
OP(gatherv, "gatherv", "MPI_Gatherv", 1, MT_OP_ROOTED, per_rank, V | IP, NULL);
OP(scatter, "scatter", "MPI_Scatter", 1, MT_OP_ROOTED, per_rank, IP, NULL);
OP(scatterv, "scatterv", "MPI_Scatterv", 1, MT_OP_ROOTED, per_rank, V | IP, NULL);
OP(allgather, "allgather", "MPI_Allgather", 1, 0, per_rank, IP, NULL);
OP(allgatherv, "allgatherv", "MPI_Allgatherv", 1, 0, per_rank, V | IP, NULL);
OP(alltoall, "alltoall", "MPI_Alltoall", 1, 0, per_rank, IP, NULL);
const mt_op_t mt_op_alltoallv = {.name = "alltoallv", .mpi_name = "MPI_Alltoallv", .min_procs = 1, .flags = 0,
                                 .blocks = per_rank, .call = c_alltoallv, .opts = V | IP, .info = info_latency,
                                 .setup = s_alltoallv, .check = k_alltoallv};
const mt_op_t mt_op_alltoallw = {.name = "alltoallw", .mpi_name = "MPI_Alltoallw", .min_procs = 1,
                                 .flags = MT_OP_BYTEDISPL, .blocks = per_rank, .call = c_alltoallw, .opts = V | IP,
                                 .info = info_latency, .setup = s_alltoallv, .check = k_alltoallv};
OP(reduce_scatter, "reduce_scatter", "MPI_Reduce_scatter", 1, MT_OP_REDUCTION, per_rank, V | IP, NULL);
OP(reduce_scatter_block, "reduce_scatter_block", "MPI_Reduce_scatter_block", 1, MT_OP_REDUCTION, per_rank, IP, NULL);
OP(scan, "scan", "MPI_Scan", 1, MT_OP_REDUCTION, one, IP, NULL);
OP(exscan, "exscan", "MPI_Exscan", 2, MT_OP_REDUCTION, one, IP, NULL);
