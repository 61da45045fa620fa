/* The steady-state test of --warmup auto (scheme/warmup.c) on synthetic call-time sequences. */
#include "scheme/scheme.h"
#include "mt_test.h"

#include <math.h>

#define N 4000
static double t[N];

int main(void)
{
    int capped = -1, n;
    const int W = MT_WARMUP_WINDOW, MIN = (MT_WARMUP_AGREE + 1) * MT_WARMUP_WINDOW;

    /* flat: steady as early as the test allows (MT_WARMUP_AGREE windows agreeing with the one before) */
    for (int i = 0; i < N; i++) t[i] = 1e-6;
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == MIN && capped == 0);

    /* a decaying start (cold caches, first-touch pages, connection set-up): 1 us + 50 us e^(-i/40).
     * Consecutive window medians differ by less than 5 % once 50 e^(-i/40) (1 - e^(-20/40)) / 1 us
     * < 0.05, i.e. i > 40 ln(50 * 0.3935 / 0.05) ~ 239: windows starting at 240 and 260 (the second
     * confirming) end the warm-up at 280 calls */
    for (int i = 0; i < N; i++) t[i] = 1e-6 + 50e-6 * exp(-i / 40.0);
    n = mt_steady_detect(t, N, &capped);
    CHECK(capped == 0 && n > MIN && n % W == 0);
    CHECK(n >= 260 && n <= 320);
    /* the count is where the decay has died out: the calls after it are within 5 % of the final level */
    CHECK(t[n] < 1.05e-6 && t[n - 3 * W] > 1.05e-6);

    /* never steady: every window 10 % slower than the one before */
    for (int i = 0; i < N; i++) t[i] = 1e-6 * pow(1.1, i / W);
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == MT_WARMUP_CAP && capped == 1);
    /* alternating levels (two modes, 30 % apart): never two agreeing windows in a row -> the cap */
    for (int i = 0; i < N; i++) t[i] = (i / W) % 2 ? 1.3e-6 : 1e-6;
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == MT_WARMUP_CAP && capped == 1);

    /* one agreeing pair is not enough: a jump right after resets the count */
    for (int i = 0; i < N; i++) t[i] = i < 2 * W ? 1e-6 : i < 3 * W ? 2e-6 : 2e-6;
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == 5 * W && capped == 0);   /* windows 3, 4, 5 agree after the jump at window 3 */

    /* the median per window: a single slow call (an interrupt) in every window does not matter */
    for (int i = 0; i < N; i++) t[i] = i % W == 7 ? 1e-3 : 1e-6;
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == MIN && capped == 0);

    /* changes below the absolute tolerance (timer resolution) count as steady even when large in
     * relative terms: 100 ns vs 110 ns */
    for (int i = 0; i < N; i++) t[i] = (i / W) % 2 ? 110e-9 : 100e-9;
    n = mt_steady_detect(t, N, &capped);
    CHECK(n == MIN && capped == 0);

    /* a sequence too short to decide: -1 */
    CHECK(mt_steady_detect(t, 2 * W, &capped) == -1);

    /* the incremental form agrees with the whole-sequence form */
    mt_steady_t s;
    mt_steady_init(&s);
    int k = 0;
    while (!mt_steady_feed(&s, k < 5 ? 10e-6 / (k + 1) : 1e-6)) k++;
    CHECK(s.done && !s.capped && s.calls == (k + 1) * W);
    CHECK(mt_steady_feed(&s, 5.0) == 1 && s.calls == (k + 1) * W);   /* done stays done */

    /* --warmup-max-time: how many of a fixed warm-up fit; never fewer than the two timed calls */
    CHECK(mt_warmup_fit(10, 10e-3, 40e-3) == 2);      /* a 4 MiB window of 40 ms: 2 (OSU's skip_large) */
    CHECK(mt_warmup_fit(10, 10e-3, 3e-3) == 3);       /* floor(10 / 3) */
    CHECK(mt_warmup_fit(10, 10e-3, 1e-3) == 10);      /* exactly fits */
    CHECK(mt_warmup_fit(10, 10e-3, 1e-6) == 10);      /* short calls: the whole --warmup */
    CHECK(mt_warmup_fit(10, 0, 40e-3) == 10);         /* no limit */
    CHECK(mt_warmup_fit(10, 10e-3, 0) == 10);         /* a call too short to time: no reason to cut */
    CHECK(mt_warmup_fit(2, 10e-3, 1.0) == 2 && mt_warmup_fit(1, 10e-3, 1.0) == 1 && mt_warmup_fit(0, 1e-3, 1.0) == 0);
    TEST_DONE();
}
