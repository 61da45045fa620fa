/* mpitempo: dissemination barrier (Hensgen, Finkel and Manber 1988; Hoefler
 * et al. 2005, sec. 4.4; class O(log2 P) without broadcast). In round
 * k = 0 .. ceil(log2 P) - 1 rank r sends to (r + 2^k) mod P and receives from
 * (r - 2^k) mod P: exactly ceil(log2 P) messages per rank and any P.
 * LogP: rt = max(t_r, t_s) ceil(log2 P). */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, rc = MPI_SUCCESS;
    for (int m = 1, k = 0; m < p && rc == MPI_SUCCESS; m <<= 1, k++)
        rc = mt_bar_sendrecv(b, (r + m) % p, (r - m + p) % p, 1 + k);
    return rc;
}

MT_BAR_OP(mt_op_bar_dissemination, "dissemination", "dissemination barrier (point-to-point)", 1, 0, NULL, 0);
