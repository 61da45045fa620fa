/* mpitempo: the sync-algorithm registry, spec parsing and formatting. */
#include "clock/sync.h"
#include "base/mt_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the algorithms, one file each (sync_<name>.c) */
extern const mt_sync_alg_t mt_sync_skampi, mt_sync_hoefler, mt_sync_jk, mt_sync_hca, mt_sync_hca2, mt_sync_hca3,
    mt_sync_prop;

const mt_sync_alg_t *const mt_sync_algs[] = {
    &mt_sync_skampi, &mt_sync_hoefler, &mt_sync_jk, &mt_sync_hca, &mt_sync_hca2, &mt_sync_hca3, &mt_sync_prop,
};
const int mt_nsync_algs = (int)(sizeof(mt_sync_algs) / sizeof(mt_sync_algs[0]));

double mt_sync_ci_for(const mt_sync_alg_t *a, const mt_sync_params_t *p, int size)
{
    if (p->ci_ppm != MT_CI_AUTO) return p->ci_ppm;
    int depth = 1;
    if (a->tree)
        while ((1 << depth) < size && depth < 30) depth++;
    return MT_CI_AUTO_PPM / depth;
}

const mt_sync_alg_t *mt_sync_find(const char *name)
{
    for (int i = 0; i < mt_nsync_algs; i++)
        if (strcmp(mt_sync_algs[i]->name, name) == 0) return mt_sync_algs[i];
    return NULL;
}

void mt_sync_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_nsync_algs; i++) {
        if (i) strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, mt_sync_algs[i]->name, len - strlen(buf) - 1);
    }
}

/* ---- spec parsing ---- */
static const struct { const char *name; unsigned bit; } keys[] = {
    {"fitpts", MT_P_FITPTS}, {"pp", MT_P_PP},         {"offset", MT_P_OFFSET}, {"recompute", MT_P_RECOMPUTE},
    {"window", MT_P_WINDOW}, {"slope", MT_P_SLOPE},   {"z", MT_P_Z},           {"tol", MT_P_TOL}, {"fit", MT_P_FIT},
    {"rtt", MT_P_RTT}, {"ci", MT_P_CI},
};
#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static void key_names(unsigned mask, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < NKEYS; i++)
        if (mask & keys[i].bit) {
            if (*buf) strncat(buf, ", ", len - strlen(buf) - 1);
            strncat(buf, keys[i].name, len - strlen(buf) - 1);
        }
    if (!*buf) snprintf(buf, len, "none");
}

static int parse_num(const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(d)) return 0;
    *out = d;
    return 1;
}

/* parse "name[:k=v,k=v]" (a copy, modified in place) */
static int parse_flat(char *s, const char *whole, const mt_sync_alg_t **alg, mt_sync_params_t *p, unsigned *given,
                      char *err)
{
    char allowed[256];
    char *colon = strchr(s, ':');
    if (colon) *colon = '\0';
    if (!*s) return mt_fail(err, MT_EINVAL, "malformed clock-sync spec '%s': missing algorithm name", whole);
    const mt_sync_alg_t *a = mt_sync_find(s);
    if (!a) {
        mt_sync_names(allowed, sizeof allowed);
        if (!strcmp(s, whole)) /* the whole spec is the name: say it once */
            return mt_fail(err, MT_EINVAL, "unknown clock-sync algorithm '%s' (allowed: %s, or h2:A/B, h3:A/B/C, h[LEVELS]:...)",
                           s, allowed);
        return mt_fail(err, MT_EINVAL, "unknown clock-sync algorithm '%s' in '%s' (allowed: %s, or h2:A/B, h3:A/B/C, h[LEVELS]:...)",
                       s, whole, allowed);
    }
    *alg = a;
    *p = a->defaults;
    if (!p->offset) p->offset = &mt_offset_skampi;
    *given = 0;
    if (!colon) return MT_OK;
    char *q = colon + 1;
    if (!*q) return mt_fail(err, MT_EINVAL, "malformed clock-sync spec '%s': nothing after ':'", whole);
    for (;;) {
        char *comma = strchr(q, ',');
        if (comma) *comma = '\0';
        char *eq = strchr(q, '=');
        if (!eq || eq == q || !eq[1])
            return mt_fail(err, MT_EINVAL, "malformed clock-sync spec '%s': expected key=value, got '%s'", whole, q);
        *eq = '\0';
        const char *k = q, *v = eq + 1;
        unsigned bit = 0;
        for (int i = 0; i < NKEYS; i++)
            if (strcmp(keys[i].name, k) == 0) bit = keys[i].bit;
        unsigned mask = a->keys | ((a->keys & MT_P_OFFSET) ? MT_P_RTT : 0);
        if (!bit || !(mask & bit)) {
            key_names(mask, allowed, sizeof allowed);
            return mt_fail(err, MT_EINVAL, "clock-sync algorithm '%s' has no parameter '%s' (allowed: %s)", a->name, k,
                           allowed);
        }
        if (*given & bit) return mt_fail(err, MT_EINVAL, "parameter '%s' given twice in '%s'", k, whole);
        *given |= bit;
        double d = 0;
        long long ll;
        char e2[MT_ERRLEN];
        switch (bit) {
        case MT_P_FITPTS:
            if (mt_parse_int(v, "fitpts", 2, 1000000, &ll, e2))
                return mt_fail(err, MT_EINVAL, "invalid fitpts '%s' in '%s': fit points must be an integer >= 2 and <= 1000000", v, whole);
            p->fitpts = (int)ll;
            break;
        case MT_P_PP:
            if (mt_parse_int(v, "pp", 1, 1000000, &ll, e2))
                return mt_fail(err, MT_EINVAL, "invalid pp '%s' in '%s': ping-pongs must be an integer >= 1 and <= 1000000", v, whole);
            p->pp = (int)ll;
            break;
        case MT_P_OFFSET:
            if (!(p->offset = mt_offset_find(v))) {
                mt_offset_names(allowed, sizeof allowed);
                return mt_fail(err, MT_EINVAL, "unknown offset algorithm '%s' in '%s' (allowed: %s)", v, whole, allowed);
            }
            break;
        case MT_P_RECOMPUTE:
            if (strcmp(v, "0") && strcmp(v, "1"))
                return mt_fail(err, MT_EINVAL, "invalid recompute '%s' in '%s': expected 0 or 1", v, whole);
            p->recompute = v[0] == '1';
            break;
        case MT_P_WINDOW:
            if (!parse_num(v, &d) || d < 0 || d > 3600)
                return mt_fail(err, MT_EINVAL, "invalid window '%s' in '%s': expected seconds in [0, 3600]", v, whole);
            p->window_s = d;
            break;
        case MT_P_SLOPE:
            if (!strcmp(v, "auto")) p->slope = MT_SLOPE_AUTO;
            else if (!strcmp(v, "fit")) p->slope = MT_SLOPE_FIT;
            else if (!strcmp(v, "zero")) p->slope = MT_SLOPE_ZERO;
            else return mt_fail(err, MT_EINVAL, "invalid slope '%s' in '%s': expected auto, fit or zero", v, whole);
            break;
        case MT_P_Z:
            if (!parse_num(v, &d) || d <= 0)
                return mt_fail(err, MT_EINVAL, "invalid z '%s' in '%s': expected a number > 0", v, whole);
            p->z = d;
            break;
        case MT_P_FIT:
            if (!strcmp(v, "ts")) p->fit = MT_FIT_TS;
            else if (!strcmp(v, "ols")) p->fit = MT_FIT_OLS;
            else if (!strcmp(v, "paper")) p->fit = MT_FIT_PAPER;
            else return mt_fail(err, MT_EINVAL, "invalid fit '%s' in '%s': expected ts, ols or paper", v, whole);
            break;
        case MT_P_RTT:
            if (!strcmp(v, "median")) p->rtt = MT_RTT_MEDIAN;
            else if (!strcmp(v, "mean")) p->rtt = MT_RTT_MEAN;
            else return mt_fail(err, MT_EINVAL, "invalid rtt '%s' in '%s': expected median or mean", v, whole);
            break;
        case MT_P_CI:
            if (!strcmp(v, "auto")) d = MT_CI_AUTO;
            else if (!parse_num(v, &d) || d < 0 || d > 1e6)
                return mt_fail(err, MT_EINVAL,
                               "invalid ci '%s' in '%s': expected auto or ppm in [0, 1e6] (0: the whole window)", v, whole);
            p->ci_ppm = d == 0 ? 0 : d; /* -0 is 0 */
            break;
        case MT_P_TOL:
            if (!parse_num(v, &d) || d < 0)
                return mt_fail(err, MT_EINVAL, "invalid tol '%s' in '%s': expected seconds >= 0", v, whole);
            p->tol_s = d;
            break;
        }
        if (!comma) break;
        q = comma + 1;
    }
    if ((*given & MT_P_RTT) && p->offset != &mt_offset_meanrtt)
        return mt_fail(err, MT_EINVAL, "rtt= in '%s' applies to offset=meanrtt only", whole);
    if (p->fit == MT_FIT_PAPER) {
        if (((*given & MT_P_SLOPE) && p->slope != MT_SLOPE_FIT) || ((*given & MT_P_WINDOW) && p->window_s != 0) ||
            ((*given & MT_P_RTT) && p->rtt != MT_RTT_MEAN) || ((*given & MT_P_CI) && p->ci_ppm != 0))
            return mt_fail(err, MT_EINVAL, "fit=paper in '%s' sets slope=fit, window=0 and rtt=mean itself (and ci=0): "
                           "give no other slope, window, rtt or ci with it", whole);
        p->slope = MT_SLOPE_FIT;
        p->window_s = 0;
        p->ci_ppm = 0;
        p->rtt = MT_RTT_MEAN; /* Mean-RTT-Offset as Algorithm 8 specifies it */
    }
    return MT_OK;
}

/* a POSIX environment variable name: a letter or '_', then letters, digits and '_' (a name such as
 * 'A$(id)' was accepted and looked up as given) */
static int env_name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max) return 0;
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

static int parse_levels(char *s, const char *whole, mt_sync_spec_t *out, char *err)
{
    out->nlevels = 0;
    for (;;) {
        char *plus = strchr(s, '+');
        if (plus) *plus = '\0';
        if (out->nlevels == MT_SYNC_MAXLEVELS)
            return mt_fail(err, MT_EINVAL, "malformed hierarchical spec '%s': at most %d levels", whole, MT_SYNC_MAXLEVELS);
        mt_level_t *l = &out->level[out->nlevels++];
        memset(l, 0, sizeof *l);
        if (!strcmp(s, "node")) l->kind = MT_LEVEL_NODE;
        else if (!strcmp(s, "socket")) l->kind = MT_LEVEL_SOCKET;
        else if (!strncmp(s, "block=", 6)) {
            long long b;
            char e2[MT_ERRLEN];
            if (mt_parse_int(s + 6, "block", 1, 1 << 30, &b, e2))
                return mt_fail(err, MT_EINVAL, "malformed hierarchical spec '%s': block size '%s' must be an integer >= 1", whole, s + 6);
            l->kind = MT_LEVEL_BLOCK;
            l->block = (int)b;
        } else if (!strncmp(s, "env=", 4)) {
            if (!env_name_ok(s + 4, sizeof l->env))
                return mt_fail(err, MT_EINVAL,
                               "malformed hierarchical spec '%s': env=%s is not an environment variable name "
                               "(allowed: a letter or _, then letters, digits and _; at most %d characters)",
                               whole, s + 4, (int)sizeof l->env - 1);
            l->kind = MT_LEVEL_ENV;
            strcpy(l->env, s + 4);
        } else
            return mt_fail(err, MT_EINVAL,
                           "malformed hierarchical spec '%s': unknown level '%s' (allowed: node, socket, block=K, env=VAR)",
                           whole, s);
        if (!plus) break;
        s = plus + 1;
    }
    return MT_OK;
}

int mt_sync_spec_parse(const char *s, mt_sync_spec_t *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!s || !*s)
        return mt_fail(err, MT_EINVAL, "empty clock-sync spec (allowed: none, skampi, hoefler, jk, hca, hca2, hca3, "
                                       "prop, or h2:A/B, h3:A/B/C, h[LEVELS]:...)");
    if (!strcmp(s, "none")) {
        out->none = 1;
        return MT_OK;
    }
    size_t n = strlen(s);
    char *buf = malloc(n + 1);
    if (!buf) return mt_fail(err, MT_ENOMEM, "out of memory");
    memcpy(buf, s, n + 1);
    int rc = MT_OK;
    char *algs = NULL;
    if (!strncmp(buf, "h2:", 3)) {
        out->nlevels = 1;
        out->level[0].kind = MT_LEVEL_NODE;
        algs = buf + 3;
    } else if (!strncmp(buf, "h3:", 3)) {
        out->nlevels = 2;
        out->level[0].kind = MT_LEVEL_NODE;
        out->level[1].kind = MT_LEVEL_SOCKET;
        algs = buf + 3;
    } else if (!strncmp(buf, "h[", 2)) {
        char *close = strstr(buf, "]:");
        if (!close) {
            rc = mt_fail(err, MT_EINVAL, "malformed hierarchical spec '%s': expected h[LEVEL+...]:ALG/ALG...", s);
            goto out;
        }
        *close = '\0';
        if ((rc = parse_levels(buf + 2, s, out, err))) goto out;
        algs = close + 2;
    } else if (strchr(buf, '/')) {
        rc = mt_fail(err, MT_EINVAL, "malformed clock-sync spec '%s': '/' separates the levels of h2:, h3: or h[...]: specs only", s);
        goto out;
    }
    if (!algs) {
        rc = parse_flat(buf, s, &out->alg[0], &out->params[0], &out->given[0], err);
        goto out;
    }
    int k = 0;
    for (char *a = algs;;) {
        char *slash = strchr(a, '/');
        if (slash) *slash = '\0';
        if (k > out->nlevels) {
            k++;
            break;
        }
        if ((rc = parse_flat(a, s, &out->alg[k], &out->params[k], &out->given[k], err))) goto out;
        k++;
        if (!slash) break;
        a = slash + 1;
    }
    if (k != out->nlevels + 1) {
        rc = mt_fail(err, MT_EINVAL,
                     "malformed hierarchical spec '%s': %d level(s) need %d algorithms separated by '/' (the last one runs inside the innermost groups)",
                     s, out->nlevels, out->nlevels + 1);
        goto out;
    }
    for (int i = 0; i < out->nlevels; i++)
        if (out->alg[i]->innermost_only) {
            rc = mt_fail(err, MT_EINVAL, "malformed hierarchical spec '%s': %s", s, out->alg[i]->innermost_only);
            goto out;
        }
out:
    free(buf);
    return rc;
}

static void fmt_flat(const mt_sync_alg_t *a, const mt_sync_params_t *p, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s", a->name);
    char sep = ':';
#define ADD(...)                                                                    \
    do {                                                                            \
        if (o < len) o += (size_t)snprintf(buf + o, len - o, "%c", sep);            \
        if (o < len) o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__);         \
        sep = ',';                                                                  \
    } while (0)
    if (a->keys & MT_P_FITPTS) ADD("fitpts=%d", p->fitpts);
    if (a->keys & MT_P_PP) ADD("pp=%d", p->pp);
    if (a->keys & MT_P_OFFSET) ADD("offset=%s", p->offset->name);
    if ((a->keys & MT_P_OFFSET) && p->offset == &mt_offset_meanrtt) ADD("rtt=%s", p->rtt == MT_RTT_MEAN ? "mean" : "median");
    if (a->keys & MT_P_RECOMPUTE) ADD("recompute=%d", p->recompute);
    if (a->keys & MT_P_WINDOW) ADD("window=%g", p->window_s);
    if (a->keys & MT_P_SLOPE)
        ADD("slope=%s", p->slope == MT_SLOPE_AUTO ? "auto" : p->slope == MT_SLOPE_FIT ? "fit" : "zero");
    if (a->keys & MT_P_Z) ADD("z=%g", p->z);
    if (a->keys & MT_P_FIT) ADD("fit=%s", p->fit == MT_FIT_PAPER ? "paper" : p->fit == MT_FIT_OLS ? "ols" : "ts");
    if ((a->keys & MT_P_CI) && p->ci_ppm == MT_CI_AUTO) ADD("ci=auto");
    else if (a->keys & MT_P_CI) ADD("ci=%g", p->ci_ppm);
    if (a->keys & MT_P_TOL) ADD("tol=%g", p->tol_s);
#undef ADD
}

void mt_sync_spec_format(const mt_sync_spec_t *s, char *buf, size_t len)
{
    if (s->none) {
        snprintf(buf, len, "none");
        return;
    }
    size_t o = 0;
    buf[0] = '\0';
    if (s->nlevels) {
        o += (size_t)snprintf(buf + o, len - o, "h[");
        for (int i = 0; i < s->nlevels && o < len; i++) {
            const mt_level_t *l = &s->level[i];
            if (i) o += (size_t)snprintf(buf + o, len - o, "+");
            if (o >= len) break;
            if (l->kind == MT_LEVEL_NODE) o += (size_t)snprintf(buf + o, len - o, "node");
            else if (l->kind == MT_LEVEL_SOCKET) o += (size_t)snprintf(buf + o, len - o, "socket");
            else if (l->kind == MT_LEVEL_BLOCK) o += (size_t)snprintf(buf + o, len - o, "block=%d", l->block);
            else o += (size_t)snprintf(buf + o, len - o, "env=%s", l->env);
        }
        if (o < len) o += (size_t)snprintf(buf + o, len - o, "]:");
    }
    for (int i = 0; i <= s->nlevels && o < len; i++) {
        if (i) o += (size_t)snprintf(buf + o, len - o, "/");
        if (o >= len) break;
        fmt_flat(s->alg[i], &s->params[i], buf + o, len - o);
        o += strlen(buf + o);
    }
}

int mt_sync_spec_split(const char *list, char ***items, int *n, char *err)
{
    char **raw;
    int nr, rc;
    *items = NULL;
    *n = 0;
    if ((rc = mt_split_list(list, &raw, &nr, err)) != MT_OK)
        return mt_fail(err, MT_EINVAL, "invalid clock-sync spec list '%s': %s", list ? list : "", err);
    char **v = calloc((size_t)nr, sizeof(char *));
    int cnt = 0;
    if (!v) {
        mt_free_list(raw, nr);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < nr; i++) {
        char *eq = strchr(raw[i], '=');
        size_t pre = eq ? (size_t)(eq - raw[i]) : 0;
        int cont = eq && cnt > 0 && !memchr(raw[i], ':', pre) && !memchr(raw[i], '/', pre) &&
                   !memchr(raw[i], '[', pre);
        if (cont) {
            size_t a = strlen(v[cnt - 1]), b = strlen(raw[i]);
            char *nv = realloc(v[cnt - 1], a + b + 2);
            if (!nv) {
                rc = mt_fail(err, MT_ENOMEM, "out of memory");
                break;
            }
            nv[a] = ',';
            memcpy(nv + a + 1, raw[i], b + 1);
            v[cnt - 1] = nv;
        } else {
            v[cnt++] = raw[i];
            raw[i] = NULL;
        }
    }
    for (int i = 0; i < nr; i++) free(raw[i]);
    free(raw);
    if (rc != MT_OK) {
        mt_free_list(v, cnt);
        return rc;
    }
    *items = v;
    *n = cnt;
    return MT_OK;
}
