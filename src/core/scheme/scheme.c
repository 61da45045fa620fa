/* mpitempo: scheme registry and helpers shared by the schemes. */
#include "scheme/scheme.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the schemes, one file each (scheme_<name>.c) */
extern const mt_scheme_t mt_scheme_barrier, mt_scheme_loop, mt_scheme_barrier_loop, mt_scheme_window,
    mt_scheme_roundtime;

const mt_scheme_t *const mt_schemes[] = {&mt_scheme_barrier, &mt_scheme_loop, &mt_scheme_barrier_loop,
                                         &mt_scheme_window, &mt_scheme_roundtime};
const int mt_nschemes = (int)(sizeof(mt_schemes) / sizeof(mt_schemes[0]));

const mt_scheme_t *mt_scheme_find(const char *name)
{
    for (int i = 0; i < mt_nschemes; i++)
        if (strcmp(mt_schemes[i]->name, name) == 0) return mt_schemes[i];
    return NULL;
}

void mt_scheme_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_nschemes; i++) mt_names_add(buf, len, mt_schemes[i]->name);
}

void mt_scheme_write_list(mt_json_t *j)
{
    mt_json_key(j, "schemes");
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_nschemes; i++) {
        const mt_scheme_t *s = mt_schemes[i];
        mt_json_obj_begin(j);
        mt_json_kstr(j, "name", s->name);
        mt_json_kstr(j, "desc", s->desc);
        mt_json_kbool(j, "needs_global_clock", s->needs_global_clock);
        mt_json_key(j, "params");
        mt_json_arr_begin(j);
        for (int k = 0; s->params && s->params[k] >= 0; k++) {
            const mt_param_def_t *d = mt_param_def(s->params[k], MT_APP_BENCH);
            if (d) mt_json_str(j, d->name);
        }
        mt_json_arr_end(j);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
}

void mt_scheme_clock_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_nschemes; i++)
        if (mt_schemes[i]->needs_global_clock) mt_names_add(buf, len, mt_schemes[i]->name);
}

int mt_scheme_open(const char *name, const mt_params_t *p, mt_scheme_inst_t *si, char *err)
{
    memset(si, 0, sizeof *si);
    const mt_scheme_t *s = mt_scheme_find(name);
    if (!s) {
        char allowed[256];
        mt_scheme_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown scheme '%s' (allowed: %s)", name, allowed);
    }
    si->s = s;
    if (s->cfg_size && !(si->cfg = calloc(1, s->cfg_size))) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = s->configure ? s->configure(p, si->cfg, err) : MT_OK;
    if (rc != MT_OK) mt_scheme_close(si);
    return rc;
}

static int reads_param(const mt_scheme_t *s, int id)
{
    for (int k = 0; s->params && s->params[k] >= 0; k++)
        if (s->params[k] == id) return 1;
    return 0;
}

/* given, and with a value other than the default of params.def */
static int param_changed(const mt_params_t *p, const mt_params_t *dflt, int id)
{
    const mt_pval_t *v = &p->v[id], *d = &dflt->v[id];
    if (!v->def || !v->given || !v->set) return 0;
    if (!d->set) return v->def->type == MT_T_BOOL ? v->i != 0 : 1;
    switch (v->def->type) {
    case MT_T_INT:
    case MT_T_INT_AUTO:
    case MT_T_SIZE:
    case MT_T_BOOL: return v->i != d->i;
    case MT_T_FLOAT:
    case MT_T_PERCENT:
    case MT_T_DURATION: return v->d != d->d;
    default: return strcmp(v->raw ? v->raw : "", d->raw ? d->raw : "") != 0;
    }
}

int mt_scheme_check_params(const mt_scheme_t *s, const mt_params_t *p, char *err)
{
    mt_params_t dflt;
    mt_params_init(&dflt, p->app);
    for (int i = 0; i < mt_nschemes; i++) {
        const mt_scheme_t *o = mt_schemes[i];
        for (int k = 0; o != s && o->params && o->params[k] >= 0; k++) {
            int id = o->params[k];
            if (reads_param(s, id) || !param_changed(p, &dflt, id)) continue;
            char readers[256] = "", flag[96];
            for (int j = 0; j < mt_nschemes; j++)
                if (reads_param(mt_schemes[j], id)) mt_names_add(readers, sizeof readers, mt_schemes[j]->name);
            mt_param_flag(p->v[id].def, flag, sizeof flag);
            return mt_fail(err, MT_EINVAL, "%s does not apply to scheme '%s' (it applies to %s): leave it out or "
                           "choose one of those schemes", flag, s->name, readers);
        }
    }
    return MT_OK;
}

void mt_scheme_close(mt_scheme_inst_t *si)
{
    free(si->cfg);
    si->cfg = NULL;
}

int mt_meas_alloc(mt_meas_t *m, int n)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->runtime_s = calloc((size_t)n, sizeof(double));
    m->local_max_s = calloc((size_t)n, sizeof(double));
    m->valid = calloc((size_t)n, sizeof(int));
    if (!m->runtime_s || !m->local_max_s || !m->valid) {
        mt_meas_free(m);
        return MT_ENOMEM;
    }
    return MT_OK;
}

void mt_meas_free(mt_meas_t *m)
{
    free(m->runtime_s);
    free(m->local_max_s);
    free(m->valid);
    free(m->ts_start);
    free(m->ts_end);
    m->runtime_s = m->local_max_s = NULL;
    m->ts_start = m->ts_end = NULL;
    m->valid = NULL;
}

int mt_meas_realloc(mt_meas_t *m, int n)
{
    mt_meas_info_t keep = m->info;
    mt_meas_free(m);
    int rc = mt_meas_alloc(m, n);
    m->info = keep;
    return rc;
}

void mt_gather_times(mt_ctx_t *ctx, const double *ls, const double *le, int n, mt_meas_t *m)
{
    if (!ctx->want_timestamps || n == 0) return;
    size_t tot = (size_t)n * (size_t)ctx->size;
    if (ctx->rank == 0) {
        m->ts_start = malloc(sizeof(double) * tot);
        m->ts_end = malloc(sizeof(double) * tot);
        if (!m->ts_start || !m->ts_end) {
            fprintf(stderr, "%s: error: out of memory for %zu timestamps\n", mt_prog(), tot);
            MPI_Abort(ctx->comm, 5);
        }
    }
    /* rank-major on rank 0: ts[r * n + i] */
    mt_check_mpi(MPI_Gather(ls, n, MPI_DOUBLE, m->ts_start, n, MPI_DOUBLE, 0, ctx->comm), "MPI_Gather");
    mt_check_mpi(MPI_Gather(le, n, MPI_DOUBLE, m->ts_end, n, MPI_DOUBLE, 0, ctx->comm), "MPI_Gather");
}

void mt_reduce_max(mt_ctx_t *ctx, const double *local, double *out, int n)
{
    mt_check_mpi(MPI_Reduce(local, out, n, MPI_DOUBLE, MPI_MAX, 0, ctx->comm), "MPI_Reduce");
}
