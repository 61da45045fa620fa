/* mpitempo: tournament barrier with binomial wake-up (Hensgen, Finkel and
 * Manber 1988; Hoefler et al. 2005, sec. 4.3; class O(log2 P) with broadcast).
 * In round k the ranks at stride 2^k meet in pairs: the loser (rank with bit k
 * set) reports to its statically determined winner (the rank without it) and
 * waits; after ceil(log2 P) rounds rank 0 has won and releases everyone with
 * a binomial-tree broadcast. (The message pattern equals barrier:combining:2.)
 * LogP: rt = t_r ceil(log2 P) + o_s + (ceil(log2 P) - 1) t_s + L + o_r. */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, rc;
    for (int m = 1; m < p; m <<= 1) {
        if (r & m) {
            if ((rc = mt_bar_send(b, r - m, 1)) != MPI_SUCCESS) return rc;
            break;
        }
        if (r + m < p && (rc = mt_bar_recv(b, r + m, 1)) != MPI_SUCCESS) return rc;
    }
    return mt_bar_bcast_binomial(b, 100);
}

MT_BAR_OP(mt_op_bar_tournament, "tournament", "tournament barrier with binomial wake-up (point-to-point)", 1, 0,
          NULL, 0);
