/* mpitempo: binary spanning tree (BST) barrier (class O(log2 P) with
 * broadcast in Hoefler et al. 2005). Arrival and wake-up on the same binary
 * tree (children of rank i: 2i+1 and 2i+2): a rank waits for its children,
 * reports to its parent (i-1)/2, waits for the parent's release and releases
 * its children. LogP (our derivation), with d = floor(log2 P) the depth:
 * arrival d (o_s + L + o_r + (c - 1) f_r), wake-up d (o_s + (c - 1) f_s + L + o_r),
 * c = min(2, P - 1) children. */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, k = 0, rc;
    for (int c = 2 * r + 1; c <= 2 * r + 2 && c < p; c++) b->src[k++] = c;
    if ((rc = mt_bar_recv_all(b, b->src, k, 1)) != MPI_SUCCESS) return rc;
    if (r > 0) {
        if ((rc = mt_bar_send(b, (r - 1) / 2, 1)) != MPI_SUCCESS) return rc;
        if ((rc = mt_bar_recv(b, (r - 1) / 2, 2)) != MPI_SUCCESS) return rc;
    }
    for (int c = 2 * r + 1; c <= 2 * r + 2 && c < p; c++)
        if ((rc = mt_bar_send(b, c, 2)) != MPI_SUCCESS) return rc;
    return MPI_SUCCESS;
}

MT_BAR_OP(mt_op_bar_bst, "bst", "binary spanning tree barrier (point-to-point)", 1, 0, NULL, 0);
