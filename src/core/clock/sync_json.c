/* mpitempo: the "clock" section of meta.json (documented in docs/clocks.md). */
#include "base/mt_common.h"
#include <stdio.h>
#include "clock/sync.h"

static const char *level_name(const mt_level_t *l, char *buf, size_t len)
{
    switch (l->kind) {
    case MT_LEVEL_NODE: return "node";
    case MT_LEVEL_SOCKET: return "socket";
    case MT_LEVEL_BLOCK: snprintf(buf, len, "block=%d", l->block); return buf;
    default: snprintf(buf, len, "env=%s", l->env); return buf;
    }
}

void mt_sim_write_json(mt_json_t *j, int nprocs, const double *sim)
{
    if (!sim) {
        mt_json_bool(j, 0);
        return;
    }
    mt_json_obj_begin(j);
    mt_json_key(j, "offset_s");
    mt_json_arr_begin(j);
    for (int i = 0; i < nprocs; i++) mt_json_num(j, sim[2 * i]);
    mt_json_arr_end(j);
    mt_json_key(j, "drift_ppm");
    mt_json_arr_begin(j);
    for (int i = 0; i < nprocs; i++) mt_json_num(j, sim[2 * i + 1] * 1e6);
    mt_json_arr_end(j);
    mt_json_obj_end(j);
}

void mt_sync_write_json(mt_json_t *j, const mt_sync_spec_t *spec, const mt_baseclock_t *b, double duration_s,
                        const mt_check_t *chk, int nprocs, const double *sim)
{
    char buf[1024];
    mt_sync_spec_format(spec, buf, sizeof buf);
    mt_json_kstr(j, "sync", spec->none ? "none" : buf);
    mt_json_kstr(j, "base_timer", b->timer.t->name);
    mt_json_key(j, "simulated");
    mt_sim_write_json(j, nprocs, sim);
    if (spec->none) return;
    mt_json_key(j, "levels");
    mt_json_arr_begin(j);
    for (int i = 0; i <= spec->nlevels; i++) {
        char lb[96];
        const mt_sync_params_t *p = &spec->params[i];
        const mt_sync_alg_t *a = spec->alg[i];
        mt_json_obj_begin(j);
        mt_json_kstr(j, "group", i < spec->nlevels ? level_name(&spec->level[i], lb, sizeof lb)
                                                   : spec->nlevels ? "innermost" : "all");
        mt_json_kstr(j, "algorithm", a->name);
        if (a->keys & MT_P_FITPTS) mt_json_kint(j, "fitpts", p->fitpts);
        if (a->keys & MT_P_PP) mt_json_kint(j, "pp", p->pp);
        if (a->keys & MT_P_OFFSET) mt_json_kstr(j, "offset", p->offset->name);
        if ((a->keys & MT_P_OFFSET) && p->offset == &mt_offset_meanrtt)
            mt_json_kstr(j, "rtt", p->rtt == MT_RTT_MEAN ? "mean" : "median");
        if (a->keys & MT_P_RECOMPUTE) mt_json_kint(j, "recompute", p->recompute);
        if (a->keys & MT_P_WINDOW) mt_json_knum(j, "window_s", p->window_s);
        if (a->keys & MT_P_SLOPE)
            mt_json_kstr(j, "slope", p->slope == MT_SLOPE_AUTO ? "auto" : p->slope == MT_SLOPE_FIT ? "fit" : "zero");
        if (a->keys & MT_P_Z) mt_json_knum(j, "z", p->z);
        if ((a->keys & MT_P_CI) && p->ci_ppm == MT_CI_AUTO) { /* the interval depends on the group's size */
            mt_json_kstr(j, "ci", "auto");
            mt_json_key(j, "ci_ppm");
            mt_json_null(j);
        } else if (a->keys & MT_P_CI) {
            mt_json_kstr(j, "ci", "ppm");
            mt_json_knum(j, "ci_ppm", p->ci_ppm);
        }
        if (a->keys & MT_P_FIT) mt_json_kstr(j, "fit", p->fit == MT_FIT_PAPER ? "paper" : p->fit == MT_FIT_OLS ? "ols" : "ts");
        if (a->keys & MT_P_TOL) mt_json_knum(j, "tol_s", p->tol_s);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
    mt_json_knum(j, "duration_s", duration_s);
    if (!chk) return;
    mt_json_key(j, "quality");
    mt_json_obj_begin(j);
    mt_json_kint(j, "checked_ranks", chk->nsample);
    mt_json_key(j, "wait_s");
    mt_json_arr_begin(j);
    for (int w = 0; w < chk->nwait; w++) mt_json_num(j, chk->wait_s[w]);
    mt_json_arr_end(j);
    double mx, md;
    mt_json_key(j, "max_abs_offset_s");
    mt_json_arr_begin(j);
    for (int w = 0; w < chk->nwait; w++) {
        mt_check_summary(chk, w, &mx, &md);
        mt_json_num(j, mx);
    }
    mt_json_arr_end(j);
    mt_json_key(j, "median_abs_offset_s");
    mt_json_arr_begin(j);
    for (int w = 0; w < chk->nwait; w++) {
        mt_check_summary(chk, w, &mx, &md);
        mt_json_num(j, md);
    }
    mt_json_arr_end(j);
    mt_json_obj_end(j);
}
