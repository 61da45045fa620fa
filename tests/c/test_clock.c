/* clocks: fit, merge, nest, flatten round trip, offset algorithms on
 * synthetic data, slope decision, simulated-clock settings. No MPI calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock/clock.h"
#include "base/mt_common.h"
#include "mt_test.h"
#include "clock/offset.h"
#include "clock/sync.h"

static mt_rng_t rng;
static double gauss(void)
{
    double u1 = ((double)(mt_rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(mt_rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

int main(void)
{
    char err[MT_ERRLEN];
    mt_rng_seed(&rng, 3);

    /* ---- fit: exact line, then noisy line with a sensible standard error ---- */
    double x[200], y[200];
    for (int i = 0; i < 10; i++) {
        x[i] = 1000.0 + 0.01 * i;
        y[i] = 2e-5 * x[i] + 0.5;
    }
    mt_fit_t f;
    CHECK(mt_fit_linear(x, y, 10, &f) == MT_OK);
    CHECK_CLOSE(f.slope, 2e-5, 1e-12);
    CHECK_CLOSE(f.intercept, 0.5, 1e-9);
    CHECK(f.slope_se < 1e-12);
    CHECK(mt_fit_linear(x, y, 1, &f) == MT_EINVAL);
    double xs[3] = {1, 1, 1};
    CHECK(mt_fit_linear(xs, y, 3, &f) == MT_EINVAL);
    int inside = 0;
    for (int rep = 0; rep < 200; rep++) {
        for (int i = 0; i < 50; i++) {
            x[i] = 5.0 + 0.25 * i / 49.0;
            y[i] = 3e-6 * x[i] - 0.2 + 50e-9 * gauss();
        }
        CHECK(mt_fit_linear(x, y, 50, &f) == MT_OK);
        inside += fabs(f.slope - 3e-6) < 2 * f.slope_se;
    }
    CHECK(inside > 180 && inside < 200); /* ~95% coverage */

    /* ---- slope decision: no drift -> dropped; 50 ppm -> kept and right; outliers ignored ---- */
    mt_sync_params_t p = {40, 100, &mt_offset_skampi, 1, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS};
    mt_model_t lm;
    mt_sync_stats_t st;
    int dropped = 0;
    for (int rep = 0; rep < 100; rep++) {
        for (int i = 0; i < 40; i++) {
            x[i] = 2.0 + 0.25 * i / 39.0;
            y[i] = 1e-3 + 30e-9 * gauss();
        }
        mt_fit_decide(&p, x, y, NULL, 40, &lm, &st);
        dropped += st.slope_state == MT_SLOPE_DROPPED;
    }
    CHECK(dropped >= 99);
    CHECK(lm.kind == MT_MODEL_OFFSET && lm.slope == 0);
    CHECK_CLOSE(lm.intercept, 1e-3, 30e-9);
    for (int i = 0; i < 40; i++) {
        x[i] = 2.0 + 0.25 * i / 39.0;
        y[i] = 50e-6 * x[i] + 0.7 + 30e-9 * gauss();
    }
    y[7] += 20e-6; /* one fit point whose ping-pongs were all delayed */
    y[30] -= 15e-6;
    mt_fit_decide(&p, x, y, NULL, 40, &lm, &st);
    CHECK(st.slope_state == MT_SLOPE_KEPT && lm.kind == MT_MODEL_LINEAR);
    CHECK_CLOSE(lm.slope, 50e-6, 0.1e-6);
    CHECK(st.fit_dropped == 2);
    p.slope = MT_SLOPE_ZERO;
    mt_fit_decide(&p, x, y, NULL, 40, &lm, &st);
    CHECK(lm.slope == 0 && st.slope_state == MT_SLOPE_DROPPED);
    p.slope = MT_SLOPE_FIT;
    for (int i = 0; i < 40; i++) y[i] = 1e-3 + 30e-9 * gauss();
    mt_fit_decide(&p, x, y, NULL, 40, &lm, &st);
    CHECK(lm.kind == MT_MODEL_LINEAR && st.slope_state == MT_SLOPE_KEPT);
    double lo, hi;
    for (int i = 0; i < 40; i++) y[i] = -7e-6 * x[i] + 1e-9 * gauss();
    CHECK(mt_theil_sen_ci(x, y, 40, 4.0, &lo, &hi, NULL) == MT_OK && lo < -6.9e-6 && hi > -7.1e-6 && hi < 0);

    double est;
    CHECK(mt_theil_sen_ci(x, y, 40, 4.0, &lo, &hi, &est) == MT_OK && lo <= est && est <= hi);
    CHECK_CLOSE(est, -7e-6, 0.05e-6);

    /* ---- an unresolved slope is below the stated accuracy ----
     * a drift of 18 ppm under offsets noisy by 5 us (oversubscribed Mean-RTT-Offset) over a 0.25 s
     * window: 4.5 us of drift across the window, the slope test drops it, and the offset-only model
     * then drifts 18 us per second away unseen. The fit's interval still allows such a drift, and
     * that makes the model unresolved; a drift-free pair with quiet offsets is resolved. */
    {
        mt_sync_params_t pa = {40, 100, &mt_offset_skampi, 1, 0.25, MT_SLOPE_AUTO, 4.0, 0, MT_FIT_TS};
        int drop18 = 0, unres18 = 0, unres0 = 0;
        for (int rep = 0; rep < 50; rep++) {
            for (int i = 0; i < 40; i++) {
                x[i] = 2.0 + 0.25 * i / 39.0;
                y[i] = 18e-6 * x[i] + 0.3 + 5e-6 * gauss();
            }
            mt_fit_decide(&pa, x, y, NULL, 40, &lm, &st);
            if (st.slope_state == MT_SLOPE_DROPPED) {
                drop18++;
                unres18 += mt_slope_unresolved(0, st.fit_slope, st.fit_ci_ppm * 1e-6, 1.0);
            }
            for (int i = 0; i < 40; i++) y[i] = 1e-3 + 30e-9 * gauss();
            mt_fit_decide(&pa, x, y, NULL, 40, &lm, &st);
            CHECK(st.slope_state == MT_SLOPE_DROPPED);
            unres0 += mt_slope_unresolved(0, st.fit_slope, st.fit_ci_ppm * 1e-6, 1.0);
        }
        CHECK(drop18 >= 10);          /* the failure: a real drift dropped (most of the 50 here) */
        CHECK(unres18 == drop18);     /* ... every time flagged */
        CHECK(unres0 == 0);           /* no false alarm without a drift */
        /* a kept slope is resolved when its interval is narrow: 45 +- 11.6 ppm kept on 5 oversubscribed
         * ranks (true drift 37.5 ppm: 7.7 us off 1 s later) is not */
        CHECK(!mt_slope_unresolved(1, 30e-6, 1.4e-6, 1.0) && mt_slope_unresolved(1, 45e-6, 11.6e-6, 1.0));
        CHECK(mt_slope_unresolved(0, 0.5e-6, 1.6e-6, 1.0) && !mt_slope_unresolved(0, 0.5e-6, 1.4e-6, 1.0));
        /* the bound follows from the horizon (the sync -> the last measurement): 2 us / horizon. A
         * 0.5 ppm drift dropped with an interval of +-0.3 ppm is within 2 us after 1 s but not after
         * 10 s (0.2 ppm); horizons below MT_HORIZON_MIN_S count as that */
        CHECK(!mt_slope_unresolved(0, 0.5e-6, 0.3e-6, 1.0) && mt_slope_unresolved(0, 0.5e-6, 0.3e-6, 10.0));
        CHECK(!mt_slope_unresolved(0, 0.5e-6, 0.3e-6, 0.01));
        CHECK_CLOSE(mt_drift_bound(10.0), 0.2e-6, 1e-12);
        CHECK_CLOSE(mt_drift_bound(0.1), 2e-6, 1e-12);
        CHECK_CLOSE(mt_drift_unc(0, -0.5e-6, 0.3e-6), 0.8e-6, 1e-15);
        CHECK_CLOSE(mt_drift_unc(1, -0.5e-6, 0.3e-6), 0.3e-6, 1e-15);
        {
            /* at the horizon: the own model blamed when it is the larger part, else the reference */
            mt_sync_stats_t sh = {0};
            sh.drift_unc = 0.15e-6;
            sh.drift_unc_ref = 0.1e-6;
            mt_sync_at_horizon(&sh, 5.0); /* bound 0.4 ppm: 0.25 within */
            CHECK(!sh.slope_unresolved && !sh.ref_below && !mt_sync_below_accuracy(&sh));
            mt_sync_at_horizon(&sh, 10.0); /* bound 0.2 ppm: 0.25 beyond, the own part larger */
            CHECK(sh.slope_unresolved && !sh.ref_below);
            mt_sync_stats_t si = {0};
            si.drift_unc = 0.05e-6;
            si.drift_unc_ref = 0.3e-6;
            mt_sync_at_horizon(&si, 10.0);
            CHECK(!si.slope_unresolved && si.ref_below && mt_sync_below_accuracy(&si));
        }
        /* the end check's gap: about 1% of the run, within [0.5, 5] ms */
        CHECK_CLOSE(mt_check_gap_for(0.1, 2), MT_CHECK_GAP_MIN_S, 1e-12);
        CHECK_CLOSE(mt_check_gap_for(10.0, 2), MT_CHECK_GAP_S, 1e-12);
        CHECK_CLOSE(mt_check_gap_for(1.2, 2), 3e-3, 1e-12);
        /* its tries: within max(1% of the run, 5 ms); 1..5 */
        CHECK(mt_check_tries_for(0.01, 2, 0.3e-3, 0.5e-3) == 5);  /* quiet: 5 x 0.3 + 4 x 0.5 = 3.5 ms */
        CHECK(mt_check_tries_for(0.01, 2, 10e-3, 0.5e-3) == 1);   /* loaded: 10 ms a try: one */
        CHECK(mt_check_tries_for(100, 2, 10e-3, 5e-3) == 5);      /* 1 s of budget */
        CHECK(mt_check_tries_for(0.01, 9, 1e-3, 0.5e-3) == 1);    /* 8 ranks at 1.5 ms: 12 ms > 5 ms: one */
        /* and its ping-pongs, when even one try exceeds the budget: 1 s run, 30 ms a try -> 33; at least 20 */
        CHECK(mt_check_pp_for(1.0, 2, 0.3e-3, 100) == 100);
        CHECK(mt_check_pp_for(1.0, 2, 30e-3, 100) == 33);
        CHECK(mt_check_pp_for(1.0, 2, 300e-3, 100) == MT_CHECK_PP_MIN);
        /* the flag of a rank's clock: its own Mean-RTT measurements, its slope, or its reference's */
        mt_sync_stats_t sb = {0};
        CHECK(!mt_sync_below_accuracy(&sb));
        sb.ref_below = 1;
        CHECK(mt_sync_below_accuracy(&sb));
        sb.ref_below = 0;
        sb.slope_unresolved = 1;
        CHECK(mt_sync_below_accuracy(&sb));
        sb.slope_unresolved = 0;
        sb.rtt_measured = 10;
        sb.rtt_preempted = 1;
        CHECK(mt_sync_below_accuracy(&sb));
    }

    /* fit=ts: the last quarter of the points ran while both ranks shared a
     * core: round trips of ~10 us instead of ~2.4 us and offsets biased by
     * +1.5 us (measured on this machine). OLS over all points sees a step
     * and keeps a false slope; the RTT filter drops those points. */
    {
        double rtt[40];
        int kept_ols = 0, kept_ts = 0;
        for (int rep = 0; rep < 20; rep++) {
            for (int i = 0; i < 40; i++) {
                x[i] = 2.0 + 0.25 * i / 39.0;
                int slow = i >= 25;
                rtt[i] = (slow ? 9.5e-6 : 2.4e-6) + 0.1e-6 * fabs(gauss());
                y[i] = 1e-3 + (slow ? 1.5e-6 + 300e-9 * gauss() : 100e-9 * gauss());
            }
            p.slope = MT_SLOPE_AUTO;
            p.fit = MT_FIT_OLS;
            mt_fit_decide(&p, x, y, rtt, 40, &lm, &st);
            kept_ols += st.slope_state == MT_SLOPE_KEPT;
            p.fit = MT_FIT_TS;
            mt_fit_decide(&p, x, y, rtt, 40, &lm, &st);
            kept_ts += st.slope_state == MT_SLOPE_KEPT;
            CHECK(st.fit_dropped >= 15);
            CHECK(lm.kind == MT_MODEL_OFFSET);
            CHECK_CLOSE(lm.intercept, 1e-3, 100e-9); /* the slow points would add ~600 ns */
        }
        CHECK(kept_ols >= 10); /* the failure this guards against (about 14 of 20) */
        CHECK(kept_ts == 0);
        /* a true drift survives the filter; all points slow: none dropped */
        for (int i = 0; i < 40; i++) {
            rtt[i] = i % 3 ? 2.4e-6 : 12e-6;
            y[i] = 20e-6 * x[i] + 0.5 + (i % 3 ? 0 : 2e-6) + 30e-9 * gauss();
        }
        mt_fit_decide(&p, x, y, rtt, 40, &lm, &st);
        CHECK(st.slope_state == MT_SLOPE_KEPT && st.fit_dropped == 14);
        CHECK_CLOSE(lm.slope, 20e-6, 0.3e-6);
        for (int i = 0; i < 40; i++) {
            rtt[i] = 12e-6 + 1e-6 * (i % 5);
            y[i] = 20e-6 * x[i] + 0.5 + 30e-9 * (i % 7 - 3);
        }
        mt_fit_decide(&p, x, y, rtt, 40, &lm, &st);
        CHECK(st.fit_dropped == 0 && st.slope_state == MT_SLOPE_KEPT);
        CHECK_CLOSE(lm.slope, 20e-6, 0.5e-6);
    }

    /* ---- models, nesting, merge ---- */
    mt_timer_inst_t ti;
    CHECK(mt_timer_open("monotonic", &ti, err) == MT_OK);
    mt_baseclock_t b;
    mt_baseclock_init_local(&b, &ti, 0, NULL);
    mt_clock_t c, c2, c3;
    mt_clock_init(&c, &b);
    CHECK(mt_clock_apply(&c, 12.5) == 12.5);
    mt_model_t m1 = {MT_MODEL_LINEAR, 20e-6, 0.3}, m2 = {MT_MODEL_OFFSET, 0, -1.25}, mm;
    CHECK(mt_clock_nest(&c, &m1, &c2, err) == MT_OK && c2.depth == 1);
    CHECK_CLOSE(mt_clock_apply(&c2, 100.0), 100.0 - (20e-6 * 100.0 + 0.3), 1e-12);
    CHECK(mt_clock_nest(&c2, &m2, &c3, err) == MT_OK && c3.depth == 2);
    double t1 = 100.0 - (20e-6 * 100.0 + 0.3);
    CHECK_CLOSE(mt_clock_apply(&c3, 100.0), t1 + 1.25, 1e-12);
    CHECK_CLOSE(mt_clock_drift(&c2), 20e-6, 1e-15);
    /* merge: cm(A,B) = ma, cm(B,C) = mb; a clock on C nested mb then ma equals one merged model */
    mt_model_t ma = {MT_MODEL_LINEAR, 30e-6, 0.75}, mb = {MT_MODEL_LINEAR, -12e-6, -0.4};
    mt_model_merge(&ma, &mb, &mm);
    mt_clock_t nest2, merged;
    mt_clock_init(&nest2, &b);
    mt_clock_nest(&nest2, &mb, &nest2, err);
    mt_clock_nest(&nest2, &ma, &nest2, err);
    mt_clock_init(&merged, &b);
    mt_clock_nest(&merged, &mm, &merged, err);
    for (double t = 0; t < 2000; t += 333.3) CHECK_CLOSE(mt_clock_apply(&nest2, t), mt_clock_apply(&merged, t), 1e-11);
    CHECK(mm.kind == MT_MODEL_LINEAR);
    mt_model_t o1 = {MT_MODEL_OFFSET, 0, 1}, o2 = {MT_MODEL_OFFSET, 0, 2};
    mt_model_merge(&o1, &o2, &mm);
    CHECK(mm.kind == MT_MODEL_OFFSET && mm.intercept == 3 && mm.slope == 0);
    /* too deep */
    mt_clock_t deep;
    mt_clock_init(&deep, &b);
    for (int i = 0; i < MT_CLOCK_MAXDEPTH; i++) CHECK(mt_clock_nest(&deep, &m2, &deep, err) == MT_OK);
    CHECK(mt_clock_nest(&deep, &m2, &deep, err) == MT_EINVAL);

    /* ---- flatten round trip (onto another base clock) and corrupt buffers ---- */
    unsigned char buf[512];
    size_t n = mt_clock_flatten(&c3, buf, sizeof buf);
    CHECK(n == mt_clock_flat_size(&c3) && n > 0);
    CHECK(mt_clock_flatten(&c3, buf, 10) == 0);
    mt_baseclock_t b2;
    mt_baseclock_init_local(&b2, &ti, 12345, NULL);
    mt_clock_t r;
    CHECK(mt_clock_unflatten(buf, n, &b2, &r, err) == MT_OK);
    CHECK(r.base == &b2 && r.depth == 2);
    CHECK(r.m[0].kind == m1.kind && r.m[0].slope == m1.slope && r.m[0].intercept == m1.intercept);
    CHECK(r.m[1].kind == m2.kind && r.m[1].intercept == m2.intercept);
    CHECK(mt_clock_unflatten(buf, n - 1, &b2, &r, err) == MT_EINVAL);
    buf[0] = 'X';
    CHECK(mt_clock_unflatten(buf, n, &b2, &r, err) == MT_EINVAL);

    /* ---- base clock: epoch and simulation, precision with a realtime-sized epoch ---- */
    mt_sim_t sim = {1, 0.5, 40e-6};
    mt_baseclock_init_local(&b2, &ti, 1700000000LL * 1000000000LL, &sim);
    double tb = mt_base_from_ticks(&b2, 1700000000LL * 1000000000LL + 10000000001LL);
    CHECK_CLOSE(tb, 10.000000001 * (1 + 40e-6) + 0.5, 1e-12);

    /* ---- offset algorithms on synthetic data ---- */
    /* client clock = ref + 3 us; one-way latencies 1 us out, 1 us back, plus noise on some */
    double sl[20], tr[20], sn[20], loc[20], ref[20], rmin;
    for (int i = 0; i < 20; i++) {
        double start = 1.0 + 1e-3 * i, out = 1e-6 + (i % 3 ? 2e-6 : 0), back = 1e-6 + (i % 5 ? 1e-6 : 0);
        sl[i] = start + 3e-6;
        tr[i] = start + out;
        sn[i] = start + out + back + 3e-6;
        ref[i] = tr[i];
        loc[i] = sn[i];
    }
    CHECK_CLOSE(mt_offset_skampi_core(sl, tr, sn, 20, &rmin), 3e-6, 1e-12);
    CHECK_CLOSE(rmin, 2e-6, 1e-12);
    double ts;
    /* meanrtt: with the true one-way time = rtt/2 exactly for the median sample */
    for (int i = 0; i < 21 && i < 20; i++) loc[i] = ref[i] + 1e-6 + 3e-6 + (i % 2 ? 5e-7 * i : 0);
    double off = mt_offset_meanrtt_core(loc, ref, 20, 2e-6, &ts);
    CHECK_CLOSE(off, 3e-6, 1e-12);
    CHECK(ts == loc[0] || ts == loc[2] || ts == loc[4] || ts == loc[6] || ts == loc[8] || ts == loc[10]);
    /* the RTT estimate is a median: one round trip that waited 3 ms for a busy
     * reference must not move it (the mean would be 150 us off with 20 samples) */
    double rt[20];
    for (int i = 0; i < 20; i++) rt[i] = 2e-6 + 1e-8 * (i % 4);
    rt[0] = 3e-3;
    CHECK_CLOSE(mt_rtt_median(rt, 20), 2.02e-6, 1e-12);
    double rt3[3] = {5, 1, 3};
    CHECK_CLOSE(mt_rtt_median(rt3, 3), 3, 0);
    /* the spread of a Mean-RTT-Offset measurement: half of how far the RTT estimate or the chosen
     * exchange's round trip exceeds the fastest round trip; the paper's mean with that 3 ms round
     * trip is 150 us above the fastest: spread 75 us, preempted */
    CHECK_CLOSE(mt_meanrtt_spread(2.2e-6, 2e-6, 3e-6), 0.5e-6, 1e-15);
    CHECK_CLOSE(mt_meanrtt_spread(152e-6, 2e-6, 3e-6), 75e-6, 1e-12);
    CHECK(mt_meanrtt_spread(152e-6, 2e-6, 3e-6) > MT_MEANRTT_TOL_S);
    CHECK_CLOSE(mt_meanrtt_spread(2e-6, 2e-6, 2e-6), 0, 0);
    CHECK_CLOSE(mt_meanrtt_spread(2e-6, 2e-6, 1.5e-3), 0.5 * (1.5e-3 - 2e-6), 1e-12); /* the exchange waited */
    CHECK(mt_meanrtt_spread(1e-6, 2e-6, 1e-6) == 0); /* never negative */
    /* a rank is below the stated accuracy when > 5% of its measurements were preempted or
     * their mean spread exceeds the tolerance (a few huge ones) */
    CHECK(!mt_meanrtt_below_accuracy(0, 0, 0));
    CHECK(!mt_meanrtt_below_accuracy(40, 2, 40 * 1.5e-6));
    CHECK(mt_meanrtt_below_accuracy(40, 3, 40 * 1.5e-6));
    CHECK(mt_meanrtt_below_accuracy(41, 1, 1e-3 + 40 * 1e-6)); /* one wait of 1 ms */
    CHECK(!mt_meanrtt_below_accuracy(80, 1, 75e-6 + 79 * 1.5e-6));

    /* ---- simulated clock settings ---- */
    mt_sim_t s;
    CHECK(mt_sim_parse(NULL, NULL, NULL, 0, 4, &s, err) == MT_OK && !s.on);
    CHECK(mt_sim_parse("0,0.5,-1", "0,20", NULL, 2, 4, &s, err) == MT_OK && s.on);
    CHECK_CLOSE(s.offset_s, -1, 0);
    CHECK_CLOSE(s.drift, 20e-6, 1e-18);
    CHECK(mt_sim_parse("0,0.5,-1", NULL, NULL, 3, 4, &s, err) == MT_OK && s.offset_s == -1);
    CHECK(mt_sim_parse("0,x", NULL, NULL, 0, 4, &s, err) == MT_EINVAL);
    CHECK(mt_sim_parse(NULL, NULL, "7:1:50", 1, 4, &s, err) == MT_OK && s.on && fabs(s.offset_s) <= 1 &&
          fabs(s.drift) <= 50e-6);
    mt_sim_t s2;
    CHECK(mt_sim_parse(NULL, NULL, "7:1:50", 2, 4, &s2, err) == MT_OK && s2.offset_s != s.offset_s);
    CHECK(mt_sim_parse(NULL, NULL, "7:1:50", 1, 4, &s2, err) == MT_OK && s2.offset_s == s.offset_s);
    CHECK(mt_sim_parse("1", NULL, "7", 1, 4, &s2, err) == MT_EINVAL);
    CHECK(mt_sim_parse(NULL, NULL, "7:1:50:3", 1, 4, &s2, err) == MT_EINVAL);
    /* ---- wander across windows (issue 35): two windows of 40 points over 0.25 s each, 0.5 ppm drift; the
     * offsets' level shifts from one window to the next (a loaded machine) while within each window they
     * lie on the drift's line. The fit over both windows takes the shift for drift and its own interval
     * does not see it; the windows' disagreement does, and the stated uncertainty covers the error ---- */
    {
        mt_sync_params_t pw = p;
        const double drift = 0.5e-6;
        static double wx[80], wy[80], wr[80];
        int ws[3] = {0, 40, 80}, wl[3] = {40, 40, 0};
        /* (a) a fixed shift of 60 ns between the windows, little white noise: the fit's error is ~0.24 ppm */
        for (int i = 0; i < 80; i++) {
            wx[i] = 3.0 + (i < 40 ? 0.25 * i / 39.0 : 0.253 + 0.25 * (i - 40) / 39.0);
            wy[i] = 0.73 + drift * wx[i] + (i < 40 ? 0 : 60e-9) + 5e-9 * gauss();
            wr[i] = 2e-6;
        }
        mt_fit_decide(&pw, wx, wy, wr, 80, &lm, &st);
        double e = fabs(st.fit_slope - drift), ci = st.fit_ci_ppm * 1e-6;
        double dis = mt_window_disagreement(&pw, wx, wy, wr, ws, wl, 2, st.fit_slope);
        CHECK(lm.kind == MT_MODEL_LINEAR && e > 0.1e-6); /* kept, and off */
        CHECK(e > ci);                                     /* the defect: the fit's own interval misses it */
        CHECK(dis >= e - ci);                              /* the fit's interval plus the windows' disagreement covers it */
        /* over a 20 s horizon (bound 0.1 ppm) the error is 3 us: unresolved with the widened uncertainty only */
        CHECK(e * 20 > 2e-6);
        CHECK(!mt_slope_unresolved(1, st.fit_slope, ci, 20.0) && mt_slope_unresolved(1, st.fit_slope, ci + dis, 20.0));
        CHECK(mt_window_disagreement(&pw, wx, wy, wr, ws, wl, 1, st.fit_slope) == 0); /* one window: none */
        /* a window of too few points (here none) is left out */
        CHECK(mt_window_disagreement(&pw, wx, wy, wr, ws, wl, 3, st.fit_slope) == dis);
        fprintf(stderr, "wander (a): error %.3f ppm, fit interval %.3f, disagreement %.3f\n", e * 1e6, ci * 1e6,
                dis * 1e6);
        /* (b) random wander: each window's level N(0, 40 ns) plus white noise 15 ns; over 300 syncs the
         * stated uncertainty z SE + disagreement holds the error in >= 95% of them, z SE alone in far fewer */
        int cov_ci = 0, cov_w = 0;
        const int reps = 300;
        for (int rep = 0; rep < reps; rep++) {
            double lv[2] = {40e-9 * gauss(), 40e-9 * gauss()};
            for (int i = 0; i < 80; i++) wy[i] = 0.73 + drift * wx[i] + lv[i >= 40] + 15e-9 * gauss();
            mt_fit_decide(&pw, wx, wy, wr, 80, &lm, &st);
            e = fabs(st.fit_slope - drift);
            ci = st.fit_ci_ppm * 1e-6;
            dis = mt_window_disagreement(&pw, wx, wy, wr, ws, wl, 2, st.fit_slope);
            cov_ci += e <= ci;
            cov_w += e <= ci + dis;
        }
        fprintf(stderr, "wander (b): error covered by z SE in %d of %d, by the widened in %d\n", cov_ci, reps, cov_w);
        CHECK(cov_w >= 0.95 * reps);
        CHECK(cov_ci < 0.6 * reps);
        /* (c) no wander (white noise 30 ns only): the widening costs little: the widened half-width is within
         * twice the fit's own in most syncs, 1.5-1.8 times it on average */
        int modest = 0;
        double ratio = 0;
        for (int rep = 0; rep < reps; rep++) {
            for (int i = 0; i < 80; i++) wy[i] = 0.73 + drift * wx[i] + 30e-9 * gauss();
            mt_fit_decide(&pw, wx, wy, wr, 80, &lm, &st);
            ci = st.fit_ci_ppm * 1e-6;
            dis = mt_window_disagreement(&pw, wx, wy, wr, ws, wl, 2, st.fit_slope);
            modest += dis <= ci;
            ratio += (ci + dis) / ci;
        }
        ratio /= reps;
        fprintf(stderr, "no wander (c): widened within 2x the fit's interval in %d of %d, %.2fx on average\n",
                modest, reps, ratio);
        CHECK(modest >= 0.8 * reps && ratio < 2);
    }
    TEST_DONE();
}
