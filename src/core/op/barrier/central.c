/* mpitempo: central counter barrier (Hoefler et al. 2005, sec. 4.1; class
 * O(P)). Every rank but 0 reports its arrival to rank 0; rank 0 waits for all
 * P - 1 reports (in any order) and then releases the ranks one by one, 1 to
 * P - 1. LogP: rt = 2(o_s + L + o_r) + (P - 2) f_r + (P - 2) f_s. */
#include "op/barrier/barrier.h"

enum { TAG_ARRIVE = 1, TAG_RELEASE = 2 };

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int p = b->size, rc = MPI_SUCCESS;
    if (b->rank != 0) {
        if ((rc = mt_bar_send(b, 0, TAG_ARRIVE)) != MPI_SUCCESS) return rc;
        return mt_bar_recv(b, 0, TAG_RELEASE);
    }
    for (int i = 1; i < p; i++) b->src[i - 1] = i;
    if ((rc = mt_bar_recv_all(b, b->src, p - 1, TAG_ARRIVE)) != MPI_SUCCESS) return rc;
    for (int i = 1; i < p && rc == MPI_SUCCESS; i++) rc = mt_bar_send(b, i, TAG_RELEASE);
    return rc;
}

MT_BAR_OP(mt_op_bar_central, "central", "central counter barrier (point-to-point)", 1, 0, NULL, 0);
