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
    MT_OP_PAIRS = 32,     /* pairs of ranks (rank i with i + p/2): needs an even number of ranks */
    MT_OP_BYTEDISPL = 64, /* int byte displacements (alltoallw): a buffer of at most INT_MAX bytes */
};

/* The options of the operations (params.def), read once by mt_op_opts_read.
 * Each is read by some ops only (mt_op_t.opts, MT_OPT_* bits): an option given
 * on the command line that no op of the run reads is refused. */
enum {
    MT_OPT_WINDOW = 1,      /* --bw-window */
    MT_OPT_RMA_SYNC = 2,    /* --rma-sync */
    MT_OPT_RMA_WIN = 4,     /* --rma-win */
    MT_OPT_VCOUNTS = 8,     /* --vcounts */
    MT_OPT_IN_PLACE = 16,   /* --in-place */
    MT_OPT_COMPUTE = 32,    /* --overlap-compute */
    MT_OPT_TOPO = 64,       /* --neighbor-topo */
    MT_OPT_RBUF = 128,      /* --bw-rbuf */
    MT_OPT_REDOP = 256,     /* --redop (implied by MT_OP_REDUCTION; fop sets it) */
    MT_OPT_DELAY = 512,     /* --delay (the synthetic op delay) */
    MT_OPT_RMA_EPOCHS = 1024, /* --rma-epochs */
    MT_OPT_TESTS = 2048,    /* --overlap-tests */
};
enum { MT_RMA_FENCE, MT_RMA_LOCK, MT_RMA_FLUSH, MT_RMA_LOCK_ALL, MT_RMA_PSCW, MT_RMA_FLUSH_LOCAL };
enum { MT_WIN_CREATE, MT_WIN_ALLOCATE, MT_WIN_DYNAMIC };
enum { MT_VCOUNTS_UNIFORM, MT_VCOUNTS_SKEWED };
enum { MT_TOPO_CART, MT_TOPO_GRAPH, MT_TOPO_RING };
typedef struct mt_op_opts {
    int window;           /* messages in flight per call (bw, bibw, mbw_mr, put_bw, get_bw) */
    int rbuf_single;      /* --bw-rbuf single: one receive buffer for the W messages of a window (as OSU) */
    int rma_sync;         /* MT_RMA_* */
    int rma_epochs;       /* one-sided latency ops with fence/pscw: 2 = OSU's two epochs per call; else 1 */
    int rma_win;          /* MT_WIN_* */
    int vcounts;          /* MT_VCOUNTS_* */
    int in_place;         /* MPI_IN_PLACE where the op allows it */
    double compute_s;     /* *_overlap ops: compute between post and wait; < 0: auto (the pure time) */
    int overlap_tests;    /* *_overlap ops: MPI_Test calls spread over the compute (OSU's -t); 0: none */
    int topo;             /* MT_TOPO_* */
} mt_op_opts_t;

/* What one call of an op moves and, for the overlap ops, what its compute
 * took: written per experiment to meta.json (bytes_per_call, msgs_per_call,
 * overlap). Filled by the op's info hook after the measurements. */
typedef struct mt_op_info {
    double bytes;         /* bytes per call that define the op's bandwidth (0: not a bandwidth op) */
    double msgs;          /* messages per call that define its message rate (0: none) */
    int overlap;          /* 1: an overlap op; the keys below are set */
    double compute_target_s;                             /* the compute asked for */
    double compute_median_s, compute_min_s, compute_max_s; /* measured per call, over calls and ranks */
    double pure_s;        /* the pure communication time measured for the calibration (auto) */
    long long compute_calls; /* computes measured (all ranks) */
    long long compute_unrecorded; /* computes not recorded (the op's record was full; all ranks) */
    int tests;            /* MPI_Test calls per compute (--overlap-tests); their time is not compute */
    double test_median_s; /* the tests' time per call: max over ranks of the per-rank medians */
    /* whose local time is the op's time: ntimed 0 = every rank's (collectives; the default), else the
     * ranks timed[0..ntimed): the others make no MPI call of the op and return at once (idle ranks of
     * the pair ops, the target of a passive-target one-sided op), so their times mean nothing and must
     * not enter a mean over ranks (meta.json "timed_ranks") */
    int ntimed;
    int timed[2];
    /* a call's time divided by this is the one-way latency OSU reports: 2 where a call is a round trip
     * (multi_lat, the one-sided ops with --rma-epochs 2), else 1; 0 = 1 (meta.json "one_way_divisor") */
    int one_way_divisor;
    /* one-sided ops: the synchronisation the op used (--rma-sync, except put_bibw: pscw for the
     * default flush); NULL for the others (meta.json "rma_sync" of the experiment) */
    const char *rma_sync;
} mt_op_info_t;

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
    int *counts, *displs; /* per-rank block counts and displacements: all = count, or by --vcounts
                           * (ops reading MT_OPT_VCOUNTS: counts[rank] is this rank's own block) */
    int *rcounts, *rdispls; /* alltoallv-style receive side: block j from rank j has counts[rank]
                             * elements (all = count when uniform) */
    int *wsdispls, *wrdispls; /* alltoallw: displs and rdispls in bytes */
    MPI_Datatype *wtypes; /* alltoallw: the type of every block (all a->type, as OSU's osu_alltoallw) */
    void *sbase, *rbase;  /* cache cycling: pools that sbuf/rbuf point into (NULL otherwise) */
    size_t pool;          /* bytes of each pool */
    double delay_s;       /* synthetic op "delay": this rank's busy-wait */
    const struct mt_timer_inst *timer; /* for synthetic ops that wait */
    int param;            /* MT_OP_PARAM ops: the N of "name:N" (e.g. the arity) */
    const mt_op_opts_t *opts; /* the op options (never NULL while measuring) */
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
    /* the family it belongs to ("collective", "p2p", "nbc", "rma", ...; --list) */
    const char *family;
    unsigned opts;         /* the options it reads (MT_OPT_* bits) */
    /* optional, collective over a->comm, after the measurements and before
     * mt_op_release: what a call moves and what the overlap compute took */
    void (*info)(mt_op_args_t *a, mt_op_info_t *out);
    /* optional, no MPI: refuse a combination of options before anything is
     * launched (nprocs 0: not known yet); MT_OK or mt_fail's code */
    int (*check)(const mt_op_opts_t *o, int nprocs, char *err);
    /* optional: 0 with a one-line reason when this build or MPI library cannot
     * run the op (e.g. MPI-4 persistent collectives); checked before MPI_Init */
    int (*available)(char *why, size_t len);
} mt_op_t;

/* The families of ops: NULL-terminated arrays, one per file (op_p2p.c, ...),
 * joined by op.c into one registry. */
extern const mt_op_t *const mt_ops_coll[], *const mt_ops_p2p[], *const mt_ops_nbc[], *const mt_ops_rma[],
    *const mt_ops_persist[], *const mt_ops_neighbor[];

/* the registry: every op of every family */
int mt_op_count(void);
const mt_op_t *mt_op_at(int i);
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

/* Read and check the op options of p (names of --rma-sync etc.). */
struct mt_params;
int mt_op_opts_read(const struct mt_params *p, mt_op_opts_t *o, char *err);
/* Refuse an op option given on the command line that no op in ops[0..n)
 * reads, naming the ops that do. */
int mt_op_opts_check_used(const struct mt_params *p, const mt_op_t *const *ops, int n, char *err);
/* meta.json "operation_params" keys of the op options read by the ops given */
void mt_op_opts_write_meta(mt_json_t *j, const mt_op_opts_t *o, unsigned used);
/* the per-experiment keys of an op's info (bytes_per_call, msgs_per_call, overlap) */
void mt_op_info_write(mt_json_t *j, const mt_op_info_t *x);

/* Shared by the families. Partner of rank in the pair ops (MT_OP_PAIRS): i <->
 * i + p/2; -1 for none (odd p: the last rank). */
int mt_op_pair_partner(int rank, int size);
/* The first rank of the pair (the sender of uni-directional ops)? */
int mt_op_pair_first(int rank, int size);
/* Per-rank block counts of the vector collectives for --vcounts: uniform
 * (count each) or skewed (block i = round((2i+1) x count / p), at least 1
 * element; the total is within p elements of p x count); count 0: every block 0. */
void mt_op_vcounts(int pattern, int count, int p, int *counts, int *displs);

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

/* The arguments of an op on comm (rank and size read from it), ready for
 * mt_op_prepare: datatype dt, reduction op, timer (may be NULL: ops that wait
 * refuse it), options o (NULL: defaults); everything else zero. */
void mt_op_args_init(mt_op_args_t *a, MPI_Comm comm, const mt_dtype_t *dt, MPI_Op redop,
                     const struct mt_timer_inst *timer, const mt_op_opts_t *o);

/* Page-aligned memory for an op's buffers (as OSU's posix_memalign to the page
 * size): a buffer then starts at the same place in its page in every run, and a
 * single-copy transport (Linux CMA) maps the fewest pages; n 0 gives one page.
 * Release with free(). NULL when out of memory. */
void *mt_op_alloc(size_t n);

/* Allocate and fill buffers for (op, msize); a->comm, rank, size, root,
 * dtype, redop must be set. Returns MT_OK or an error naming the problem
 * (e.g. a size smaller than one element). */
int mt_op_prepare(const mt_op_t *op, mt_op_args_t *a, int64_t msize, char *err);
void mt_op_release(mt_op_args_t *a);

#endif
