/* mpitempo: f-way tournament barrier (Grunwald and Vajracharya 1994; class
 * O(f log_f P) in Hoefler et al. 2005). Arrival as in the combining tree: at
 * round l the ranks at stride f^l play in groups of f whose winner is
 * statically the first (lowest rank) of the group; the losers report to it and
 * wait. Wake-up goes back down the same f-ary tournament tree: a released
 * winner wakes the losers it beat, the last round's first; each woken loser
 * does the same for the rounds it won before.
 * LogP (our derivation): arrival (o_s + L + (f - 2) f_r + o_r) ceil(log_f P),
 * wake-up ceil(log_f P) (o_s + (f - 2) f_s + L + o_r). */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int f = b->param, r = b->rank, p = b->size, levels, parent;
    int rc = mt_bar_combine_up(b, f, 1, &levels, &parent);
    if (rc != MPI_SUCCESS) return rc;
    if (parent >= 0 && (rc = mt_bar_recv(b, parent, 200 + levels)) != MPI_SUCCESS) return rc;
    long long stride = 1;
    for (int l = 0; l < levels - 1; l++) stride *= f;
    for (int l = levels - 1; l >= 0; l--, stride /= f)
        for (int j = 1; j < f && r + j * stride < p; j++)
            if ((rc = mt_bar_send(b, (int)(r + j * stride), 200 + l)) != MPI_SUCCESS) return rc;
    return rc;
}

MT_BAR_OP(mt_op_bar_fway, "fway", "f-way tournament barrier of fan-in N (point-to-point)", 1, MT_OP_PARAM,
          "fan-in", 2);
