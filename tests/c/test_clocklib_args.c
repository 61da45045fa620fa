/* libmpitempo-clock's pure helpers (src/clocklib/clocklib_args.c): which arguments of the create call
 * differ between two ranks and the message that names them, and the refusal of non-finite times with
 * one text whatever the sign bit of a NaN. */
#include "clocklib_args.h"

#include "mt_test.h"

#include <math.h>
#include <string.h>

#define HAS(msg, part) CHECK(strstr((msg), (part)) != NULL)

int main(void)
{
    mt_clib_args_t a, b;
    char msg[2048];
    const char *canon = "hca3:fitpts=50,pp=20";

    /* alike: the same canonical spec, timer and wait */
    mt_clib_args_set(&a, canon, "hca3", NULL, 0);
    mt_clib_args_set(&b, canon, "hca3:fitpts=50", "monotonic", 0);
    CHECK(mt_clib_args_diff(&a, &b) == 0);   /* spelled differently, the same sync; NULL timer is monotonic */
    CHECK_STR(a.timer, "monotonic");
    CHECK(a.spec_null == 0 && a.timer_null == 1 && b.timer_null == 0);

    /* different specs */
    mt_clib_args_set(&b, "jk:fitpts=50,pp=20", "jk", NULL, 0);
    CHECK(mt_clib_args_diff(&a, &b) == MT_CLIB_DIFF_SPEC);
    mt_clib_args_mismatch("mtc_create", &a, &b, 1, msg, sizeof msg);
    HAS(msg, "mtc_create: the ranks gave different sync_spec: rank 0 'hca3' (hca3:fitpts=50,pp=20), rank 1 'jk' "
             "(jk:fitpts=50,pp=20); every rank of the communicator must give the same sync_spec");
    CHECK(strstr(msg, "meta.json") == NULL && strstr(msg, "--") == NULL);

    /* the default spec against the same spec written out: only the default falls back */
    mt_clib_args_set(&a, canon, NULL, NULL, 0);
    mt_clib_args_set(&b, canon, canon, NULL, 0);
    CHECK(mt_clib_args_diff(&a, &b) == MT_CLIB_DIFF_SPEC);
    mt_clib_args_mismatch("mtc_create_ex", &a, &b, 3, msg, sizeof msg);
    HAS(msg, "rank 0 NULL (the default spec), rank 3 'hca3:fitpts=50,pp=20';");
    mt_clib_args_set(&b, canon, "", NULL, 0);      /* "" is the default too */
    CHECK(mt_clib_args_diff(&a, &b) == 0);

    /* timers and wait modes; the spec is named first when several differ */
    mt_clib_args_set(&a, canon, "hca3", NULL, 0);
    mt_clib_args_set(&b, canon, "hca3", "realtime", 0);
    CHECK(mt_clib_args_diff(&a, &b) == MT_CLIB_DIFF_TIMER);
    mt_clib_args_mismatch("mtc_create_ex", &a, &b, 1, msg, sizeof msg);
    HAS(msg, "different opt->timer: rank 0 NULL (monotonic), rank 1 'realtime'");
    mt_clib_args_set(&b, canon, "hca3", NULL, 2);
    CHECK(mt_clib_args_diff(&a, &b) == MT_CLIB_DIFF_WAIT);
    mt_clib_args_mismatch("mtc_create_ex", &a, &b, 1, msg, sizeof msg);
    HAS(msg, "different opt->wait: rank 0 0, rank 1 2");
    mt_clib_args_set(&b, "skampi:pp=100", "skampi", "realtime", 1);
    CHECK(mt_clib_args_diff(&a, &b) == (MT_CLIB_DIFF_SPEC | MT_CLIB_DIFF_TIMER | MT_CLIB_DIFF_WAIT));
    mt_clib_args_mismatch("mtc_create_ex", &a, &b, 1, msg, sizeof msg);
    HAS(msg, "different sync_spec");

    /* a long spec is cut for the message, never overflows, and is compared in full (canonical) */
    char longspec[600];
    memset(longspec, 'x', sizeof longspec - 1);
    longspec[sizeof longspec - 1] = 0;
    mt_clib_args_set(&b, canon, longspec, NULL, 0);
    CHECK(strlen(b.given) == sizeof b.given - 1 && strcmp(b.given + sizeof b.given - 4, "...") == 0);
    CHECK(mt_clib_args_diff(&a, &b) == 0);   /* the canonical specs are equal */

    /* times: finite passes; NaN of either sign, inf and -inf are refused with one text each */
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", 1.5, msg, sizeof msg) == 0);
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", -1e300, msg, sizeof msg) == 0);
    char m1[256], m2[256];
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", NAN, m1, sizeof m1) == -1);
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", -NAN, m2, sizeof m2) == -1);
    CHECK_STR(m1, "mtc_to_global: local_s is NaN; give a finite time in seconds");
    CHECK_STR(m1, m2);
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", INFINITY, msg, sizeof msg) == -1);
    CHECK_STR(msg, "mtc_to_global: local_s is inf; give a finite time in seconds");
    CHECK(mt_clib_time_check("mtc_to_global", "local_s", -INFINITY, msg, sizeof msg) == -1);
    CHECK_STR(msg, "mtc_to_global: local_s is -inf; give a finite time in seconds");
    TEST_DONE();
}
