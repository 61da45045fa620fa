/* mpitempo: HCA (Hunold & Carpen-Amarie): slopes learned up an inverted
 * binomial tree and merged (O(log p)), scattered, then every intercept is
 * measured directly between the reference and each client in turn (O(p)). */
#include "base/mt_common.h"
#include "clock/sync.h"

static int hca_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    mt_model_t mine;
    int rc = mt_hca_tree(e, in, &mine, err);
    if (rc == MT_OK) {
        *out = *in;
        for (int c = 1; c < e->pp.size; c++) {
            if (e->pp.rank != 0 && e->pp.rank != c) continue;
            mt_offset_res_t o;
            mt_sync_measure(e, in, 0, c, &o);
            if (e->pp.rank == c) {
                mine.intercept = o.offset - mine.slope * o.timestamp;
                rc = mt_clock_nest(in, &mine, out, err);
                break;
            }
        }
    }
    return rc;
}

const mt_sync_alg_t mt_sync_hca = {
    "hca", "HCA: slopes up an inverted binomial tree, then each intercept measured from the root (O(p))",
    MT_P_FITPTS | MT_P_PP | MT_P_OFFSET | MT_P_WINDOW | MT_P_SLOPE | MT_P_Z | MT_P_FIT | MT_P_CI,
    {40, 100, NULL, 0, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS, MT_RTT_MEDIAN, MT_CI_AUTO},
    hca_sync, NULL, 1};
