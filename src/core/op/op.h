/* mpitempo: operations under measurement. An operation is a registry entry
 * (op.c) with a call function; buffers and count arrays are prepared outside
 * the timed region by mt_op_prepare. A new operation is a new entry. */
#ifndef MT_OP_H
#define MT_OP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

enum {
    MT_OP_ROOTED = 1,     /* has a root (Bcast, Reduce, Gather, ...) */
    MT_OP_REDUCTION = 2,  /* uses a reduction operator: needs a numeric type */
    MT_OP_NOSIZE = 4,     /* takes no data (Barrier): message size is ignored, recorded as 0 */
    MT_OP_SYNTHETIC = 8,  /* not an MPI call (e.g. delay) */
    MT_OP_PARAM = 16,     /* a family: the name takes ":N" (e.g. barrier:combining:4), N >= param_min */
};

/* A datatype choice: the type used to move data and the numeric type of the
 * same size used by reductions (MPI_BYTE cannot be reduced). */
typedef struct mt_dtype {
    const char *name;
    MPI_Datatype move;
    MPI_Datatype reduce;
    int size;
} mt_dtype_t;

typedef struct mt_redop {
    const char *name;
    MPI_Op op;
} mt_redop_t;

/* Everything a call needs, prepared by mt_op_prepare. */
typedef struct mt_op_args {
    MPI_Comm comm;
    int rank, size, root;
    const mt_dtype_t *dtype;
    MPI_Datatype type;    /* dtype->move or dtype->reduce, chosen for the op */
    MPI_Op redop;
    int64_t msize;        /* requested bytes per block */
    int count;            /* elements per block: floor(msize / type size) */
    void *sbuf, *rbuf;    /* each of bufbytes bytes */
    size_t bufbytes;
    int *counts, *displs; /* per-rank block counts (all = count) and displacements */
    void *sbase, *rbase;  /* cache cycling: pools that sbuf/rbuf point into (NULL otherwise) */
    size_t pool;          /* bytes of each pool */
    double delay_s;       /* synthetic op "delay": this rank's busy-wait */
    const struct mt_timer_inst *timer; /* for synthetic ops that wait */
    int param;            /* MT_OP_PARAM ops: the N of "name:N" (e.g. the arity) */
    const struct mt_op *op; /* set by mt_op_prepare */
    void *state;          /* ops with a setup hook: their private state (e.g. a duplicated communicator) */
} mt_op_args_t;

typedef struct mt_op {
    const char *name;      /* command-line name: lower case, e.g. "allreduce" */
    const char *mpi_name;  /* e.g. "MPI_Allreduce" */
    int min_procs;
    unsigned flags;
    /* buffer bytes needed per buffer, as a multiple of the block size */
    int (*blocks)(int nprocs);
    int (*call)(mt_op_args_t *a);
    /* optional, collective over a->comm: set up a->state in mt_op_prepare
     * (outside the timed region) and free it in mt_op_release */
    int (*setup)(mt_op_args_t *a, char *err);
    void (*teardown)(mt_op_args_t *a);
    /* MT_OP_PARAM: what N means ("arity"), its minimum, and the N of an
     * instance returned by mt_op_find (0 in the registry's template) */
    const char *param_name;
    int param_min;
    int param;
} mt_op_t;

extern const mt_op_t *const mt_ops[];
extern const int mt_nops;
extern const mt_dtype_t mt_dtypes[];
extern const int mt_ndtypes;
extern const mt_redop_t mt_redops[];
extern const int mt_nredops;

/* The op called name, or NULL. A family name with its parameter
 * ("barrier:combining:4") gives one instance per distinct name (the same
 * pointer for the same name), with its own name and param. */
const mt_op_t *mt_op_find(const char *name);
/* Like mt_op_find, with a one-line reason when name is not an op: unknown
 * (listing the allowed names), a family without ":N", or N out of range. */
const mt_op_t *mt_op_lookup(const char *name, char *err);
const mt_dtype_t *mt_dtype_find(const char *name);
const mt_redop_t *mt_redop_find(const char *name);
/* --list: the "ops" key, and the "datatypes" and "redops" keys (into an open object) */
void mt_op_write_list(mt_json_t *j);
void mt_dtype_write_list(mt_json_t *j);
/* comma-separated names for error messages */
void mt_op_names(char *buf, size_t len);
void mt_dtype_names(char *buf, size_t len);
void mt_redop_names(char *buf, size_t len);

/* --delay "20us" or "10us,50us": the busy-wait of the synthetic op "delay" for
 * rank (item rank mod n); every item must be a duration (op_delay.c) */
int mt_op_delay_for_rank(const char *list, int rank, double *out, char *err);

/* ---- the experiments of a run: op x message size (exp.c) ---- */
typedef struct mt_exp {
    const mt_op_t *op;
    int64_t msize;        /* 0 for ops without data (barrier) */
} mt_exp_t;
/* Check the op names and sizes (lists as in --ops, --msizes) and build the
 * experiments in canonical order; nprocs > 0 also checks each op's minimum
 * number of ranks. *out is malloc'ed. */
int mt_exp_build(const char *ops, const char *msizes, int nprocs, mt_exp_t **out, int *nexp, char *err);
/* The order in which n experiments run: shuffled with *seed when seeded, else
 * with a seed drawn by rank 0 from the clock and returned in *seed (Hunold and
 * Carpen-Amarie 2016, Alg. 2: a random order per mpirun). The same on every
 * rank of comm (collective). malloc'ed. */
int *mt_exp_order(MPI_Comm comm, int n, int seeded, uint64_t *seed);

/* Allocate and fill buffers for (op, msize); a->comm, rank, size, root,
 * dtype, redop must be set. Returns MT_OK or an error naming the problem
 * (e.g. a size smaller than one element). */
int mt_op_prepare(const mt_op_t *op, mt_op_args_t *a, int64_t msize, char *err);
void mt_op_release(mt_op_args_t *a);

#endif
