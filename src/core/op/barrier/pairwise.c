/* mpitempo: pairwise exchange barrier (recursive doubling; Hensgen, Finkel
 * and Manber 1988; class O(log2 P) without broadcast in Hoefler et al. 2005).
 * With P' the largest power of two <= P, the P - P' surplus ranks first report
 * to rank r - P' and wait for its release; the first P' ranks then exchange a
 * message with partner r XOR 2^k in round k = 0 .. log2 P' - 1, and at the end
 * release their surplus partner. LogP (our derivation):
 * rt = log2 P' max(t_r, t_s) (+ 2 (o_s + L + o_r) when P is not a power of two). */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, q = 1, rc;
    while (q * 2 <= p) q *= 2;
    if (r >= q) {
        if ((rc = mt_bar_send(b, r - q, 1)) != MPI_SUCCESS) return rc;
        return mt_bar_recv(b, r - q, 2);
    }
    if (r + q < p && (rc = mt_bar_recv(b, r + q, 1)) != MPI_SUCCESS) return rc;
    for (int m = 1, k = 0; m < q; m <<= 1, k++)
        if ((rc = mt_bar_sendrecv(b, r ^ m, r ^ m, 10 + k)) != MPI_SUCCESS) return rc;
    if (r + q < p) return mt_bar_send(b, r + q, 2);
    return MPI_SUCCESS;
}

MT_BAR_OP(mt_op_bar_pairwise, "pairwise", "pairwise exchange barrier (recursive doubling, point-to-point)", 1, 0,
          NULL, 0);
