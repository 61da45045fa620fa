/* mpitempo: parsing helpers and the deterministic PRNG (no MPI in here). */
#include "base/mt_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef MT_SMPI
#include <smpi/smpi.h>
#endif

int mt_fail(char *err, int code, const char *fmt, ...)
{
    if (err) { /* through a copy: callers may pass err itself as an argument (a prefix on a cause) */
        char buf[MT_ERRLEN];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        memcpy(err, buf, sizeof buf);
    }
    return code;
}

int mt_parse_size(const char *s, int64_t *out, char *err)
{
    return mt_parse_size_ex(s, 0, out, err);
}

/* why s is not a size (NULL: it is one, in *out) */
static const char *size_reason(const char *s, int allow_zero, int64_t *out)
{
    const char *what = allow_zero ? "expected a non-negative number of bytes, optionally with K, M or G"
                                  : "expected a positive number of bytes, optionally with K, M or G";
    const char *p = s ? s : "";
    while (isspace((unsigned char)*p)) p++;
    if (*p == '-' && isdigit((unsigned char)p[1])) return "sizes cannot be negative";
    if (*p == '\0' || *p == '-' || *p == '+') return what;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno == ERANGE) return what;
    /* one grammar with the Python side (io/sizes.py; tests/size_cases.py): digits, blanks, then K, M or G
     * optionally followed by B or iB (the same powers of 1024), or a plain B; blanks around */
    unsigned long long mul = 1;
    while (isspace((unsigned char)*end)) end++;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1ULL << 10; break;
        case 'M': mul = 1ULL << 20; break;
        case 'G': mul = 1ULL << 30; break;
        case 'B': mul = 0; break; /* a plain B: bytes */
        default: return what;
        }
        end++;
        if (mul == 0) {
            mul = 1;
        } else if (toupper((unsigned char)*end) == 'I' && toupper((unsigned char)end[1]) == 'B') {
            end += 2;
        } else if (toupper((unsigned char)*end) == 'B') {
            end++;
        }
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end) return what;
    if (v == 0 && !allow_zero) return "sizes must be at least 1 byte";
    if (v > (unsigned long long)INT64_MAX / mul) return "too large (at most 9223372036854775807 bytes)";
    *out = (int64_t)(v * mul);
    return NULL;
}

int mt_parse_size_as(const char *s, const char *name, int allow_zero, int64_t *out, char *err)
{
    const char *why = size_reason(s, allow_zero, out);
    return why ? mt_fail(err, MT_EINVAL, "invalid %s '%s': %s", name, s ? s : "", why) : MT_OK;
}

int mt_parse_size_ex(const char *s, int allow_zero, int64_t *out, char *err)
{
    return mt_parse_size_as(s, "size", allow_zero, out, err);
}

int mt_split_list(const char *s, char ***items, int *n, char *err)
{
    *items = NULL;
    *n = 0;
    if (!s || !*s) return mt_fail(err, MT_EINVAL, "empty list: give one or more comma-separated items");
    int cap = 8, cnt = 0;
    char **v = malloc(sizeof(char *) * cap);
    if (!v) return mt_fail(err, MT_ENOMEM, "out of memory");
    const char *p = s;
    for (;;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        while (len > 0 && isspace((unsigned char)*p)) { p++; len--; }
        while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
        if (len == 0) {
            mt_free_list(v, cnt);
            return mt_fail(err, MT_EINVAL, "an empty item (two commas in a row, or a comma at an end)");
        }
        if (cnt == cap) {
            cap *= 2;
            char **nv = realloc(v, sizeof(char *) * cap);
            if (!nv) { mt_free_list(v, cnt); return mt_fail(err, MT_ENOMEM, "out of memory"); }
            v = nv;
        }
        v[cnt] = malloc(len + 1);
        if (!v[cnt]) { mt_free_list(v, cnt); return mt_fail(err, MT_ENOMEM, "out of memory"); }
        memcpy(v[cnt], p, len);
        v[cnt][len] = '\0';
        cnt++;
        if (!q) break;
        p = q + 1;
    }
    *items = v;
    *n = cnt;
    return MT_OK;
}

void mt_free_list(char **items, int n)
{
    if (!items) return;
    for (int i = 0; i < n; i++) free(items[i]);
    free(items);
}

static int push_size(int64_t **v, int *n, int *cap, int64_t x)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        int64_t *nv = realloc(*v, sizeof(int64_t) * nc);
        if (!nv) return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

int mt_parse_size_list(const char *s, int64_t **out, int *n, char *err)
{
    return mt_parse_size_list_ex(s, 0, out, n, err);
}

int mt_parse_size_list_ex(const char *s, int allow_zero, int64_t **out, int *n, char *err)
{
    char **items;
    int ni, rc;
    *out = NULL;
    *n = 0;
    if ((rc = mt_split_list(s, &items, &ni, err)) != MT_OK)
        return rc == MT_EINVAL ? mt_fail(err, MT_EINVAL, "invalid size list '%s': %s", s ? s : "", err) : rc;
    int64_t *v = NULL;
    int cnt = 0, cap = 0;
    for (int i = 0; i < ni; i++) {
        /* a range "a-b": the dash must not be the first character */
        char *dash = strchr(items[i] + 1, '-');
        if (items[i][0] != '-' && dash) {
            *dash = '\0';
            int64_t a, b;
            if ((rc = mt_parse_size_ex(items[i], allow_zero, &a, err)) != MT_OK ||
                (rc = mt_parse_size_ex(dash + 1, allow_zero, &b, err)) != MT_OK)
                goto fail;
            if (b < a) {
                rc = mt_fail(err, MT_EINVAL, "invalid size range '%s-%s': the end is smaller than the start",
                             items[i], dash + 1);
                goto fail;
            }
            /* a range from 0 continues with 1, 2, 4, ... */
            for (int64_t x = a; x <= b; x = x ? x * 2 : 1) {
                if (push_size(&v, &cnt, &cap, x)) { rc = mt_fail(err, MT_ENOMEM, "out of memory"); goto fail; }
                if (x > INT64_MAX / 2) break;
            }
        } else {
            int64_t a;
            if ((rc = mt_parse_size_ex(items[i], allow_zero, &a, err)) != MT_OK) goto fail;
            if (push_size(&v, &cnt, &cap, a)) { rc = mt_fail(err, MT_ENOMEM, "out of memory"); goto fail; }
        }
    }
    mt_free_list(items, ni);
    *out = v;
    *n = cnt;
    return MT_OK;
fail:
    mt_free_list(items, ni);
    free(v);
    return rc;
}

int mt_parse_int(const char *s, const char *name, long long lo, long long hi, long long *out, char *err)
{
    if (!s || !*s) return mt_fail(err, MT_EINVAL, "invalid %s '': expected an integer in [%lld, %lld]", name, lo, hi);
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    /* strtoll skips leading white space: ' 5' passed where '5 ' did not */
    if (end == s || *end || errno == ERANGE || isspace((unsigned char)s[0]))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected an integer in [%lld, %lld]", name, s, lo, hi);
    if (v < lo || v > hi)
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected an integer in [%lld, %lld]", name, s, lo, hi);
    *out = v;
    return MT_OK;
}

void mt_rng_seed(mt_rng_t *r, uint64_t seed) { r->s = seed; }

uint64_t mt_rng_next(mt_rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t mt_rng_below(mt_rng_t *r, uint64_t n)
{
    if (n <= 1) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = mt_rng_next(r); while (x >= limit);
    return x % n;
}

void mt_shuffle_int(mt_rng_t *r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)mt_rng_below(r, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

int mt_parse_duration_as(const char *s, const char *name, double *out, char *err)
{
    if (!s || !*s) return mt_fail(err, MT_EINVAL, "invalid %s '': expected a duration with a unit, e.g. 20us, 1.5ms, 2s", name);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || v != v || isinf(v))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a finite duration with a unit, e.g. 20us, 1.5ms, 2s",
                       name, s);
    if (v < 0) return mt_fail(err, MT_EINVAL, "invalid %s '%s': must not be negative", name, s);
    double div = 1.0; /* a division by an exact power of ten rounds correctly: 20us is 2e-05 */
    if (strcmp(end, "") == 0) {
        /* a bare number is a typo waiting to happen (--window 20 is 20 s per measurement): only 0 may omit it */
        if (v != 0) return mt_fail(err, MT_EINVAL, "invalid %s '%s': give a unit (s, ms, us or ns), e.g. %ss or %sus",
                                   name, s, s, s);
    } else if (strcmp(end, "s") == 0) div = 1.0;
    else if (strcmp(end, "ms") == 0) div = 1e3;
    else if (strcmp(end, "us") == 0) div = 1e6;
    else if (strcmp(end, "ns") == 0) div = 1e9;
    else return mt_fail(err, MT_EINVAL, "invalid %s '%s': the unit must be s, ms, us or ns", name, s);
    if (v / div > MT_DURATION_MAX_S)
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': longer than the largest duration, %gs", name, s,
                       MT_DURATION_MAX_S);
    *out = v / div;
    return MT_OK;
}

int mt_parse_duration(const char *s, double *out, char *err) { return mt_parse_duration_as(s, "duration", out, err); }

int mt_parse_double(const char *s, const char *name, double *out, char *err)
{
    char *end = NULL;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || end == s || *end || errno == ERANGE || !isfinite(v))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a number", name, s ? s : "");
    *out = v;
    return MT_OK;
}

int mt_parse_percent(const char *s, const char *name, double lo_pct, double hi_pct, double *out, char *err)
{
    if (s && !strcmp(s, "off")) {
        *out = 0;
        return MT_OK;
    }
    char *end = NULL;
    errno = 0;
    double v = s && *s && !isspace((unsigned char)*s) ? strtod(s, &end) : NAN;
    if (!s || !*s || !end || end == s || strcmp(end, "%") != 0 || errno == ERANGE || !isfinite(v))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a percentage such as 1%% or 0.5%%, or off", name,
                       s ? s : "");
    if (!(v >= lo_pct && v <= hi_pct))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a percentage between %g%% and %g%%, or off", name, s,
                       lo_pct, hi_pct);
    *out = v / 100.0;
    return MT_OK;
}

void mt_names_add(char *buf, size_t len, const char *name)
{
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
}

int mt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mt_median_inplace(double *v, int n)
{
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof(double), mt_cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mt_median_valid(const double *v, const int *valid, int n)
{
    double *c = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!c) return NAN;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (valid[i]) c[m++] = v[i];
    double med = mt_median_inplace(c, m);
    free(c);
    return med;
}

void mt_sim_flops(double flops)
{
#ifdef MT_SMPI
    if (flops > 0) smpi_execute_flops(flops);
#else
    (void)flops;
#endif
}

void mt_sim_skip(double s)
{
#ifdef MT_SMPI
    s -= 20e-9; /* a couple of clock reads (smpi/wtime) left for the spin */
    if (!(s > 0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
#else
    (void)s;
#endif
}
