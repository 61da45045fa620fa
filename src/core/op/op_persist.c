/* mpitempo: the persistent collectives (MPI-4.0, section 6.13): one op per
 * blocking collective (alltoallw included), named <op>_init.
 *
 * Setup (outside the timed region, collective over the communicator): the
 * MPI_<Op>_init call (info MPI_INFO_NULL) on buffers of the op's own state,
 * with the same counts as the blocking op (the v-variants read --vcounts).
 * One call (the timed region), on every rank of the communicator (rooted ops
 * use --root): MPI_Start + MPI_Wait of that request. Teardown: MPI_Request_free.
 * bytes_per_call = msgs_per_call = 0: latency ops, as the blocking ones.
 * Flags, blocks and minimum ranks are those of the blocking op.
 *
 * The buffers are the op's own: the request binds its buffers at init, so
 * --cache cycle (which moves a->sbuf/a->rbuf between calls) does not move them.
 * OSU 7.4 has them as osu_<name>_persistent (c/mpi/collective/persistent: no
 * scan, exscan, reduce_scatter_block); IMB-MPI1 has none.
 *
 * Built only where MPI_Allreduce_init links (CMake: MT_HAVE_PERSISTENT_COLL);
 * elsewhere each op's available hook says which library lacks them. */
#include "op/op.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int one(int p) { (void)p; return 1; }
static int per_rank(int p) { return p; }

static void info_latency(mt_op_args_t *a, mt_op_info_t *out)
{
    (void)a;
    memset(out, 0, sizeof *out);
}

#ifdef MT_HAVE_PERSISTENT_COLL

typedef struct pstate {
    MPI_Request req;
    void *s, *r; /* own buffers of a->bufbytes each */
} pstate_t;

typedef int (*init_fn)(mt_op_args_t *a, void *s, void *r, MPI_Request *req);

#define INFO MPI_INFO_NULL
static int i_barrier(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    (void)s, (void)r;
    return MPI_Barrier_init(a->comm, INFO, q);
}
static int i_bcast(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    (void)r;
    return MPI_Bcast_init(s, a->count, a->type, a->root, a->comm, INFO, q);
}
static int i_reduce(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Reduce_init(s, r, a->count, a->type, a->redop, a->root, a->comm, INFO, q);
}
static int i_allreduce(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Allreduce_init(s, r, a->count, a->type, a->redop, a->comm, INFO, q);
}
static int i_gather(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Gather_init(s, a->count, a->type, r, a->count, a->type, a->root, a->comm, INFO, q);
}
static int i_gatherv(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Gatherv_init(s, a->counts[a->rank], a->type, r, a->counts, a->displs, a->type, a->root, a->comm, INFO,
                            q);
}
static int i_scatter(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Scatter_init(s, a->count, a->type, r, a->count, a->type, a->root, a->comm, INFO, q);
}
static int i_scatterv(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Scatterv_init(s, a->counts, a->displs, a->type, r, a->counts[a->rank], a->type, a->root, a->comm,
                             INFO, q);
}
static int i_allgather(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Allgather_init(s, a->count, a->type, r, a->count, a->type, a->comm, INFO, q);
}
static int i_allgatherv(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Allgatherv_init(s, a->counts[a->rank], a->type, r, a->counts, a->displs, a->type, a->comm, INFO, q);
}
static int i_alltoall(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Alltoall_init(s, a->count, a->type, r, a->count, a->type, a->comm, INFO, q);
}
static int i_alltoallv(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Alltoallv_init(s, a->counts, a->displs, a->type, r, a->rcounts, a->rdispls, a->type, a->comm, INFO,
                              q);
}
static int i_alltoallw(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Alltoallw_init(s, a->counts, a->wsdispls, a->wtypes, r, a->rcounts, a->wrdispls, a->wtypes, a->comm,
                              INFO, q);
}
static int i_reduce_scatter(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Reduce_scatter_init(s, r, a->counts, a->type, a->redop, a->comm, INFO, q);
}
static int i_reduce_scatter_block(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Reduce_scatter_block_init(s, r, a->count, a->type, a->redop, a->comm, INFO, q);
}
static int i_scan(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Scan_init(s, r, a->count, a->type, a->redop, a->comm, INFO, q);
}
static int i_exscan(mt_op_args_t *a, void *s, void *r, MPI_Request *q)
{
    return MPI_Exscan_init(s, r, a->count, a->type, a->redop, a->comm, INFO, q);
}

static int p_setup(mt_op_args_t *a, char *err, init_fn init)
{
    size_t n = a->bufbytes > 0 ? a->bufbytes : 64;
    pstate_t *st = calloc(1, sizeof *st);
    void *s = mt_op_alloc(n), *r = mt_op_alloc(n);
    if (!st || !s || !r) {
        free(st);
        free(s);
        free(r);
        return mt_fail(err, MT_ENOMEM, "cannot allocate 2 x %zu bytes of buffers for %s", n, a->op->mpi_name);
    }
    memset(s, 1, n);
    memset(r, 0, n);
    st->s = s;
    st->r = r;
    st->req = MPI_REQUEST_NULL;
    int rc = init(a, s, r, &st->req);
    if (rc != MPI_SUCCESS) {
        free(s);
        free(r);
        free(st);
        return mt_fail(err, MT_EMPI, "%s failed (MPI error %d)", a->op->mpi_name, rc);
    }
    a->state = st;
    return MT_OK;
}

static void p_teardown(mt_op_args_t *a)
{
    pstate_t *st = a->state;
    if (st->req != MPI_REQUEST_NULL) MPI_Request_free(&st->req);
    free(st->s);
    free(st->r);
    free(st);
}

static int p_call(mt_op_args_t *a)
{
    pstate_t *st = a->state;
    int rc = MPI_Start(&st->req);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_Wait(&st->req, MPI_STATUS_IGNORE);
}

static int p_available(char *why, size_t len)
{
    (void)why, (void)len;
    return 1;
}

#define SETUP(id) \
    static int s_##id(mt_op_args_t *a, char *err) { return p_setup(a, err, i_##id); }

#else /* no MPI-4 persistent collectives in this MPI library (or -DMPITEMPO_NO_PERSISTENT=ON) */

static int p_available(char *why, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int n = 0;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS || !v[0]) snprintf(v, sizeof v, "this MPI library");
    v[sizeof v - 1] = '\0';
    v[strcspn(v, "\r\n")] = '\0';
    /* one line: runs of blanks and tabs as one space, none at the end */
    size_t o = 0;
    for (size_t i = 0; v[i]; i++) {
        int blank = v[i] == ' ' || v[i] == '\t';
        if (blank && (o == 0 || v[o - 1] == ' ')) continue;
        v[o++] = blank ? ' ' : v[i];
    }
    while (o > 0 && (v[o - 1] == ' ' || v[o - 1] == ',')) o--;
    v[o] = '\0';
    snprintf(why, len, "%s has no MPI-4 persistent collectives (MPI_Allreduce_init)", v);
    return 0;
}

static int p_setup_none(mt_op_args_t *a, char *err)
{
    char why[MT_ERRLEN];
    p_available(why, sizeof why);
    return mt_fail(err, MT_EUNSUP, "%s: %s", a->op->mpi_name, why);
}
static void p_teardown(mt_op_args_t *a) { (void)a; }
static int p_call(mt_op_args_t *a)
{
    (void)a;
    return MPI_ERR_OTHER;
}

#define SETUP(id) \
    static int s_##id(mt_op_args_t *a, char *err) { return p_setup_none(a, err); }

#endif

#define P(id, mpi, minp, fl, blk, o)                                                                             \
    SETUP(id)                                                                                                    \
    static const mt_op_t mt_op_##id##_init = {.name = #id "_init", .mpi_name = mpi, .min_procs = minp, .flags = fl,    \
                                       .blocks = blk, .call = p_call, .setup = s_##id, .teardown = p_teardown,  \
                                       .family = "persistent", .opts = o, .info = info_latency,                  \
                                       .available = p_available};
P(barrier, "MPI_Barrier_init", 1, MT_OP_NOSIZE, one, 0)
P(bcast, "MPI_Bcast_init", 1, MT_OP_ROOTED, one, 0)
P(reduce, "MPI_Reduce_init", 1, MT_OP_ROOTED | MT_OP_REDUCTION, one, 0)
P(allreduce, "MPI_Allreduce_init", 1, MT_OP_REDUCTION, one, 0)
P(gather, "MPI_Gather_init", 1, MT_OP_ROOTED, per_rank, 0)
P(gatherv, "MPI_Gatherv_init", 1, MT_OP_ROOTED, per_rank, MT_OPT_VCOUNTS)
P(scatter, "MPI_Scatter_init", 1, MT_OP_ROOTED, per_rank, 0)
P(scatterv, "MPI_Scatterv_init", 1, MT_OP_ROOTED, per_rank, MT_OPT_VCOUNTS)
P(allgather, "MPI_Allgather_init", 1, 0, per_rank, 0)
P(allgatherv, "MPI_Allgatherv_init", 1, 0, per_rank, MT_OPT_VCOUNTS)
P(alltoall, "MPI_Alltoall_init", 1, 0, per_rank, 0)
P(alltoallv, "MPI_Alltoallv_init", 1, 0, per_rank, MT_OPT_VCOUNTS)
P(alltoallw, "MPI_Alltoallw_init", 1, MT_OP_BYTEDISPL, per_rank, MT_OPT_VCOUNTS)
P(reduce_scatter, "MPI_Reduce_scatter_init", 1, MT_OP_REDUCTION, per_rank, MT_OPT_VCOUNTS)
P(reduce_scatter_block, "MPI_Reduce_scatter_block_init", 1, MT_OP_REDUCTION, per_rank, 0)
P(scan, "MPI_Scan_init", 1, MT_OP_REDUCTION, one, 0)
P(exscan, "MPI_Exscan_init", 2, MT_OP_REDUCTION, one, 0)

const mt_op_t *const mt_ops_persist[] = {
    &mt_op_barrier_init,   &mt_op_bcast_init,          &mt_op_reduce_init,         &mt_op_allreduce_init,
    &mt_op_gather_init,    &mt_op_gatherv_init,        &mt_op_scatter_init,        &mt_op_scatterv_init,
    &mt_op_allgather_init, &mt_op_allgatherv_init,     &mt_op_alltoall_init,       &mt_op_alltoallv_init,
    &mt_op_alltoallw_init,
    &mt_op_reduce_scatter_init, &mt_op_reduce_scatter_block_init, &mt_op_scan_init, &mt_op_exscan_init,
    NULL,
};
