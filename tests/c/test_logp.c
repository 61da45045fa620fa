/* The pure parts of the LogP measurement (logp/logp.h) and the op families' names (op.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "logp/logp.h"
#include "mt_test.h"
#include "op/op.h"

int main(void)
{
    char err[MT_ERRLEN];
    /* quantiles with linear interpolation */
    double v[] = {5, 1, 4, 2, 3};
    double med, iqr;
    mt_logp_median_iqr(v, 5, &med, &iqr);
    CHECK_CLOSE(med, 3, 1e-12);
    CHECK_CLOSE(iqr, 2, 1e-12); /* q1 = 2, q3 = 4 */
    double w[] = {4, 1, 3, 2};
    mt_logp_median_iqr(w, 4, &med, &iqr);
    CHECK_CLOSE(med, 2.5, 1e-12);
    CHECK_CLOSE(iqr, 1.5, 1e-12); /* q1 = 1.75, q3 = 3.25 */
    CHECK(isnan(mt_logp_quantile_sorted(v, 0, 0.5)));

    /* least squares: y = 2 + 0.5 x exactly */
    double x[] = {0, 2, 4, 10}, y[] = {2, 3, 4, 7};
    CHECK_CLOSE(mt_logp_slope(x, y, 4), 0.5, 1e-12);
    CHECK(isnan(mt_logp_slope(x, y, 1)));

    /* L and g from the medians; G from an RTT sweep */
    mt_logp_pair_t p = {.a = 0, .b = 1, .rtt = 4e-6, .o_s = 0.5e-6, .o_r = 0.7e-6};
    int64_t sizes[] = {1024, 2048, 4096};
    double rtt_m[] = {4e-6 + 2 * 1024e-10, 4e-6 + 2 * 2048e-10, 4e-6 + 2 * 4096e-10};
    p.rtt_m = rtt_m;
    mt_logp_derive(&p, 4e-6, 4e-6 + 31 * 0.9e-6, 32, sizes, 3);
    CHECK_CLOSE(p.L, 0.8e-6, 1e-15);
    CHECK_CLOSE(p.g, 0.9e-6, 1e-15);
    CHECK_CLOSE(p.G, 1e-10, 1e-18);
    CHECK(mt_logp_sane(&p, err) == MT_OK);
    /* negative L: the message names it and the values */
    mt_logp_pair_t bad = p;
    bad.o_r = 2.5e-6;
    mt_logp_derive(&bad, 4e-6, 4e-6 + 31 * 0.9e-6, 32, NULL, 0);
    CHECK(isnan(bad.G));
    CHECK(mt_logp_sane(&bad, err) == MT_EINVAL);
    CHECK(strstr(err, "L = -1.000 us < 0") != NULL);
    /* g < o_s */
    bad = p;
    mt_logp_derive(&bad, 4e-6, 4e-6 + 31 * 0.2e-6, 32, NULL, 0);
    CHECK(mt_logp_sane(&bad, err) == MT_EINVAL);
    CHECK(strstr(err, "g = 0.200 us < o_s = 0.500 us") != NULL);
    /* L slightly below 0 (within 10% of RTT/2): timer noise, accepted */
    bad = p;
    bad.o_r = 1.6e-6; /* L = 2 - 0.5 - 1.6 = -0.1 us, RTT/2 = 2 us */
    mt_logp_derive(&bad, 4e-6, 4e-6 + 31 * 0.9e-6, 32, NULL, 0);
    CHECK(mt_logp_sane(&bad, err) == MT_OK);

    /* op families: one instance per name, the parameter parsed, bad names explained */
    const mt_op_t *a = mt_op_lookup("barrier:combining:4", err), *b = mt_op_lookup("barrier:combining:4", err);
    CHECK(a && a == b && a->param == 4 && strcmp(a->name, "barrier:combining:4") == 0);
    const mt_op_t *c = mt_op_lookup("barrier:combining:3", err);
    CHECK(c && c != a && c->param == 3);
    CHECK(mt_op_lookup("barrier:dissemination", err) != NULL);
    CHECK(mt_op_lookup("barrier:combining", err) == NULL && strstr(err, "needs its arity") != NULL);
    CHECK(mt_op_lookup("barrier:combining:1", err) == NULL && strstr(err, "N >= 2") != NULL);
    CHECK(mt_op_lookup("barrier:fway:x", err) == NULL && strstr(err, "'barrier:fway:x'") != NULL);
    CHECK(mt_op_lookup("barrier:nope", err) == NULL && strstr(err, "unknown op 'barrier:nope'") != NULL);
    CHECK(strstr(err, "barrier:combining:N") != NULL);
    CHECK(mt_op_lookup("barrier:dissemination:2", err) == NULL);
    TEST_DONE();
}
