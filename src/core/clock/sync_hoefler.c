/* mpitempo: NBCBench/Hoefler-style offset-only tree synchronisation (baseline
 * without drift): in round k the ranks r < 2^k, already synchronised, measure
 * the offset of rank r + 2^k on their global clock (ceil(log2 p) rounds). */
#include "base/mt_common.h"
#include "clock/sync.h"

static int hoefler_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    int r = e->pp.rank, p = e->pp.size;
    mt_offset_res_t o;
    *out = *in;
    for (int d = 1; d < p; d *= 2) {
        if (r < d && r + d < p) {
            mt_sync_measure(e, out, r, r + d, &o);
            e->st->learn_ref++;
        } else if (r >= d && r < 2 * d) {
            mt_sync_measure(e, in, r - d, r, &o);
            mt_model_t m = {MT_MODEL_OFFSET, 0.0, o.offset};
            e->st->learn_client++;
            int rc = mt_clock_nest(in, &m, out, err);
            if (rc) return rc;
        }
    }
    return MT_OK;
}

const mt_sync_alg_t mt_sync_hoefler = {
    "hoefler", "NBCBench (Hoefler et al.): offset-only, pushed down a binomial tree (O(log p), no drift model)",
    MT_P_PP | MT_P_OFFSET,
    {0, 100, NULL, 0, 0, MT_SLOPE_ZERO, 0, 0, MT_FIT_TS, MT_RTT_MEDIAN, 0},
    hoefler_sync, NULL, 0};
