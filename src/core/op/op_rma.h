/* mpitempo: a look into the state of a one-sided op (op_rma.c), for the truth
 * test (tests/c/test_ops_rma.c): where this rank's window memory is, and the
 * origin buffer of the bandwidth ops. Not used while measuring. */
#ifndef MT_OP_RMA_H
#define MT_OP_RMA_H

#include "op/op.h"

typedef struct mt_rma_view {
    MPI_Win win;
    void *winmem;         /* this rank's window memory (every kind, dynamic included) */
    size_t winbytes;
    void *obuf;           /* origin buffer of put_bw/get_bw (window x block bytes); NULL for the others */
    size_t obytes;
    int origin, target;   /* ranks of a->comm */
} mt_rma_view_t;

/* MT_OK with *v filled when a is a prepared rma op, else MT_EINVAL. */
int mt_op_rma_view(const mt_op_args_t *a, mt_rma_view_t *v);

#endif
