/* clock-sync spec parsing, formatting and list splitting (good and bad). */
#include <math.h>
#include <stdlib.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "clock/sync.h"

static int ok(const char *s, char *canon)
{
    mt_sync_spec_t sp;
    char err[MT_ERRLEN];
    int rc = mt_sync_spec_parse(s, &sp, err);
    if (rc != MT_OK) {
        fprintf(stderr, "unexpected error for '%s': %s\n", s, err);
        return 0;
    }
    mt_sync_spec_format(&sp, canon, 1024);
    /* the canonical form parses to the same canonical form */
    char again[1024];
    mt_sync_spec_t sp2;
    if (mt_sync_spec_parse(canon, &sp2, err) != MT_OK) {
        fprintf(stderr, "canonical '%s' does not parse: %s\n", canon, err);
        return 0;
    }
    mt_sync_spec_format(&sp2, again, sizeof again);
    return strcmp(canon, again) == 0;
}

static int bad(const char *s, const char *needle)
{
    mt_sync_spec_t sp;
    char err[MT_ERRLEN] = "";
    if (mt_sync_spec_parse(s, &sp, err) != MT_EINVAL) return 0;
    if (strchr(err, '\n')) return 0;
    if (!strstr(err, needle)) {
        fprintf(stderr, "error for '%s' lacks '%s': %s\n", s, needle, err);
        return 0;
    }
    return 1;
}

int main(void)
{
    char c[1024];
    char err[MT_ERRLEN];
    CHECK(ok("hca3", c));
    CHECK_STR(c, "hca3:fitpts=40,pp=100,offset=skampi,recompute=1,window=0.25,slope=auto,z=4,fit=ts,ci=auto");
    CHECK(ok("hca3:fitpts=20,pp=10,offset=meanrtt", c));
    CHECK_STR(c, "hca3:fitpts=20,pp=10,offset=meanrtt,rtt=median,recompute=1,window=0.25,slope=auto,z=4,fit=ts,ci=auto");
    /* Mean-RTT-Offset's RTT: median (default) or the paper's mean; fit=paper sets rtt=mean */
    CHECK(ok("jk:offset=meanrtt,rtt=mean", c));
    CHECK(strstr(c, "offset=meanrtt,rtt=mean,") != NULL);
    CHECK(ok("jk:fit=paper,offset=meanrtt", c));
    CHECK(strstr(c, "rtt=mean") && strstr(c, "fit=paper"));
    CHECK(ok("hca:offset=meanrtt,fit=paper,rtt=mean", c));
    CHECK(bad("jk:offset=meanrtt,fit=paper,rtt=median", "rtt=mean itself"));
    CHECK(bad("jk:rtt=mean", "applies to offset=meanrtt only"));
    CHECK(bad("jk:offset=meanrtt,rtt=avg", "expected median or mean"));
    CHECK(bad("prop:rtt=mean", "has no parameter 'rtt'"));
    /* the paper-exact preset: fit=paper sets slope=fit and window=0 itself */
    CHECK(ok("hca3:fit=paper", c));
    CHECK_STR(c, "hca3:fitpts=40,pp=100,offset=skampi,recompute=1,window=0,slope=fit,z=4,fit=paper,ci=0");
    CHECK(bad("jk:fit=paper,slope=auto", "sets slope=fit, window=0 and rtt=mean"));
    /* the adaptive fit window's stopping rule: ci in ppm, 0 = the whole window */
    CHECK(ok("jk:ci=0.05", c));
    CHECK(strstr(c, ",ci=0.05") != NULL);
    CHECK(ok("hca2:ci=0", c));
    CHECK(strstr(c, ",ci=0") != NULL);
    CHECK(bad("jk:ci=-1", "invalid ci '-1'"));
    CHECK(bad("jk:ci=abc", "expected auto or ppm in [0, 1e6]"));
    CHECK(bad("jk:fit=paper,ci=auto", "(and ci=0)"));
    /* ci=auto (the default): 0.1 ppm over the models a clock composes, ceil(log2 P) for the trees */
    {
        mt_sync_spec_t sp;
        CHECK(mt_sync_spec_parse("hca3", &sp, err) == MT_OK);
        CHECK(sp.params[0].ci_ppm == MT_CI_AUTO);
        CHECK(fabs(mt_sync_ci_for(sp.alg[0], &sp.params[0], 2) - 0.1) < 1e-12);
        CHECK(fabs(mt_sync_ci_for(sp.alg[0], &sp.params[0], 3) - 0.05) < 1e-12);
        CHECK(fabs(mt_sync_ci_for(sp.alg[0], &sp.params[0], 64) - 0.1 / 6) < 1e-12);
        CHECK(fabs(mt_sync_ci_for(sp.alg[0], &sp.params[0], 65) - 0.1 / 7) < 1e-12);
        CHECK(mt_sync_spec_parse("jk", &sp, err) == MT_OK);
        CHECK(fabs(mt_sync_ci_for(sp.alg[0], &sp.params[0], 1024) - 0.1) < 1e-12);
        CHECK(mt_sync_spec_parse("hca2:ci=0.3", &sp, err) == MT_OK);
        CHECK(mt_sync_ci_for(sp.alg[0], &sp.params[0], 1024) == 0.3);
        CHECK(mt_sync_spec_parse("hca:ci=0", &sp, err) == MT_OK);
        CHECK(mt_sync_ci_for(sp.alg[0], &sp.params[0], 1024) == 0);
        CHECK(mt_sync_spec_parse("skampi", &sp, err) == MT_OK);
        CHECK(mt_sync_ci_for(sp.alg[0], &sp.params[0], 8) == 0);
    }
    CHECK(ok("hca2:ci=-0", c));
    CHECK(strstr(c, ",ci=0") != NULL && strstr(c, "ci=-0") == NULL);
    CHECK(ok("hca2:ci=auto", c));
    CHECK(strstr(c, ",ci=auto") != NULL);
    CHECK(bad("jk:fit=paper,ci=0.1", "(and ci=0)"));
    CHECK(bad("skampi:ci=0.1", "has no parameter 'ci'"));
    CHECK(bad("jk:fit=exact", "expected ts, ols or paper"));
    CHECK(ok("jk:slope=fit,window=0", c));
    CHECK(strstr(c, "slope=fit") && strstr(c, "window=0"));
    CHECK(ok("skampi", c));
    CHECK_STR(c, "skampi:pp=100,offset=skampi");
    CHECK(ok("hoefler:pp=5", c));
    CHECK(ok("prop", c));
    CHECK(ok("h2:hca3/prop", c));
    CHECK_STR(c, "h[node]:hca3:fitpts=40,pp=100,offset=skampi,recompute=1,window=0.25,slope=auto,z=4,fit=ts,ci=auto/prop:tol=1e-06");
    CHECK(ok("h3:hca3:pp=50/jk/prop:tol=1e-5", c));
    CHECK(strncmp(c, "h[node+socket]:hca3:fitpts=40,pp=50", 35) == 0);
    CHECK(ok("h[block=4+env=MYCOLOR]:hca2/hca3/prop", c));
    CHECK(strncmp(c, "h[block=4+env=MYCOLOR]:hca2:", 28) == 0);
    CHECK(ok("h[env=_my_color2]:hca3/prop", c));
    CHECK(bad("h[env=A$(id)]:hca3/prop", "env=A$(id) is not an environment variable name"));
    CHECK(bad("h[env=2X]:hca3/prop", "env=2X is not an environment variable name"));
    CHECK(bad("h[env=]:hca3/prop", "env= is not an environment variable name"));
    CHECK(bad("h[env=A B]:hca3/prop", "is not an environment variable name"));
    CHECK(bad("h[env=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA]:hca3/prop",
              "at most 63 characters"));
    CHECK(ok("none", c));
    CHECK_STR(c, "none");

    CHECK(bad("", "empty clock-sync spec (allowed: none, skampi"));
    CHECK(bad("foo", "unknown clock-sync algorithm 'foo'"));
    CHECK(bad("hca3:fitpts=1", "fit points must be an integer >= 2"));
    CHECK(bad("hca3:fitpts=x", "fitpts"));
    CHECK(bad("hca3:fitpts=1000001", "fit points must be an integer >= 2 and <= 1000000"));
    CHECK(bad("hca3:pp=2147483647", "ping-pongs must be an integer >= 1 and <= 1000000"));
    CHECK(bad("hca3:pp= 5", "invalid pp ' 5'"));
    CHECK(bad("hca3:pp=0", "ping-pongs must be an integer >= 1"));
    CHECK(bad("hca3:offset=nope", "unknown offset algorithm 'nope'"));
    CHECK(bad("hca3:fitpts", "expected key=value"));
    CHECK(bad("hca3:", "nothing after"));
    CHECK(bad("hca3:fitpts=3,fitpts=4", "twice"));
    CHECK(bad("skampi:fitpts=3", "has no parameter 'fitpts'"));
    CHECK(bad("hca:recompute=1", "has no parameter 'recompute'"));
    CHECK(bad("hca3:window=-1", "window"));
    CHECK(bad("hca3:slope=maybe", "auto, fit or zero"));
    CHECK(bad("h2:hca3", "need 2 algorithms"));
    CHECK(bad("h2:hca3/prop/prop", "need 2 algorithms"));
    CHECK(bad("h2:prop/hca3", "prop (ClockPropSync) can only be the last"));
    CHECK(bad("h[rack]:hca3/prop", "unknown level 'rack'"));
    CHECK(bad("h[node:hca3/prop", "malformed hierarchical spec"));
    CHECK(bad("h[block=0]:hca3/prop", "block size"));
    CHECK(bad("hca3/prop", "'/' separates"));
    CHECK(bad("h2:/prop", "missing algorithm name"));

    /* list splitting: key=value items continue the previous spec */
    char **items;
    int n;
    CHECK(mt_sync_spec_split("hca3:fitpts=20,pp=10,jk,h2:hca3:pp=5,z=3/prop,skampi", &items, &n, err) == MT_OK);
    CHECK(n == 4);
    if (n == 4) {
        CHECK_STR(items[0], "hca3:fitpts=20,pp=10");
        CHECK_STR(items[1], "jk");
        CHECK_STR(items[2], "h2:hca3:pp=5,z=3/prop");
        CHECK_STR(items[3], "skampi");
    }
    mt_free_list(items, n);
    CHECK(mt_sync_spec_split("hca3,,jk", &items, &n, err) == MT_EINVAL);
    TEST_DONE();
}
