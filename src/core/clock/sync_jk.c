/* mpitempo: JK (Jones and Koenig; as described by Hunold and Carpen-Amarie
 * 2018, section II, and 2016, section 3.1): the reference learns a linear model with every client in turn (O(p)). */
#include "base/mt_common.h"
#include "clock/sync.h"

static int jk_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    mt_model_t lm;
    *out = *in;
    for (int c = 1; c < e->pp.size; c++) {
        if (e->pp.rank != 0 && e->pp.rank != c) continue;
        mt_learn_clock_model(e, in, 0, c, &lm);
        if (e->pp.rank == c) return mt_clock_nest(in, &lm, out, err);
    }
    return MT_OK;
}

const mt_sync_alg_t mt_sync_jk = {
    "jk", "JK (Jones & Koenig): a linear model between the reference and each client in turn (O(p))",
    MT_P_FITPTS | MT_P_PP | MT_P_OFFSET | MT_P_RECOMPUTE | MT_P_WINDOW | MT_P_SLOPE | MT_P_Z | MT_P_FIT | MT_P_CI,
    {40, 100, NULL, 0, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS, MT_RTT_MEDIAN, MT_CI_AUTO},
    jk_sync, NULL, 0};
