/* Unit tests of the pure parts of the ping-pong method (Luecke et al. 2009). */
#include <stdlib.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "pingpong/pingpong.h"

static mt_pp_cfg_t cfg(int src, int dst)
{
    mt_pp_cfg_t c;
    memset(&c, 0, sizeof c);
    c.source = src;
    c.dest = dst;
    c.ntrial = 100;
    c.npp_init = 10;
    c.npptrial = 10;
    c.res_npp = 50;
    return c;
}

int main(void)
{
    char err[MT_ERRLEN];

    /* Fortran nint: halves away from zero */
    CHECK(mt_pp_nint(2.5) == 3);
    CHECK(mt_pp_nint(2.4999) == 2);
    CHECK(mt_pp_nint(0.5) == 1);
    CHECK(mt_pp_nint(-2.5) == -3);
    CHECK(mt_pp_nint(17.6) == 18);

    /* section 3.3's example: res 1 us, ping-pong 2 us, res_npp 50 -> 25 */
    CHECK(mt_pp_npp_from(50, 1e-6, 2e-6) == 25);
    /* Table 4.1: res_npp 25/50/100/200/400 gave npp 9/18/36/72/144 with
     * res ~0.954 us and a median ping-pong of ~2.62 us */
    CHECK(mt_pp_npp_from(25, 0.954e-6, 2.62e-6) == 9);
    CHECK(mt_pp_npp_from(50, 0.954e-6, 2.62e-6) == 18);
    CHECK(mt_pp_npp_from(100, 0.954e-6, 2.62e-6) == 36);
    CHECK(mt_pp_npp_from(200, 0.954e-6, 2.62e-6) == 73); /* the paper rounds its inputs; 72 there */
    /* max(1, ...): a fine timer gives 1 */
    CHECK(mt_pp_npp_from(50, 1e-9, 2e-6) == 1);
    CHECK(mt_pp_npp_from(50, 0.0, 2e-6) == 1);      /* every timer difference was 0 */
    CHECK(mt_pp_npp_from(50, 1e-6, 0.0) == MT_PP_NPP_MAX); /* timer never saw the ping-pongs */
    CHECK(mt_pp_npp_from(50, 0.0, 0.0) == 1);
    CHECK(mt_pp_npp_from(1e12, 1.0, 1e-9) == MT_PP_NPP_MAX);
    CHECK(mt_pp_npp_from(50, 1e-6, 1.0 / 3.0 * 1e-6 * 100) == 2); /* 1.5 -> 2 */

    /* median */
    double v[] = {5, 1, 4, 2, 3};
    CHECK_CLOSE(mt_pp_median(v, 5), 3, 0);
    CHECK_CLOSE(mt_pp_median(v, 4), 3, 0); /* 5 1 4 2 -> (2 + 4) / 2 */
    CHECK(v[0] == 5 && v[1] == 1);         /* not reordered */
    CHECK(isnan(mt_pp_median(v, 0)));

    /* defaults and validation */
    mt_pp_cfg_t c = cfg(-1, -1);
    mt_pp_defaults(&c, 4);
    CHECK(c.source == 0 && c.dest == 3);
    CHECK(mt_pp_validate(&c, 4, err) == MT_OK);
    c = cfg(-1, -1);
    mt_pp_defaults(&c, 1);
    CHECK(mt_pp_validate(&c, 1, err) == MT_EINVAL && strstr(err, "at least 2 ranks"));
    c = cfg(1, 1);
    CHECK(mt_pp_validate(&c, 2, err) == MT_EINVAL && strstr(err, "must differ"));
    c = cfg(0, 5);
    CHECK(mt_pp_validate(&c, 3, err) == MT_EINVAL && strstr(err, "--dest 5") && strstr(err, "0..2"));
    c = cfg(7, 1);
    CHECK(mt_pp_validate(&c, 3, err) == MT_EINVAL && strstr(err, "--source 7"));
    c = cfg(0, 1);
    c.res_npp = 0;
    CHECK(mt_pp_validate(&c, 2, err) == MT_EINVAL && strstr(err, "--res-npp"));
    c.res_npp = -1;
    CHECK(mt_pp_validate(&c, 2, err) == MT_EINVAL);
    c = cfg(0, 1);
    c.npp = -1;
    CHECK(mt_pp_validate(&c, 2, err) == MT_EINVAL && strstr(err, "--npp"));
    c = cfg(0, 1);
    int64_t sw[] = {1, 0};
    c.npp_sweep = sw;
    c.nsweep = 2;
    CHECK(mt_pp_validate(&c, 2, err) == MT_EINVAL && strstr(err, "--npp-sweep"));

    /* loop iterations (osu_latency defaults) and the max_pp cap */
    c = cfg(0, 1);
    CHECK(mt_pp_loop_iters(&c, 8) == 10000 && mt_pp_loop_iters(&c, 8192) == 10000);
    CHECK(mt_pp_loop_iters(&c, 16384) == 1000);
    c.loop_iters = 7;
    CHECK(mt_pp_loop_iters(&c, 1 << 20) == 7);
    c = cfg(0, 1);
    c.ntrial = 1000;
    CHECK(mt_pp_trials_for(&c, 15000) == 1000);
    c.max_pp = 1000000;
    CHECK(mt_pp_trials_for(&c, 1) == 1000 && mt_pp_trials_for(&c, 15000) == 66);
    CHECK(mt_pp_trials_for(&c, 10000000) == 1);

    /* sizes with 0 allowed (ping-pong), and the old callers unchanged */
    int64_t *s, x;
    int n;
    CHECK(mt_parse_size_list_ex("0-4M", 1, &s, &n, err) == MT_OK);
    CHECK(n == 24 && s[0] == 0 && s[1] == 1 && s[4] == 8 && s[23] == 4 << 20);
    free(s);
    CHECK(mt_parse_size_list_ex("0,8", 1, &s, &n, err) == MT_OK && n == 2 && s[0] == 0 && s[1] == 8);
    free(s);
    CHECK(mt_parse_size_list_ex("0-0", 1, &s, &n, err) == MT_OK && n == 1 && s[0] == 0);
    free(s);
    CHECK(mt_parse_size_list_ex("8,-1", 1, &s, &n, err) == MT_EINVAL && strstr(err, "negative"));
    CHECK(mt_parse_size_ex("-8", 1, &x, err) == MT_EINVAL && strstr(err, "'-8'") && strstr(err, "negative"));
    CHECK(mt_parse_size_ex("0", 1, &x, err) == MT_OK && x == 0);
    CHECK(mt_parse_size_ex("0", 0, &x, err) == MT_EINVAL);
    CHECK(mt_parse_size_list("0,8", &s, &n, err) == MT_EINVAL);
    CHECK(mt_parse_size_list("0-8", &s, &n, err) == MT_EINVAL);

    /* the timer study: definitions of section 3.1 on a real timer */
    mt_timer_inst_t ti;
    CHECK(mt_timer_open("monotonic", &ti, err) == MT_OK);
    mt_pp_tstudy_t st;
    CHECK(mt_pp_timer_study(&ti, 100000, &st, err) == MT_OK);
    CHECK(st.n == 100000);
    CHECK(st.min_ov_ticks >= 0 && st.res_ticks >= st.min_ov_ticks);
    CHECK(st.max_ticks >= st.res_ticks);
    int64_t tot = st.nover + st.nover_dropped + st.negative;
    for (int d = 0; d < MT_PP_HIST_BINS; d++) tot += st.hist[d];
    CHECK(tot == st.n);
    /* min_ov is the smallest non-empty bin; res the smallest positive one */
    int first = -1, firstpos = -1;
    for (int d = 0; d < MT_PP_HIST_BINS && (first < 0 || firstpos < 0); d++)
        if (st.hist[d]) {
            if (first < 0) first = d;
            if (d > 0 && firstpos < 0) firstpos = d;
        }
    CHECK(first == st.min_ov_ticks);
    CHECK(firstpos == st.res_ticks);
    mt_pp_tstudy_free(&st);
    TEST_DONE();
}
