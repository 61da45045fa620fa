/* mpitempo: MCS barrier (Mellor-Crummey and Scott 1991; class O(n log_n P) in
 * Hoefler et al. 2005). Arrival on a 4-ary tree (the children of rank i are
 * 4i+1 .. 4i+4): a rank waits for its children, then reports to its parent
 * (i-1)/4. Wake-up on a binary tree: a rank waits for (i-1)/2 (rank 0 starts
 * when its arrival tree is complete) and wakes 2i+1 and 2i+2.
 * LogP (our derivation): arrival d4 levels (the depth of the 4-ary tree) of
 * (o_s + L + o_r + (c4 - 1) f_r) (c4 = min(4, P - 1) children: the first
 * arrival costs o_r, the others f_r each); wake-up d2 = floor(log2 P) levels
 * of (o_s + (c2 - 1) f_s + L + o_r), c2 = min(2, P - 1). */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, k = 0, rc;
    for (int c = 4 * r + 1; c <= 4 * r + 4 && c < p; c++) b->src[k++] = c;
    if ((rc = mt_bar_recv_all(b, b->src, k, 1)) != MPI_SUCCESS) return rc;
    if (r > 0) {
        if ((rc = mt_bar_send(b, (r - 1) / 4, 1)) != MPI_SUCCESS) return rc;
        if ((rc = mt_bar_recv(b, (r - 1) / 2, 2)) != MPI_SUCCESS) return rc;
    }
    for (int c = 2 * r + 1; c <= 2 * r + 2 && c < p; c++)
        if ((rc = mt_bar_send(b, c, 2)) != MPI_SUCCESS) return rc;
    return MPI_SUCCESS;
}

MT_BAR_OP(mt_op_bar_mcs, "mcs", "MCS barrier: 4-ary arrival tree, binary wake-up tree (point-to-point)", 1, 0, NULL,
          0);
