/* mpitempo: the truth of an operation (the C MPI tests test_ops_<family>.c):
 * a counting layer over the MPI calls the ops make (op_count.c defines MPI_Send,
 * MPI_Isend, MPI_Put, ... and forwards each to its PMPI_ name), so a test knows
 * the messages, bytes and one-sided accesses of every call from MPI itself, and
 * compares them with what the op must do and with what it declares (info hook:
 * bytes_per_call, msgs_per_call). Run under mpiexec -n 2 (CMake: mpi_ops_*). */
#ifndef MT_OP_COUNT_H
#define MT_OP_COUNT_H

#include <mpi.h>
#include <stdint.h>

#include "op/op.h"

typedef struct mt_cnt {
    long long sent_msgs, sent_bytes;  /* point-to-point sends (Send, Isend, Ssend, Sendrecv's send, ...) */
    long long recv_msgs, recv_bytes;  /* point-to-point receives posted (Recv, Irecv, Sendrecv's receive) */
    long long rma_ops, rma_bytes;     /* one-sided accesses issued (Put, Get, Accumulate, ...: origin bytes) */
    long long rma_syncs;              /* one-sided synchronisation calls (fence, lock, flush, start, ...) */
    long long colls;                  /* blocking collective calls */
    long long nb_colls;               /* non-blocking collective calls (MPI_I*) */
    long long persist_starts;         /* MPI_Start / MPI_Startall requests started */
    long long psend_inits, psend_bytes; /* persistent point-to-point requests made (MPI_Send_init) and their bytes */
    long long precv_inits, precv_bytes; /* ... (MPI_Recv_init) */
    long long neighbor;               /* neighbourhood collective calls */
    long long waits;                  /* Wait, Waitall (requests completed) */
    long long tests;                  /* MPI_Test calls */
    /* nbc: the non-blocking collectives per MPI function (mt_cnt_nb_names), and the bytes this rank's
     * posts declare to send and to receive (the arguments that apply to it: root-only ones at the root) */
#define MT_CNT_NB_FNS 17
    long long nb_by_fn[MT_CNT_NB_FNS];
    long long nb_sbytes, nb_rbytes;
    /* the lowest and highest buffer address of the MPI_Irecv calls (NULL: none) */
    const unsigned char *irecv_lo, *irecv_hi;
} mt_cnt_t;

/* nbc: "MPI_Ibarrier", ... in the order of mt_cnt_t.nb_by_fn; the count of mpi_name in c (0: none or not one) */
extern const char *const mt_cnt_nb_names[MT_CNT_NB_FNS];
long long mt_cnt_nb_of(const mt_cnt_t *c, const char *mpi_name);

extern mt_cnt_t mt_cnt;
void mt_cnt_reset(void);

/* Prepare op `name` at msize on MPI_COMM_WORLD with opts (NULL: defaults),
 * run `warm` uncounted calls, reset the counters, make `calls` counted calls,
 * then the op's info hook (into *info, zeroed when the op has none) and
 * release. *out gets this rank's counts. Returns MT_OK or an error in err. */
int mt_cnt_run(const char *name, int64_t msize, const mt_op_opts_t *opts, int warm, int calls, mt_cnt_t *out,
               mt_op_info_t *info, char *err);

/* The counts of the last mt_cnt_run's mt_op_prepare (the op's setup hook:
 * e.g. the MPI_*_init of a persistent collective). */
extern mt_cnt_t mt_cnt_setup;

/* ---- coll: what the last collective call passed, recorded by the
 * interposers of the blocking collectives, the MPI_*_init persistent
 * collectives (both counted in colls) and the neighbourhood collectives
 * (counted in neighbor). Defined only where the library has them:
 * MT_HAVE_PERSISTENT_COLL for the MPI_*_init. ---- */
#define MT_REC_MAX 16
typedef struct mt_coll_rec {
    const char *fn;                   /* "MPI_Gatherv", "MPI_Allreduce_init", "MPI_Neighbor_alltoall", ... */
    int send_in_place, recv_in_place; /* sendbuf / recvbuf was MPI_IN_PLACE */
    int scount, rcount;               /* the scalar send / receive count (-1: none) */
    int nscounts, nrcounts;           /* entries of the count arrays recorded (0: none) */
    int scounts[MT_REC_MAX], rcounts[MT_REC_MAX];
    /* neighbourhood calls: the topology of the communicator, from MPI itself */
    int topo;                         /* MPI_Topo_test: MPI_CART, MPI_DIST_GRAPH, ... */
    int dims[2];                      /* MPI_CART (2-D): MPI_Cart_get */
    int indeg, outdeg;                /* MPI_Dist_graph_neighbors_count; MPI_CART: 2 x ndims */
    int sources[MT_REC_MAX], dests[MT_REC_MAX]; /* MPI_Dist_graph_neighbors; MPI_CART: per dimension the
                                                 * source and dest of MPI_Cart_shift(d, 1), in both */
} mt_coll_rec_t;
extern mt_coll_rec_t mt_coll_last;

/* The default options (as the bench's defaults). */
mt_op_opts_t mt_cnt_default_opts(void);

#endif
