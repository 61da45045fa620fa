/* mpitempo: the simulated clock's settings (per-rank offset and drift). Off
 * unless an option or MPITEMPO_SIM_* variable asks for it. */
#include "clock/clock.h"
#include "base/mt_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_double(const char *s, const char *what, double *out, char *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a number", what, s);
    *out = v;
    return MT_OK;
}

/* value for rank from a comma-separated list; the last value repeats */
static int pick(const char *list, const char *what, int rank, double *out, char *err)
{
    char **items;
    int n, rc;
    if ((rc = mt_split_list(list, &items, &n, err)) != MT_OK || n == 0)
        return mt_fail(err, MT_EINVAL, "invalid %s '%s': expected a comma-separated list of numbers", what, list);
    int k = rank < n ? rank : n - 1;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        double v = 0;
        rc = parse_double(items[i], what, &v, err);
        if (i == k) *out = v;
    }
    mt_free_list(items, n);
    return rc;
}

int mt_sim_parse(const char *offsets, const char *drifts, const char *random, int rank, int nprocs, mt_sim_t *out,
                 char *err)
{
    memset(out, 0, sizeof *out);
    (void)nprocs;
    if (!offsets && !drifts && !random) return MT_OK;
    int rc;
    if (random) {
        if (offsets || drifts)
            return mt_fail(err, MT_EINVAL, "simulated clock: give either random settings or offset/drift lists, not both");
        char buf[256];
        if (strlen(random) >= sizeof buf)
            return mt_fail(err, MT_EINVAL, "invalid simulated clock random spec '%.40s...': %zu characters, at most %zu",
                           random, strlen(random), sizeof buf - 1);
        strcpy(buf, random);
        char *f[3] = {buf, NULL, NULL};
        int nf = 1;
        for (char *p = buf; *p; p++)
            if (*p == ':') {
                if (nf == 3) return mt_fail(err, MT_EINVAL, "invalid simulated-clock random spec '%s': expected SEED[:MAXOFF_S[:MAXDRIFT_PPM]]", random);
                *p = '\0';
                f[nf++] = p + 1;
            }
        long long seed;
        if ((rc = mt_parse_int(f[0], "simulated-clock seed", 0, INT64_MAX, &seed, err))) return rc;
        double maxoff = 1.0, maxdrift = 50.0;
        if (f[1] && (rc = parse_double(f[1], "simulated-clock max offset", &maxoff, err))) return rc;
        if (f[2] && (rc = parse_double(f[2], "simulated-clock max drift", &maxdrift, err))) return rc;
        if (maxoff < 0 || maxdrift < 0 || maxdrift >= 1e5)
            return mt_fail(err, MT_EINVAL, "invalid simulated-clock random spec '%s': bounds must be >= 0 (drift < 1e5 ppm)", random);
        mt_rng_t r;
        mt_rng_seed(&r, (uint64_t)seed * 0x9E3779B97F4A7C15ULL + (uint64_t)rank);
        double u1 = (double)(mt_rng_next(&r) >> 11) / 9007199254740992.0;
        double u2 = (double)(mt_rng_next(&r) >> 11) / 9007199254740992.0;
        out->offset_s = (2 * u1 - 1) * maxoff;
        out->drift = (2 * u2 - 1) * maxdrift * 1e-6;
        out->on = 1;
        return MT_OK;
    }
    double off = 0, dr = 0;
    if (offsets && (rc = pick(offsets, "simulated clock offsets", rank, &off, err))) return rc;
    if (drifts && (rc = pick(drifts, "simulated clock drifts", rank, &dr, err))) return rc;
    if (fabs(dr) >= 1e5) return mt_fail(err, MT_EINVAL, "simulated clock drift %g ppm is out of range (|drift| < 1e5)", dr);
    out->on = 1;
    out->offset_s = off;
    out->drift = dr * 1e-6;
    return MT_OK;
}

int mt_sim_from_env(const char *offsets, const char *drifts, const char *random, int rank, int nprocs,
                    mt_sim_t *out, char *err)
{
    if (!offsets && !drifts && !random) {
        offsets = getenv("MPITEMPO_SIM_OFFSETS");
        drifts = getenv("MPITEMPO_SIM_DRIFTS");
        random = getenv("MPITEMPO_SIM_RANDOM");
        if (offsets && !*offsets) offsets = NULL;
        if (drifts && !*drifts) drifts = NULL;
        if (random && !*random) random = NULL;
    }
    return mt_sim_parse(offsets, drifts, random, rank, nprocs, out, err);
}
