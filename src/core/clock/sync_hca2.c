/* mpitempo: HCA2 (Hunold & Carpen-Amarie): linear models learned up an
 * inverted binomial tree and merged, then scattered from the root (O(log p)). */
#include "base/mt_common.h"
#include "clock/sync.h"

static int hca2_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    mt_model_t mine;
    int rc = mt_hca_tree(e, in, &mine, err);
    if (rc == MT_OK) {
        *out = *in;
        if (e->pp.rank != 0) rc = mt_clock_nest(in, &mine, out, err);
    }
    return rc;
}

const mt_sync_alg_t mt_sync_hca2 = {
    "hca2", "HCA2: linear models up an inverted binomial tree, merged, scattered (O(log p))",
    MT_P_FITPTS | MT_P_PP | MT_P_OFFSET | MT_P_RECOMPUTE | MT_P_WINDOW | MT_P_SLOPE | MT_P_Z | MT_P_FIT | MT_P_CI,
    {40, 100, NULL, 0, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS, MT_RTT_MEDIAN, MT_CI_AUTO},
    hca2_sync, NULL, 1};
