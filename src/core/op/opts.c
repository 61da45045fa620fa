/* mpitempo: the options of the operations (--bw-window, --rma-sync, --rma-win,
 * --vcounts, --in-place, --overlap-compute, --neighbor-topo), what they mean in
 * meta.json, and the helpers the op families share (pairs, vector counts). */
#include "base/mt_common.h"
#include "base/params.h"
#include "op/op.h"

#include <stdio.h>
#include <string.h>

static const char *const rma_sync_names[] = {"fence", "lock", "flush", "lock_all", "pscw", "flush_local", NULL};
static const char *const rma_win_names[] = {"create", "allocate", "dynamic", NULL};
static const char *const vcounts_names[] = {"uniform", "skewed", NULL};
static const char *const topo_names[] = {"cart", "graph", "ring", NULL};
static const char *const rbuf_names[] = {"window", "single", NULL};

static int pick(const char *v, const char *const *names, const char *flag, int *out, char *err)
{
    char allowed[256] = "";
    for (int i = 0; names[i]; i++) {
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return MT_OK;
        }
        mt_names_add(allowed, sizeof allowed, names[i]);
    }
    return mt_fail(err, MT_EINVAL, "invalid %s '%s' (allowed: %s)", flag, v, allowed);
}

int mt_op_opts_read(const struct mt_params *pp, mt_op_opts_t *o, char *err)
{
    const mt_params_t *p = pp;
    memset(o, 0, sizeof *o);
    o->window = (int)mt_p_int(p, MTP_bw_window);
    int rc = pick(mt_p_str(p, MTP_rma_sync), rma_sync_names, "--rma-sync", &o->rma_sync, err);
    if (rc == MT_OK) rc = pick(mt_p_str(p, MTP_rma_win), rma_win_names, "--rma-win", &o->rma_win, err);
    if (rc == MT_OK) rc = pick(mt_p_str(p, MTP_vcounts), vcounts_names, "--vcounts", &o->vcounts, err);
    if (rc == MT_OK) rc = pick(mt_p_str(p, MTP_neighbor_topo), topo_names, "--neighbor-topo", &o->topo, err);
    if (rc == MT_OK) rc = pick(mt_p_str(p, MTP_bw_rbuf), rbuf_names, "--bw-rbuf", &o->rbuf_single, err);
    if (rc != MT_OK) return rc;
    o->rma_epochs = (int)mt_p_int(p, MTP_rma_epochs);
    o->overlap_tests = (int)mt_p_int(p, MTP_overlap_tests);
    o->in_place = mt_p_bool(p, MTP_in_place);
    const char *c = mt_p_str(p, MTP_overlap_compute);
    o->compute_s = -1;
    if (strcmp(c, "auto") != 0) {
        char why[MT_ERRLEN];
        if (mt_parse_duration(c, &o->compute_s, why) != MT_OK || !(o->compute_s > 0) || o->compute_s > 10)
            return mt_fail(err, MT_EINVAL, "invalid --overlap-compute '%s': expected auto or a duration > 0 and "
                           "<= 10s, e.g. 50us", c);
    }
    return MT_OK;
}

static const struct {
    unsigned bit;
    int id;
    const char *flag;
} opt_flags[] = {
    {MT_OPT_WINDOW, MTP_bw_window, "--bw-window"},       {MT_OPT_RMA_SYNC, MTP_rma_sync, "--rma-sync"},
    {MT_OPT_RMA_WIN, MTP_rma_win, "--rma-win"},          {MT_OPT_VCOUNTS, MTP_vcounts, "--vcounts"},
    {MT_OPT_IN_PLACE, MTP_in_place, "--in-place"},       {MT_OPT_COMPUTE, MTP_overlap_compute, "--overlap-compute"},
    {MT_OPT_TOPO, MTP_neighbor_topo, "--neighbor-topo"}, {MT_OPT_RBUF, MTP_bw_rbuf, "--bw-rbuf"},
    {MT_OPT_REDOP, MTP_redop, "--redop"},                {MT_OPT_DELAY, MTP_delay, "--delay"},
    {MT_OPT_RMA_EPOCHS, MTP_rma_epochs, "--rma-epochs"}, {MT_OPT_TESTS, MTP_overlap_tests, "--overlap-tests"},
};

/* the options op reads: its own bits, and --redop for every reduction */
static unsigned reads(const mt_op_t *op)
{
    return op->opts | ((op->flags & MT_OP_REDUCTION) ? MT_OPT_REDOP : 0u);
}

int mt_op_opts_check_used(const struct mt_params *pp, const mt_op_t *const *ops, int n, char *err)
{
    const mt_params_t *p = pp;
    unsigned used = 0;
    for (int i = 0; i < n; i++) used |= reads(ops[i]);
    for (size_t k = 0; k < sizeof opt_flags / sizeof opt_flags[0]; k++) {
        /* given with a value other than its default (an orchestrator may pass every default explicitly) */
        const mt_param_def_t *d = mt_param_def(opt_flags[k].id, p->app);
        const char *raw = mt_p_raw(p, opt_flags[k].id);
        int changed = mt_p_given(p, opt_flags[k].id) && d &&
                      (d->type == MT_T_BOOL ? mt_p_bool(p, opt_flags[k].id) : (raw && strcmp(raw, d->def) != 0));
        if (!changed || (used & opt_flags[k].bit)) continue;
        char readers[1024] = "";
        int nops = mt_op_count(), shown = 0, more = 0;
        for (int i = 0; i < nops; i++) {
            const mt_op_t *op = mt_op_at(i);
            if (!(reads(op) & opt_flags[k].bit)) continue;
            if (shown < 8) {
                mt_names_add(readers, sizeof readers, op->name);
                shown++;
            } else {
                more++;
            }
        }
        return mt_fail(err, MT_EINVAL, "%s applies to none of the ops in --ops (it applies to %s%s)", opt_flags[k].flag,
                       readers, more ? ", ..." : "");
    }
    return MT_OK;
}

void mt_op_opts_write_meta(mt_json_t *j, const mt_op_opts_t *o, unsigned used)
{
    if (used & MT_OPT_WINDOW) mt_json_kint(j, "bw_window", o->window);
    if (used & MT_OPT_RBUF) mt_json_kstr(j, "bw_rbuf", rbuf_names[o->rbuf_single]);
    if (used & MT_OPT_RMA_SYNC) mt_json_kstr(j, "rma_sync", rma_sync_names[o->rma_sync]);
    if (used & MT_OPT_RMA_WIN) mt_json_kstr(j, "rma_win", rma_win_names[o->rma_win]);
    if (used & MT_OPT_RMA_EPOCHS) mt_json_kint(j, "rma_epochs", o->rma_epochs == 2 ? 2 : 1);
    if (used & MT_OPT_VCOUNTS) mt_json_kstr(j, "vcounts", vcounts_names[o->vcounts]);
    if (used & MT_OPT_IN_PLACE) mt_json_kbool(j, "in_place", o->in_place);
    if (used & MT_OPT_COMPUTE) {
        if (o->compute_s < 0) mt_json_kstr(j, "overlap_compute", "auto");
        else mt_json_knum(j, "overlap_compute_s", o->compute_s);
    }
    if (used & MT_OPT_TOPO) mt_json_kstr(j, "neighbor_topo", topo_names[o->topo]);
    if (used & MT_OPT_TESTS) mt_json_kint(j, "overlap_tests", o->overlap_tests);
}

void mt_op_info_write(mt_json_t *j, const mt_op_info_t *x)
{
    mt_json_knum(j, "bytes_per_call", x->bytes);
    mt_json_knum(j, "msgs_per_call", x->msgs);
    mt_json_key(j, "timed_ranks");
    if (x->ntimed <= 0) {
        mt_json_str(j, "all");
    } else {
        mt_json_arr_begin(j);
        for (int i = 0; i < x->ntimed && i < 2; i++) mt_json_int(j, x->timed[i]);
        mt_json_arr_end(j);
    }
    mt_json_kint(j, "one_way_divisor", x->one_way_divisor > 1 ? x->one_way_divisor : 1);
    if (x->rma_sync) mt_json_kstr(j, "rma_sync", x->rma_sync);
    if (!x->overlap) return;
    mt_json_key(j, "overlap");
    mt_json_obj_begin(j);
    mt_json_knum(j, "compute_target_s", x->compute_target_s);
    mt_json_knum(j, "compute_median_s", x->compute_median_s);
    mt_json_knum(j, "compute_min_s", x->compute_min_s);
    mt_json_knum(j, "compute_max_s", x->compute_max_s);
    mt_json_knum(j, "pure_s", x->pure_s);
    mt_json_kint(j, "compute_calls", x->compute_calls);
    if (x->compute_unrecorded) mt_json_kint(j, "compute_unrecorded", x->compute_unrecorded);
    if (x->tests) {
        mt_json_kint(j, "tests", x->tests);
        mt_json_knum(j, "test_median_s", x->test_median_s);
    }
    mt_json_obj_end(j);
}

int mt_op_pair_partner(int rank, int size)
{
    int half = size / 2;
    if (half == 0) return -1;
    if (rank < half) return rank + half;
    if (rank < 2 * half) return rank - half;
    return -1;
}

int mt_op_pair_first(int rank, int size) { return rank < size / 2; }

void mt_op_vcounts(int pattern, int count, int p, int *counts, int *displs)
{
    int at = 0;
    for (int i = 0; i < p; i++) {
        int c = count;
        if (pattern == MT_VCOUNTS_SKEWED && count > 0) { /* count 0: every block empty */
            double v = (2.0 * i + 1.0) * (double)count / (double)p;
            c = (int)(v + 0.5);
            if (c < 1) c = 1;
        }
        counts[i] = c;
        displs[i] = at;
        at += c;
    }
}
