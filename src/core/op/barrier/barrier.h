/* mpitempo: our barrier algorithms over MPI point-to-point (Hoefler et al.
 * 2005, "A practical approach to the rating of barrier algorithms using the
 * LogP model and Open MPI"). One file per algorithm, each an op of the
 * registry (op.c) named "barrier:<algorithm>" ("barrier:combining:N" and
 * "barrier:fway:N" take an arity). This header is their shared state and
 * message helpers (barrier.c).
 *
 * Every op instance duplicates the benchmark's communicator in its setup
 * (outside the timed region), so its messages never meet anybody else's.
 * Every message carries the number of the call it belongs to (a 4-byte int):
 * a receive that gets another call's message is counted as "mismatched", the
 * test of "repeated calls never cross-match". Messages sent and received by
 * this rank are counted too (the dissemination barrier sends exactly
 * ceil(log2 P) per call). */
#ifndef MT_OP_BARRIER_H
#define MT_OP_BARRIER_H

#include <mpi.h>

#include "op/op.h"

typedef struct mt_bar {
    MPI_Comm comm;          /* the op's own duplicate of the benchmark's communicator */
    int rank, size, param;  /* param: arity of combining / f-way, else 0 */
    int seq;                /* number of the current call: the payload of its messages */
    long long calls, sent, received, mismatched;
    int *rbuf;              /* size payloads for posted receives */
    int *src;               /* size ranks: sources of a group receive */
    MPI_Request *req;       /* 2 x size requests */
} mt_bar_t;

/* setup/teardown hooks shared by every barrier op (collective) */
int mt_bar_setup(mt_op_args_t *a, char *err);
void mt_bar_teardown(mt_op_args_t *a);
/* the state of a prepared barrier op (NULL for other ops) */
mt_bar_t *mt_bar_state(const mt_op_args_t *a);

/* a new call: returns the state with seq advanced */
mt_bar_t *mt_bar_begin(mt_op_args_t *a);
int mt_bar_send(mt_bar_t *b, int dest, int tag);
int mt_bar_recv(mt_bar_t *b, int src, int tag);
/* send to dest and receive from src at once (deadlock-free exchange) */
int mt_bar_sendrecv(mt_bar_t *b, int dest, int src, int tag);
/* receive one message from each of n sources, in any order of arrival */
int mt_bar_recv_all(mt_bar_t *b, const int *src, int n, int tag);
/* the release of phase 2 as a binomial-tree broadcast from rank 0 (as Open
 * MPI's, which the paper's combining tree and tournament barrier use): every
 * rank but 0 receives from its parent, then sends to its children, the
 * largest subtree first */
int mt_bar_bcast_binomial(mt_bar_t *b, int tag);
/* phase 1 of the combining tree and f-way tournament: groups of n ranks at
 * stride n^l report to their first member, level by level; returns the number
 * of levels at which this rank collected a group (its wake-up levels) */
int mt_bar_combine_up(mt_bar_t *b, int n, int tag0, int *levels, int *parent);

#define MT_BAR_OP(var, alg, desc, minp, pflags, pname, pmin)                                               \
    const mt_op_t var = {.name = "barrier:" alg,                                                          \
                         .mpi_name = desc,                                                                \
                         .min_procs = minp,                                                               \
                         .flags = MT_OP_NOSIZE | (pflags),                                                \
                         .blocks = 0,                                                                     \
                         .call = call,                                                                    \
                         .setup = mt_bar_setup,                                                           \
                         .teardown = mt_bar_teardown,                                                     \
                         .param_name = pname,                                                             \
                         .param_min = pmin,                                                               \
                         .family = "barrier-algorithm"}

#endif
