/* mpitempo: the inverted binomial tree shared by HCA and HCA2 (Hunold and Carpen-Amarie 2018
 * Fig. 1a): in round d = 1, 2, 4, ... rank r with r mod 2d == d learns its
 * model against r - d (both on their input clocks), merges it into the models
 * of its subtree and sends them up; after ceil(log2 p) rounds rank 0 holds the
 * model of every rank against itself. */
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <stdlib.h>

#define TAG_UP 901
#define W 6 /* doubles per model on the way up */

static int hca_uptree(mt_sync_env_t *e, const mt_clock_t *in, mt_model_t *all, int *below, double *unc, char *err)
{
    int r = e->pp.rank, p = e->pp.size;
    /* models of my subtree against me: W doubles each (rank, kind, slope, intercept, below: a model
     * on the way up was below its stated accuracy, see mt_sync_below_accuracy; unc: the drift
     * uncertainty of the models merged on top of the rank's own, summed) */
    double *sub = malloc(sizeof(double) * W * (size_t)p);
    if (!sub) return mt_fail(err, MT_ENOMEM, "out of memory");
    int n = 1;
    sub[0] = r;
    sub[1] = MT_MODEL_OFFSET;
    sub[2] = sub[3] = sub[4] = sub[5] = 0;
    mt_model_t lm;
    for (int d = 1; d < p; d *= 2) {
        if (r % (2 * d) == d) {
            mt_learn_clock_model(e, in, r - d, r, &lm);
            /* my model goes into every model of my subtree: so does its error */
            int mine_below = mt_sync_below_accuracy(e->st);
            for (int i = 0; i < n; i++) {
                mt_model_t m = {(int)sub[W * i + 1], sub[W * i + 2], sub[W * i + 3]}, mm;
                mt_model_merge(&lm, &m, &mm);
                sub[W * i + 1] = mm.kind;
                sub[W * i + 2] = mm.slope;
                sub[W * i + 3] = mm.intercept;
                if (i > 0 && mine_below) sub[W * i + 4] = 1;
                if (i > 0) sub[W * i + 5] += e->st->drift_unc;
            }
            double cnt = n;
            mt_pp_send(&e->pp, &cnt, 1, r - d, TAG_UP);
            mt_pp_send(&e->pp, sub, W * n, r - d, TAG_UP);
            break;
        } else if (r % (2 * d) == 0 && r + d < p) {
            mt_learn_clock_model(e, in, r, r + d, &lm);
            double cnt;
            mt_pp_recv(&e->pp, &cnt, 1, r + d, TAG_UP);
            mt_pp_recv(&e->pp, sub + W * n, W * (int)cnt, r + d, TAG_UP);
            n += (int)cnt;
        }
    }
    if (r == 0) {
        for (int i = 0; i < n; i++) {
            int k = (int)sub[W * i];
            all[k].kind = (int)sub[W * i + 1];
            all[k].slope = sub[W * i + 2];
            all[k].intercept = sub[W * i + 3];
            below[k] = sub[W * i + 4] != 0;
            unc[k] = sub[W * i + 5];
        }
    }
    free(sub);
    return MT_OK;
}

/* MPI_Scatter of the models from rank 0: *mine gets this rank's model; a model that went through
 * one below its stated accuracy on the way up sets e->st->ref_below */
static void hca_scatter(mt_sync_env_t *e, const mt_model_t *all, const int *below, const double *unc, mt_model_t *mine)
{
    int p = e->pp.size;
    double *buf = NULL, me[5];
    if (e->pp.rank == 0) {
        buf = malloc(sizeof(double) * 5 * (size_t)p);
        if (!buf) mt_check_mpi(MPI_ERR_NO_MEM, "model buffer");
        for (int i = 0; i < p; i++) {
            buf[5 * i] = all[i].kind;
            buf[5 * i + 1] = all[i].slope;
            buf[5 * i + 2] = all[i].intercept;
            buf[5 * i + 3] = below[i];
            buf[5 * i + 4] = unc[i];
        }
    }
    mt_pp_lazy_barrier(&e->pp); /* oversubscribed: finished ranks sleep while others measure */
    mt_check_mpi(MPI_Scatter(buf, 5, MPI_DOUBLE, me, 5, MPI_DOUBLE, 0, e->pp.comm), "MPI_Scatter");
    mine->kind = (int)me[0];
    mine->slope = me[1];
    mine->intercept = me[2];
    if (me[3] != 0) e->st->ref_below = 1;
    e->st->drift_unc_ref = me[4];
    free(buf);
}

int mt_hca_tree(mt_sync_env_t *e, const mt_clock_t *in, mt_model_t *mine, char *err)
{
    mt_model_t *all = calloc((size_t)e->pp.size, sizeof(mt_model_t));
    int *below = calloc((size_t)e->pp.size, sizeof(int));
    double *unc = calloc((size_t)e->pp.size, sizeof(double));
    int rc = all && below && unc ? hca_uptree(e, in, all, below, unc, err) : mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) hca_scatter(e, all, below, unc, mine);
    free(all);
    free(below);
    free(unc);
    return rc;
}
