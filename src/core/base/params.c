/* mpitempo: the parameter table and its values (see params.h). */
#include "base/params.h"
#include "base/mt_common.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const mt_param_def_t mt_param_defs[] = {
#define MT_PARAM(name, type, def, unit, min, max, apps, help) \
    {MTP_##name, #name, MT_T_##type, def, unit, min, max, apps, help},
#include "params.def"
#undef MT_PARAM
};
const int mt_nparam_defs = (int)(sizeof mt_param_defs / sizeof mt_param_defs[0]);

const char *mt_ptype_name(mt_ptype_t t)
{
    static const char *const names[] = {"INT", "FLOAT", "STR", "BOOL", "DURATION", "SIZE", "LIST", "INT_AUTO", "PERCENT"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const mt_param_def_t *mt_param_def(int id, unsigned app)
{
    for (int i = 0; i < mt_nparam_defs; i++)
        if (mt_param_defs[i].id == id && (mt_param_defs[i].apps & app)) return &mt_param_defs[i];
    return NULL;
}

void mt_param_flag(const mt_param_def_t *d, char *buf, size_t len)
{
    snprintf(buf, len, "--%s", d->name);
    for (char *c = buf + 2; *c; c++)
        if (*c == '_') *c = '-';
}

/* INT bounds as long long (a max of 2^63 - 1 does not survive the double) */
static long long int_bound(double x)
{
    if (x >= 9.2e18) return LLONG_MAX;
    if (x <= -9.2e18) return LLONG_MIN;
    return (long long)x;
}

/* parse text into v by the type of v->def; the syntax only, plus INT's range */
static int parse_value(mt_pval_t *v, const char *text, char *err)
{
    const mt_param_def_t *d = v->def;
    char flag[96];
    mt_param_flag(d, flag, sizeof flag);
    int rc = MT_OK;
    switch (d->type) {
    case MT_T_INT: rc = mt_parse_int(text, flag, int_bound(d->min), int_bound(d->max), &v->i, err); break;
    case MT_T_INT_AUTO:
        if (text && !strcmp(text, "auto")) {
            v->i = MT_P_AUTO;
        } else if (mt_parse_int(text, flag, int_bound(d->min), int_bound(d->max), &v->i, err) != MT_OK) {
            rc = mt_fail(err, MT_EINVAL, "invalid %s '%s': expected an integer in [%lld, %lld] or auto", flag,
                         text ? text : "", int_bound(d->min), int_bound(d->max));
        }
        break;
    case MT_T_FLOAT: rc = mt_parse_double(text, flag, &v->d, err); break;
    case MT_T_PERCENT: rc = mt_parse_percent(text, flag, d->min, d->max, &v->d, err); break;
    case MT_T_DURATION: rc = mt_parse_duration_as(text, flag, &v->d, err); break;
    case MT_T_SIZE: {
        int64_t b = 0;
        rc = mt_parse_size_as(text, flag, d->min <= 0, &b, err);
        v->i = b;
        break;
    }
    case MT_T_BOOL: v->i = 1; break;
    case MT_T_LIST: {
        char **items;
        int n;
        char why[MT_ERRLEN];
        rc = mt_split_list(text, &items, &n, why);
        if (rc == MT_OK) mt_free_list(items, n);
        else rc = mt_fail(err, rc, "invalid %s '%s': %s", flag, text ? text : "", why);
        break;
    }
    case MT_T_STR:
        if (!text || !*text) rc = mt_fail(err, MT_EINVAL, "invalid %s '': expected a value", flag);
        break;
    }
    if (rc != MT_OK) return rc;
    v->raw = text;
    v->set = 1;
    return MT_OK;
}

void mt_params_init(mt_params_t *p, unsigned app)
{
    memset(p, 0, sizeof *p);
    p->app = app;
    for (int i = 0; i < mt_nparam_defs; i++) {
        const mt_param_def_t *d = &mt_param_defs[i];
        if (!(d->apps & app)) continue;
        mt_pval_t *v = &p->v[d->id];
        v->def = d;
        if (d->def[0] && d->type != MT_T_BOOL) {
            char err[MT_ERRLEN];
            if (parse_value(v, d->def, err) != MT_OK) { /* params.def is wrong: the unit test says so first */
                fprintf(stderr, "mpitempo: bad default in params.def: %s\n", err);
                abort();
            }
        }
    }
}

static const mt_pval_t *get(const mt_params_t *p, int id, unsigned types)
{
    const mt_pval_t *v = id >= 0 && id < MTP_COUNT ? &p->v[id] : NULL;
    if (!v || !v->def || !((1u << v->def->type) & types)) {
        fprintf(stderr, "mpitempo: internal error: parameter %d read with the wrong type or app\n", id);
        abort();
    }
    return v;
}

int mt_params_set(mt_params_t *p, int id, const char *value, char *err)
{
    mt_pval_t *v = (mt_pval_t *)get(p, id, ~0u);
    mt_pval_t nv = *v;
    int rc = parse_value(&nv, v->def->type == MT_T_BOOL ? "" : value, err);
    if (rc != MT_OK) return rc;
    nv.given = 1;
    *v = nv;
    return MT_OK;
}

int mt_params_check_bounds(const mt_params_t *p, char *err)
{
    for (int id = 0; id < MTP_COUNT; id++) {
        const mt_pval_t *v = &p->v[id];
        if (!v->def || !v->set) continue;
        const mt_param_def_t *d = v->def;
        double x;
        const char *what;
        switch (d->type) {
        case MT_T_FLOAT: x = v->d; what = "a number"; break;
        case MT_T_DURATION: x = v->d; what = "a duration in seconds"; break;
        case MT_T_SIZE: x = (double)v->i; what = "a size in bytes"; break;
        default: continue;
        }
        if (!(x >= d->min && x <= d->max)) {
            char flag[96];
            mt_param_flag(d, flag, sizeof flag);
            return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected %s in [%g, %g]", flag, v->raw, what, d->min,
                           d->max);
        }
    }
    return MT_OK;
}

#define T(x) (1u << MT_T_##x)
int mt_p_set(const mt_params_t *p, int id) { return get(p, id, ~0u)->set; }
int mt_p_given(const mt_params_t *p, int id) { return get(p, id, ~0u)->given; }
long long mt_p_int(const mt_params_t *p, int id) { return get(p, id, T(INT) | T(INT_AUTO))->i; }
double mt_p_num(const mt_params_t *p, int id) { return get(p, id, T(FLOAT) | T(DURATION) | T(PERCENT))->d; }
int64_t mt_p_size(const mt_params_t *p, int id) { return (int64_t)get(p, id, T(SIZE))->i; }
int mt_p_bool(const mt_params_t *p, int id) { return (int)get(p, id, T(BOOL))->i; }
const char *mt_p_str(const mt_params_t *p, int id)
{
    const mt_pval_t *v = get(p, id, T(STR) | T(LIST));
    return v->set ? v->raw : NULL;
}
const char *mt_p_raw(const mt_params_t *p, int id) { return get(p, id, ~0u)->raw; }
#undef T

void mt_params_write_list(mt_json_t *j, unsigned app)
{
    mt_json_arr_begin(j);
    for (int i = 0; i < mt_nparam_defs; i++) {
        const mt_param_def_t *d = &mt_param_defs[i];
        if (!(d->apps & app)) continue;
        mt_json_obj_begin(j);
        mt_json_kstr(j, "name", d->name);
        mt_json_kstr(j, "type", mt_ptype_name(d->type));
        mt_json_key(j, "default");
        if (d->def[0]) mt_json_str(j, d->def);
        else mt_json_null(j);
        mt_json_kstr(j, "unit", d->unit);
        if (d->type == MT_T_INT || d->type == MT_T_INT_AUTO || d->type == MT_T_SIZE) { /* exact, even 2^63 - 1 */
            mt_json_kint(j, "min", int_bound(d->min));
            mt_json_kint(j, "max", int_bound(d->max));
        } else {
            mt_json_knum(j, "min", d->min);
            mt_json_knum(j, "max", d->max);
        }
        mt_json_kstr(j, "help", d->help);
        mt_json_obj_end(j);
    }
    mt_json_arr_end(j);
}

void mt_params_write_values(mt_json_t *j, const mt_params_t *p)
{
    mt_json_obj_begin(j);
    for (int i = 0; i < mt_nparam_defs; i++) {
        const mt_param_def_t *d = &mt_param_defs[i];
        const mt_pval_t *v = &p->v[d->id];
        if (v->def != d) continue;
        mt_json_key(j, d->name);
        if (d->type == MT_T_BOOL) mt_json_bool(j, (int)v->i);
        else if (!v->set) mt_json_null(j);
        else if (d->type == MT_T_INT_AUTO && v->i == MT_P_AUTO) mt_json_str(j, "auto");
        else if (d->type == MT_T_INT || d->type == MT_T_INT_AUTO || d->type == MT_T_SIZE) mt_json_int(j, v->i);
        else if (d->type == MT_T_FLOAT || d->type == MT_T_DURATION || d->type == MT_T_PERCENT) mt_json_num(j, v->d);
        else mt_json_str(j, v->raw);
    }
    mt_json_obj_end(j);
}
