/* mpitempo: HCA3 (Hunold and Carpen-Amarie 2018, Algorithm 1): the reference time is pushed down
 * a binomial tree; a process that has learned its model timestamps with its
 * global clock when it acts as the reference of a later round. Rounds:
 * floor(log2 p) for the largest power of two, plus one for the rest, i.e.
 * ceil(log2 p). */
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#define TAG_REF_BELOW 731

/* the client's model is nested on the reference's global clock, so the reference's error is in
 * the client's clock too: the reference tells whether its own clock is below its stated accuracy
 * (its Mean-RTT flag, an unresolved slope, or inherited), and the client inherits it */
static void as_ref(mt_sync_env_t *e, const mt_clock_t *my, int client, mt_model_t *lm)
{
    mt_learn_clock_model(e, my, e->pp.rank, client, lm);
    /* and how far its clock may drift from the root's (its own model's and its inherited uncertainty) */
    double below[2] = {mt_sync_below_accuracy(e->st), e->st->drift_unc + e->st->drift_unc_ref};
    mt_pp_send(&e->pp, below, 2, client, TAG_REF_BELOW);
}

static void as_client(mt_sync_env_t *e, const mt_clock_t *my, int ref, mt_model_t *lm)
{
    mt_learn_clock_model(e, my, ref, e->pp.rank, lm);
    double below[2] = {0, 0};
    mt_pp_recv_lazy(&e->pp, below, 2, ref, TAG_REF_BELOW);
    if (below[0] != 0) e->st->ref_below = 1;
    e->st->drift_unc_ref = below[1];
}

static int hca3_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    int r = e->pp.rank, p = e->pp.size;
    int nrounds = 0;
    while ((2 << nrounds) <= p) nrounds++;        /* floor(log2 p) */
    int max_power = 1 << nrounds;
    mt_clock_t my = *in;                           /* GLOBALCLOCKLM(clk, 0, 0) */
    mt_model_t lm;
    int rc = MT_OK;
    for (int i = nrounds; i >= 1; i--) {
        int running = 1 << i, next = 1 << (i - 1);
        if (r >= max_power) break;
        if (r % running == 0) {
            as_ref(e, &my, r + next, &lm);
        } else if (r % running == next) {
            as_client(e, &my, r - next, &lm);
            if ((rc = mt_clock_nest(in, &lm, &my, err))) return rc;
        }
    }
    if (r >= max_power) {
        as_client(e, &my, r - max_power, &lm);
        if ((rc = mt_clock_nest(in, &lm, &my, err))) return rc;
    } else if (r < p - max_power) {
        as_ref(e, &my, r + max_power, &lm);
    }
    *out = my;
    return MT_OK;
}

const mt_sync_alg_t mt_sync_hca3 = {
    "hca3", "HCA3: linear models pushed down a binomial tree, intercept recomputed (O(log p))",
    MT_P_FITPTS | MT_P_PP | MT_P_OFFSET | MT_P_RECOMPUTE | MT_P_WINDOW | MT_P_SLOPE | MT_P_Z | MT_P_FIT | MT_P_CI,
    {40, 100, NULL, 1, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS, MT_RTT_MEDIAN, MT_CI_AUTO},
    hca3_sync, NULL, 1};
