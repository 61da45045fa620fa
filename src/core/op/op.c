/* mpitempo: operation, datatype and reduction registries and buffer set-up. */
#include "op/op.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const mt_op_t mt_op_barrier, mt_op_bcast, mt_op_reduce, mt_op_allreduce, mt_op_gather,
    mt_op_gatherv, mt_op_scatter, mt_op_scatterv, mt_op_allgather, mt_op_allgatherv, mt_op_alltoall,
    mt_op_alltoallv, mt_op_alltoallw, mt_op_reduce_scatter, mt_op_reduce_scatter_block, mt_op_scan, mt_op_exscan, mt_op_delay;
/* our barrier algorithms over point-to-point (op/barrier/) */
extern const mt_op_t mt_op_bar_central, mt_op_bar_combining, mt_op_bar_fway, mt_op_bar_mcs, mt_op_bar_tournament,
    mt_op_bar_bst, mt_op_bar_butterfly, mt_op_bar_pairwise, mt_op_bar_dissemination;

/* the blocking collectives, the synthetic op and our barrier algorithms */
const mt_op_t *const mt_ops_coll[] = {
    &mt_op_barrier,   &mt_op_bcast,     &mt_op_reduce,   &mt_op_allreduce,
    &mt_op_gather,    &mt_op_gatherv,   &mt_op_scatter,  &mt_op_scatterv,
    &mt_op_allgather, &mt_op_allgatherv, &mt_op_alltoall, &mt_op_alltoallv, &mt_op_alltoallw,
    &mt_op_reduce_scatter, &mt_op_reduce_scatter_block, &mt_op_scan, &mt_op_exscan,
    &mt_op_delay,
    &mt_op_bar_central, &mt_op_bar_combining, &mt_op_bar_fway, &mt_op_bar_mcs, &mt_op_bar_tournament,
    &mt_op_bar_bst, &mt_op_bar_butterfly, &mt_op_bar_pairwise, &mt_op_bar_dissemination,
    NULL,
};

/* one line per family file */
static const mt_op_t *const *const families[] = {
    mt_ops_coll, mt_ops_p2p, mt_ops_nbc, mt_ops_rma, mt_ops_persist, mt_ops_neighbor,
};

int mt_op_count(void)
{
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const mt_op_t *const *o = families[f]; *o; o++) n++;
    return n;
}

const mt_op_t *mt_op_at(int i)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const mt_op_t *const *o = families[f]; *o; o++)
            if (i-- == 0) return *o;
    return NULL;
}

const mt_dtype_t mt_dtypes[] = {
    {"byte", MPI_BYTE, MPI_UNSIGNED_CHAR, 1},
    {"char", MPI_CHAR, MPI_SIGNED_CHAR, 1},
    {"int", MPI_INT, MPI_INT, (int)sizeof(int)},
    {"long", MPI_LONG, MPI_LONG, (int)sizeof(long)},
    {"int64", MPI_INT64_T, MPI_INT64_T, 8},
    {"float", MPI_FLOAT, MPI_FLOAT, (int)sizeof(float)},
    {"double", MPI_DOUBLE, MPI_DOUBLE, (int)sizeof(double)},
};
const int mt_ndtypes = (int)(sizeof(mt_dtypes) / sizeof(mt_dtypes[0]));

const mt_redop_t mt_redops[] = {
    {"sum", MPI_SUM}, {"prod", MPI_PROD}, {"max", MPI_MAX}, {"min", MPI_MIN},
};
const int mt_nredops = (int)(sizeof(mt_redops) / sizeof(mt_redops[0]));

/* Instances of op families ("barrier:combining:4"), interned by name so that
 * the same name is the same op (mt_exp_build's duplicate check compares
 * pointers). They live until the process ends. */
#define MT_OP_MAX_INSTANCES 64
static mt_op_t *op_instances[MT_OP_MAX_INSTANCES];
static int op_ninstances;

const mt_op_t *mt_op_lookup(const char *name, char *err)
{
    char allowed[4096];
    int nops = mt_op_count();
    for (int i = 0; i < nops; i++) {
        const mt_op_t *op = mt_op_at(i);
        size_t n = strlen(op->name);
        if (!(op->flags & MT_OP_PARAM)) {
            if (strcmp(op->name, name) == 0) return op;
            continue;
        }
        if (strncmp(op->name, name, n) != 0 || (name[n] != '\0' && name[n] != ':')) continue;
        if (name[n] == '\0' || name[n + 1] == '\0') {
            mt_fail(err, MT_EINVAL, "op '%s' needs its %s: %s:N with N >= %d (e.g. %s:4)", name, op->param_name,
                    op->name, op->param_min, op->name);
            return NULL;
        }
        long long v;
        char what[128], why[MT_ERRLEN];
        snprintf(what, sizeof what, "%s of '%s'", op->param_name, name);
        if (mt_parse_int(name + n + 1, what, op->param_min, 1 << 20, &v, why) != MT_OK) {
            mt_fail(err, MT_EINVAL, "%s (%s:N needs an integer N >= %d)", why, op->name, op->param_min);
            return NULL;
        }
        char canon[128];
        snprintf(canon, sizeof canon, "%s:%lld", op->name, v);
        for (int k = 0; k < op_ninstances; k++)
            if (strcmp(op_instances[k]->name, canon) == 0) return op_instances[k];
        mt_op_t *inst = op_ninstances < MT_OP_MAX_INSTANCES ? malloc(sizeof *inst) : NULL;
        char *nm = inst ? strdup(canon) : NULL;
        if (!nm) {
            free(inst);
            mt_fail(err, MT_ENOMEM, "cannot create op '%s' (at most %d parametrised ops per run)", canon,
                    MT_OP_MAX_INSTANCES);
            return NULL;
        }
        *inst = *op;
        inst->name = nm;
        inst->param = (int)v;
        op_instances[op_ninstances++] = inst;
        return inst;
    }
    mt_op_names(allowed, sizeof allowed);
    mt_fail(err, MT_EINVAL, "unknown op '%s' (allowed: %s)", name, allowed);
    return NULL;
}

const mt_op_t *mt_op_find(const char *name)
{
    char err[MT_ERRLEN];
    return mt_op_lookup(name, err);
}

const mt_dtype_t *mt_dtype_find(const char *name)
{
    for (int i = 0; i < mt_ndtypes; i++)
        if (strcmp(mt_dtypes[i].name, name) == 0) return &mt_dtypes[i];
    return NULL;
}

const mt_redop_t *mt_redop_find(const char *name)
{
    for (int i = 0; i < mt_nredops; i++)
        if (strcmp(mt_redops[i].name, name) == 0) return &mt_redops[i];
    return NULL;
}

void mt_op_write_list(mt_json_t *j)
{
    mt_json_key(j, "ops");
    mt_json_arr_begin(j);
    int nops = mt_op_count();
    for (int i = 0; i < nops; i++) {
        const mt_op_t *op = mt_op_at(i);
        char why[MT_ERRLEN] = "";
        int avail = !op->available || op->available(why, sizeof why);
        mt_json_obj_begin(j);
        mt_json_kstr(j, "name", op->name);
        mt_json_kstr(j, "mpi_name", op->mpi_name);
        mt_json_kint(j, "min_procs", op->min_procs);
        mt_json_kbool(j, "rooted", (op->flags & MT_OP_ROOTED) != 0);
        mt_json_kbool(j, "reduction", (op->flags & MT_OP_REDUCTION) != 0);
        mt_json_kbool(j, "sizeless", (op->flags & MT_OP_NOSIZE) != 0);
        mt_json_kstr(j, "family", op->family ? op->family : "collective");
        mt_json_kbool(j, "pairs", (op->flags & MT_OP_PAIRS) != 0);
        mt_json_kbool(j, "available", avail);
        if (!avail) mt_json_kstr(j, "unavailable_reason", why);
        if (op->flags & MT_OP_PARAM) {
            mt_json_kstr(j, "param", op->param_name);
            mt_json_kint(j, "param_min", op->param_min);
        }
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
}

void mt_dtype_write_list(mt_json_t *j)
{
    mt_json_key(j, "datatypes");
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_ndtypes; i++) mt_json_str(j, mt_dtypes[i].name);
    mt_json_arr_end(j);
    mt_json_key(j, "redops");
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_nredops; i++) mt_json_str(j, mt_redops[i].name);
    mt_json_arr_end(j);
}

void mt_op_names(char *buf, size_t len)
{
    buf[0] = '\0';
    int nops = mt_op_count();
    for (int i = 0; i < nops; i++) {
        const mt_op_t *op = mt_op_at(i);
        char nm[128];
        snprintf(nm, sizeof nm, "%s%s", op->name, (op->flags & MT_OP_PARAM) ? ":N" : "");
        mt_names_add(buf, len, nm);
    }
}
void mt_dtype_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_ndtypes; i++) mt_names_add(buf, len, mt_dtypes[i].name);
}
void mt_redop_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_nredops; i++) mt_names_add(buf, len, mt_redops[i].name);
}

/* the options at their defaults, for callers that measure ops without --bw-window etc. (logp, tree) */
static const mt_op_opts_t default_opts = {.window = 64, .rma_sync = MT_RMA_FLUSH, .rma_win = MT_WIN_ALLOCATE, .rma_epochs = 1,
                                          .vcounts = MT_VCOUNTS_UNIFORM, .compute_s = -1, .topo = MT_TOPO_CART,
                                          .overlap_tests = 0};

void *mt_op_alloc(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t align = pg > 0 ? (size_t)pg : 4096;
    void *p = NULL;
    if (posix_memalign(&p, align, n > 0 ? n : align) != 0) return NULL;
    return p;
}

void mt_op_args_init(mt_op_args_t *a, MPI_Comm comm, const mt_dtype_t *dt, MPI_Op redop,
                     const struct mt_timer_inst *timer, const mt_op_opts_t *o)
{
    memset(a, 0, sizeof *a);
    a->comm = comm;
    MPI_Comm_rank(comm, &a->rank);
    MPI_Comm_size(comm, &a->size);
    a->dtype = dt;
    a->redop = redop;
    a->timer = timer;
    a->opts = o;
}

int mt_op_prepare(const mt_op_t *op, mt_op_args_t *a, int64_t msize, char *err)
{
    a->op = op;
    if (!a->opts) a->opts = &default_opts;
    a->param = op->param;
    a->state = NULL;
    a->sbuf = a->rbuf = NULL;
    a->sbase = a->rbase = NULL;
    a->pool = 0;
    a->counts = a->displs = a->rcounts = a->rdispls = NULL;
    a->wsdispls = a->wrdispls = NULL;
    a->wtypes = NULL;
    a->type = (op->flags & MT_OP_REDUCTION) ? a->dtype->reduce : a->dtype->move;
    if (op->flags & MT_OP_NOSIZE) {
        a->msize = 0;
        a->count = 0;
    } else {
        /* 0 B is a message of count 0 (every MPI call allows it); a size between 0 and one element is refused */
        if (msize < 0 || (msize > 0 && msize < a->dtype->size))
            return mt_fail(err, MT_EINVAL,
                           "message size %lld B is smaller than one element of datatype '%s' (%d B; 0 B is allowed)",
                           (long long)msize, a->dtype->name, a->dtype->size);
        if (msize / a->dtype->size > INT32_MAX)
            return mt_fail(err, MT_EINVAL, "message size %lld B is too large for an int count",
                           (long long)msize);
        a->msize = msize;
        a->count = (int)(msize / a->dtype->size);
    }
    int nb = op->blocks ? op->blocks(a->size) : 1;
    size_t blockbytes = (size_t)a->count * (size_t)a->dtype->size;
    a->bufbytes = blockbytes * (size_t)nb;
    int skewed = (op->opts & MT_OPT_VCOUNTS) && a->opts->vcounts == MT_VCOUNTS_SKEWED;
    if (skewed) /* a skewed block is up to 2 x count (+1 element of rounding) */
        a->bufbytes = 2 * a->bufbytes + (size_t)nb * (size_t)a->dtype->size;
    if ((op->flags & MT_OP_BYTEDISPL) && a->bufbytes > (size_t)INT32_MAX)
        return mt_fail(err, MT_EINVAL, "%s at %lld B on %d ranks needs %zu B of buffer, above the %d B that its int "
                       "byte displacements reach", op->mpi_name, (long long)msize, a->size, a->bufbytes, INT32_MAX);
    size_t alloc = a->bufbytes > 0 ? a->bufbytes : 64;
    a->sbuf = mt_op_alloc(alloc);
    a->rbuf = mt_op_alloc(alloc);
    a->counts = malloc(sizeof(int) * (size_t)a->size);
    a->displs = malloc(sizeof(int) * (size_t)a->size);
    a->rcounts = malloc(sizeof(int) * (size_t)a->size);
    a->rdispls = malloc(sizeof(int) * (size_t)a->size);
    a->wsdispls = malloc(sizeof(int) * (size_t)a->size);
    a->wrdispls = malloc(sizeof(int) * (size_t)a->size);
    a->wtypes = malloc(sizeof(MPI_Datatype) * (size_t)a->size);
    if (!a->sbuf || !a->rbuf || !a->counts || !a->displs || !a->rcounts || !a->rdispls || !a->wsdispls ||
        !a->wrdispls || !a->wtypes) {
        mt_op_release(a);
        return mt_fail(err, MT_ENOMEM, "cannot allocate %zu bytes of buffers for %s at %lld B", 2 * alloc,
                       op->mpi_name, (long long)msize);
    }
    /* small values: sums stay inside every type's range; touching the pages
     * also keeps first-touch page faults out of the measurements */
    memset(a->sbuf, 1, alloc);
    memset(a->rbuf, 0, alloc);
    mt_op_vcounts(skewed ? MT_VCOUNTS_SKEWED : MT_VCOUNTS_UNIFORM, a->count, a->size, a->counts, a->displs);
    for (int i = 0; i < a->size; i++) {
        a->rcounts[i] = a->counts[a->rank];
        a->rdispls[i] = i * a->counts[a->rank];
        /* byte displacements of alltoallw (int, as MPI_Alltoallw takes them: the buffers are below
         * INT_MAX bytes where it is used, as with alltoallv's element displacements) */
        a->wsdispls[i] = (int)((size_t)a->displs[i] * (size_t)a->dtype->size);
        a->wrdispls[i] = (int)((size_t)a->rdispls[i] * (size_t)a->dtype->size);
        a->wtypes[i] = a->type;
    }
    if (op->setup) {
        int rc = op->setup(a, err);
        if (rc != MT_OK) {
            mt_op_release(a);
            return rc;
        }
    }
    return MT_OK;
}

void mt_op_release(mt_op_args_t *a)
{
    if (a->state && a->op && a->op->teardown) a->op->teardown(a);
    a->state = NULL;
    if (a->sbase) { /* cycling pools replaced the buffers */
        free(a->sbase);
        free(a->rbase);
        a->sbase = a->rbase = NULL;
    } else {
        free(a->sbuf);
        free(a->rbuf);
    }
    free(a->counts);
    free(a->displs);
    free(a->rcounts);
    free(a->rdispls);
    free(a->wsdispls);
    free(a->wrdispls);
    free(a->wtypes);
    a->sbuf = a->rbuf = NULL;
    a->counts = a->displs = a->rcounts = a->rdispls = NULL;
    a->wsdispls = a->wrdispls = NULL;
    a->wtypes = NULL;
}
