/* mpitempo: the blocking MPI collectives. msize is the block a rank
 * contributes or receives (IMB convention): Bcast/Reduce/Allreduce/Scan/Exscan
 * move msize bytes per rank; Gather/Scatter/Allgather/Alltoall(v) move one
 * block of msize bytes per rank pair; Reduce_scatter(_block) delivers msize
 * bytes to every rank (input p x msize). */
#include "op/op.h"

static int one(int p) { (void)p; return 1; }
static int per_rank(int p) { return p; }

static int c_barrier(mt_op_args_t *a) { return MPI_Barrier(a->comm); }
static int c_bcast(mt_op_args_t *a) { return MPI_Bcast(a->sbuf, a->count, a->type, a->root, a->comm); }
static int c_reduce(mt_op_args_t *a)
{
    return MPI_Reduce(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->root, a->comm);
}
static int c_allreduce(mt_op_args_t *a)
{
    return MPI_Allreduce(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm);
}
static int c_gather(mt_op_args_t *a)
{
    return MPI_Gather(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->root, a->comm);
}
static int c_gatherv(mt_op_args_t *a)
{
    return MPI_Gatherv(a->sbuf, a->count, a->type, a->rbuf, a->counts, a->displs, a->type, a->root, a->comm);
}
static int c_scatter(mt_op_args_t *a)
{
    return MPI_Scatter(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->root, a->comm);
}
static int c_scatterv(mt_op_args_t *a)
{
    return MPI_Scatterv(a->sbuf, a->counts, a->displs, a->type, a->rbuf, a->count, a->type, a->root, a->comm);
}
static int c_allgather(mt_op_args_t *a)
{
    return MPI_Allgather(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->comm);
}
static int c_allgatherv(mt_op_args_t *a)
{
    return MPI_Allgatherv(a->sbuf, a->count, a->type, a->rbuf, a->counts, a->displs, a->type, a->comm);
}
static int c_alltoall(mt_op_args_t *a)
{
    return MPI_Alltoall(a->sbuf, a->count, a->type, a->rbuf, a->count, a->type, a->comm);
}
static int c_alltoallv(mt_op_args_t *a)
{
    return MPI_Alltoallv(a->sbuf, a->counts, a->displs, a->type, a->rbuf, a->counts, a->displs, a->type,
                         a->comm);
}
static int c_reduce_scatter(mt_op_args_t *a)
{
    return MPI_Reduce_scatter(a->sbuf, a->rbuf, a->counts, a->type, a->redop, a->comm);
}
static int c_reduce_scatter_block(mt_op_args_t *a)
{
    return MPI_Reduce_scatter_block(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm);
}
static int c_scan(mt_op_args_t *a) { return MPI_Scan(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm); }
static int c_exscan(mt_op_args_t *a)
{
    return MPI_Exscan(a->sbuf, a->rbuf, a->count, a->type, a->redop, a->comm);
}

const mt_op_t mt_op_barrier = {.name = "barrier", .mpi_name = "MPI_Barrier", .min_procs = 1, .flags = MT_OP_NOSIZE, .blocks = one, .call = c_barrier};
const mt_op_t mt_op_bcast = {.name = "bcast", .mpi_name = "MPI_Bcast", .min_procs = 1, .flags = MT_OP_ROOTED, .blocks = one, .call = c_bcast};
const mt_op_t mt_op_reduce = {.name = "reduce", .mpi_name = "MPI_Reduce", .min_procs = 1, .flags = MT_OP_ROOTED | MT_OP_REDUCTION, .blocks = one, .call = c_reduce};
const mt_op_t mt_op_allreduce = {.name = "allreduce", .mpi_name = "MPI_Allreduce", .min_procs = 1, .flags = MT_OP_REDUCTION, .blocks = one, .call = c_allreduce};
const mt_op_t mt_op_gather = {.name = "gather", .mpi_name = "MPI_Gather", .min_procs = 1, .flags = MT_OP_ROOTED, .blocks = per_rank, .call = c_gather};
const mt_op_t mt_op_gatherv = {.name = "gatherv", .mpi_name = "MPI_Gatherv", .min_procs = 1, .flags = MT_OP_ROOTED, .blocks = per_rank, .call = c_gatherv};
const mt_op_t mt_op_scatter = {.name = "scatter", .mpi_name = "MPI_Scatter", .min_procs = 1, .flags = MT_OP_ROOTED, .blocks = per_rank, .call = c_scatter};
const mt_op_t mt_op_scatterv = {.name = "scatterv", .mpi_name = "MPI_Scatterv", .min_procs = 1, .flags = MT_OP_ROOTED, .blocks = per_rank, .call = c_scatterv};
const mt_op_t mt_op_allgather = {.name = "allgather", .mpi_name = "MPI_Allgather", .min_procs = 1, .flags = 0, .blocks = per_rank, .call = c_allgather};
const mt_op_t mt_op_allgatherv = {.name = "allgatherv", .mpi_name = "MPI_Allgatherv", .min_procs = 1, .flags = 0, .blocks = per_rank, .call = c_allgatherv};
const mt_op_t mt_op_alltoall = {.name = "alltoall", .mpi_name = "MPI_Alltoall", .min_procs = 1, .flags = 0, .blocks = per_rank, .call = c_alltoall};
const mt_op_t mt_op_alltoallv = {.name = "alltoallv", .mpi_name = "MPI_Alltoallv", .min_procs = 1, .flags = 0, .blocks = per_rank, .call = c_alltoallv};
const mt_op_t mt_op_reduce_scatter = {.name = "reduce_scatter", .mpi_name = "MPI_Reduce_scatter", .min_procs = 1, .flags = MT_OP_REDUCTION, .blocks = per_rank, .call = c_reduce_scatter};
const mt_op_t mt_op_reduce_scatter_block = {.name = "reduce_scatter_block", .mpi_name = "MPI_Reduce_scatter_block", .min_procs = 1, .flags = MT_OP_REDUCTION, .blocks = per_rank, .call = c_reduce_scatter_block};
const mt_op_t mt_op_scan = {.name = "scan", .mpi_name = "MPI_Scan", .min_procs = 1, .flags = MT_OP_REDUCTION, .blocks = one, .call = c_scan};
const mt_op_t mt_op_exscan = {.name = "exscan", .mpi_name = "MPI_Exscan", .min_procs = 2, .flags = MT_OP_REDUCTION, .blocks = one, .call = c_exscan};
