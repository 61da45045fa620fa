/* mpitempo: base and global clocks, nesting, flatten/unflatten, model merge,
 * linear fit. */
#include "clock/clock.h"
#include "base/mt_common.h"

#include <math.h>
#include <string.h>

void mt_baseclock_init_local(mt_baseclock_t *b, const mt_timer_inst_t *t, int64_t epoch, const mt_sim_t *sim)
{
    memset(b, 0, sizeof *b);
    b->timer = *t;
    b->epoch = epoch;
    if (sim) b->sim = *sim;
}

int mt_baseclock_init(mt_baseclock_t *b, const mt_timer_inst_t *t, const mt_sim_t *sim, MPI_Comm comm, char *err)
{
    int64_t epoch = t->t->now();
    int rc = MPI_Bcast(&epoch, 1, MPI_INT64_T, 0, comm);
    if (rc != MPI_SUCCESS) return mt_fail(err, MT_EMPI, "MPI_Bcast of the clock epoch failed");
    mt_baseclock_init_local(b, t, epoch, sim);
    return MT_OK;
}

void mt_clock_init(mt_clock_t *c, const mt_baseclock_t *b)
{
    memset(c, 0, sizeof *c);
    c->base = b;
}

int mt_clock_nest(const mt_clock_t *in, const mt_model_t *m, mt_clock_t *out, char *err)
{
    if (in->depth >= MT_CLOCK_MAXDEPTH)
        return mt_fail(err, MT_EINVAL, "clock models nested deeper than %d levels", MT_CLOCK_MAXDEPTH);
    mt_model_t mm = *m;
    if (out != in) *out = *in;
    out->m[out->depth++] = mm;
    return MT_OK;
}

double mt_clock_drift(const mt_clock_t *c)
{
    double p = 1.0;
    for (int i = 0; i < c->depth; i++) p *= 1.0 - c->m[i].slope;
    return 1.0 - p;
}

/* ---- flatten ---- */
#define FLAT_HDR 12
#define FLAT_REC 20

size_t mt_clock_flat_size(const mt_clock_t *c) { return FLAT_HDR + (size_t)c->depth * FLAT_REC; }

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

size_t mt_clock_flatten(const mt_clock_t *c, unsigned char *buf, size_t len)
{
    size_t need = mt_clock_flat_size(c);
    if (len < need) return 0;
    memcpy(buf, "MTCK", 4);
    put_u32(buf + 4, 1);
    put_u32(buf + 8, (uint32_t)c->depth);
    unsigned char *p = buf + FLAT_HDR;
    for (int i = 0; i < c->depth; i++, p += FLAT_REC) {
        int32_t k = c->m[i].kind;
        memcpy(p, &k, 4);
        memcpy(p + 4, &c->m[i].slope, 8);
        memcpy(p + 12, &c->m[i].intercept, 8);
    }
    return need;
}

int mt_clock_unflatten(const unsigned char *buf, size_t len, const mt_baseclock_t *b, mt_clock_t *out, char *err)
{
    if (len < FLAT_HDR || memcmp(buf, "MTCK", 4) != 0 || get_u32(buf + 4) != 1)
        return mt_fail(err, MT_EINVAL, "not a flattened mpitempo clock (bad header)");
    uint32_t depth = get_u32(buf + 8);
    if (depth > MT_CLOCK_MAXDEPTH || len != FLAT_HDR + (size_t)depth * FLAT_REC)
        return mt_fail(err, MT_EINVAL, "flattened clock has a bad depth %u or length %zu", depth, len);
    mt_clock_init(out, b);
    const unsigned char *p = buf + FLAT_HDR;
    for (uint32_t i = 0; i < depth; i++, p += FLAT_REC) {
        int32_t k;
        memcpy(&k, p, 4);
        if (k != MT_MODEL_OFFSET && k != MT_MODEL_LINEAR)
            return mt_fail(err, MT_EINVAL, "flattened clock has an unknown model kind %d", (int)k);
        out->m[i].kind = k;
        memcpy(&out->m[i].slope, p + 4, 8);
        memcpy(&out->m[i].intercept, p + 12, 8);
        if (!isfinite(out->m[i].slope) || !isfinite(out->m[i].intercept))
            return mt_fail(err, MT_EINVAL, "flattened clock has a non-finite model at depth %u", i);
    }
    out->depth = (int)depth;
    return MT_OK;
}

/* ---- merge (HCA2) ----
 * t_B = t_C - (s2 t_C + i2), t_A = t_B - (s1 t_B + i1)
 * => o_CA(t_C) = t_C - t_A = (s1 + s2 - s1 s2) t_C + i1 + i2 (1 - s1) */
void mt_model_merge(const mt_model_t *a, const mt_model_t *b, mt_model_t *out)
{
    double s1 = a->slope, i1 = a->intercept, s2 = b->slope, i2 = b->intercept;
    int kind = (a->kind == MT_MODEL_LINEAR || b->kind == MT_MODEL_LINEAR) ? MT_MODEL_LINEAR : MT_MODEL_OFFSET;
    out->kind = kind;
    out->slope = s1 + s2 - s1 * s2;
    out->intercept = i1 + i2 * (1.0 - s1);
}

/* ---- fit ---- */
int mt_fit_linear(const double *x, const double *y, int n, mt_fit_t *f)
{
    memset(f, 0, sizeof *f);
    if (n < 2) return MT_EINVAL;
    long double sx = 0, sy = 0;
    for (int i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
    }
    double xm = (double)(sx / n), ym = (double)(sy / n);
    long double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double dx = x[i] - xm, dy = y[i] - ym;
        sxx += (long double)dx * dx;
        sxy += (long double)dx * dy;
    }
    if (sxx <= 0) return MT_EINVAL;
    double slope = (double)(sxy / sxx);
    long double ssr = 0;
    for (int i = 0; i < n; i++) {
        double r = (y[i] - ym) - slope * (x[i] - xm);
        ssr += (long double)r * r;
    }
    f->n = n;
    f->slope = slope;
    f->intercept = ym - slope * xm;
    f->xmean = xm;
    f->ymean = ym;
    f->resid_sd = n > 2 ? sqrt((double)(ssr / (n - 2))) : 0.0;
    f->slope_se = n > 2 ? f->resid_sd / sqrt((double)sxx) : 0.0;
    return MT_OK;
}
