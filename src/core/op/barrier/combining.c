/* mpitempo: combining tree barrier with arity n (Yew, Tzeng and Lawrie 1987;
 * Hoefler et al. 2005, sec. 4.2; class O(n log_n P)). Phase 1: at level l the
 * ranks at stride n^l form groups of n; each reports to the first of its
 * group, which waits for its whole group and goes on to level l + 1; rank 0
 * has heard from everyone after ceil(log_n P) levels. Phase 2: release by a
 * binomial-tree broadcast from rank 0, as in the paper.
 * LogP: rt = (o_s + L + (n - 2) f_r + o_r) ceil(log_n P) + t_bc(P - 1),
 * t_bc(P - 1) = o_s + (ceil(log2 P) - 1) t_s + L + o_r. */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int levels, parent;
    int rc = mt_bar_combine_up(b, b->param, 1, &levels, &parent);
    if (rc != MPI_SUCCESS) return rc;
    return mt_bar_bcast_binomial(b, 100);
}

MT_BAR_OP(mt_op_bar_combining, "combining", "combining tree barrier of arity N (point-to-point)", 1, MT_OP_PARAM,
          "arity", 2);
