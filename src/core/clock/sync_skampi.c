/* mpitempo: SKaMPI's offset-only synchronisation (baseline without drift):
 * the reference measures the offset to every client in turn with one
 * SKaMPI-Offset measurement of pp ping-pongs (O(p)). */
#include "base/mt_common.h"
#include "clock/sync.h"

static int skampi_sync(mt_sync_env_t *e, const mt_clock_t *in, mt_clock_t *out, char *err)
{
    mt_offset_res_t o;
    *out = *in;
    for (int c = 1; c < e->pp.size; c++) {
        if (e->pp.rank != 0 && e->pp.rank != c) continue;
        mt_sync_measure(e, in, 0, c, &o);
        if (e->pp.rank == 0) {
            e->st->learn_ref++;
        } else {
            mt_model_t m = {MT_MODEL_OFFSET, 0.0, o.offset};
            e->st->learn_client++;
            e->st->slope_state = MT_SLOPE_NONE;
            return mt_clock_nest(in, &m, out, err);
        }
    }
    return MT_OK;
}

const mt_sync_alg_t mt_sync_skampi = {
    "skampi", "SKaMPI: offset-only, reference to each client in turn (O(p), no drift model)",
    MT_P_PP | MT_P_OFFSET,
    {0, 100, NULL, 0, 0, MT_SLOPE_ZERO, 0, 0, MT_FIT_TS, MT_RTT_MEDIAN, 0},
    skampi_sync, NULL, 0};
