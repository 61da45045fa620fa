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

const mt_op_t mt_op_barrier = {"barrier", "MPI_Barrier", 1, MT_OP_NOSIZE, one, c_barrier};
const mt_op_t mt_op_bcast = {"bcast", "MPI_Bcast", 1, MT_OP_ROOTED, one, c_bcast};
const mt_op_t mt_op_reduce = {"reduce", "MPI_Reduce", 1, MT_OP_ROOTED | MT_OP_REDUCTION, one, c_reduce};
const mt_op_t mt_op_allreduce = {"allreduce", "MPI_Allreduce", 1, MT_OP_REDUCTION, one, c_allreduce};
const mt_op_t mt_op_gather = {"gather", "MPI_Gather", 1, MT_OP_ROOTED, per_rank, c_gather};
const mt_op_t mt_op_gatherv = {"gatherv", "MPI_Gatherv", 1, MT_OP_ROOTED, per_rank, c_gatherv};
const mt_op_t mt_op_scatter = {"scatter", "MPI_Scatter", 1, MT_OP_ROOTED, per_rank, c_scatter};
const mt_op_t mt_op_scatterv = {"scatterv", "MPI_Scatterv", 1, MT_OP_ROOTED, per_rank, c_scatterv};
const mt_op_t mt_op_allgather = {"allgather", "MPI_Allgather", 1, 0, per_rank, c_allgather};
const mt_op_t mt_op_allgatherv = {"allgatherv", "MPI_Allgatherv", 1, 0, per_rank, c_allgatherv};
const mt_op_t mt_op_alltoall = {"alltoall", "MPI_Alltoall", 1, 0, per_rank, c_alltoall};
const mt_op_t mt_op_alltoallv = {"alltoallv", "MPI_Alltoallv", 1, 0, per_rank, c_alltoallv};
const mt_op_t mt_op_reduce_scatter = {"reduce_scatter", "MPI_Reduce_scatter", 1, MT_OP_REDUCTION, per_rank,
                                      c_reduce_scatter};
const mt_op_t mt_op_reduce_scatter_block = {"reduce_scatter_block", "MPI_Reduce_scatter_block", 1,
                                            MT_OP_REDUCTION, per_rank, c_reduce_scatter_block};
const mt_op_t mt_op_scan = {"scan", "MPI_Scan", 1, MT_OP_REDUCTION, one, c_scan};
const mt_op_t mt_op_exscan = {"exscan", "MPI_Exscan", 2, MT_OP_REDUCTION, one, c_exscan};
