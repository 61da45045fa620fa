#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "timer/timer.h"

int main(void)
{
    char err[MT_ERRLEN];
    mt_timer_inst_t ti;
    CHECK(mt_timer_open("nosuch", &ti, err) == MT_EINVAL);
    CHECK(strstr(err, "'nosuch'") && strstr(err, "monotonic") && strstr(err, "rdtscp"));
    /* wtime needs MPI: refused cleanly before MPI_Init */
    CHECK(mt_timer_open("wtime", &ti, err) == MT_EUNSUP);
    const char *names[] = {"monotonic", "monotonic_raw", "realtime", "gettimeofday"};
    for (int i = 0; i < 4; i++) {
        CHECK(mt_timer_open(names[i], &ti, err) == MT_OK);
        mt_timer_quality_t q;
        int64_t hist[16];
        mt_timer_study_hist(&ti, 200000, &q, hist, 16);
        CHECK(q.nreads == 200000);
        CHECK(q.min_ov_s >= 0 && q.min_ov_s < 1e-3);
        CHECK(q.res_s > 0 && q.res_s < 1e-3);
        CHECK(q.res_s >= q.min_ov_s);
        int64_t tot = 0;
        for (int b = 0; b < 16; b++) tot += hist[b];
        CHECK(tot == 200000); /* monotonic clocks: every difference >= 0 */
        /* the timer advances at its stated rate: compare 20 ms against monotonic */
        mt_timer_inst_t ref;
        mt_timer_open("monotonic", &ref, err);
        int64_t a0 = ti.t->now(), r0 = ref.t->now();
        while (mt_ticks_to_s(&ref, ref.t->now() - r0) < 0.02) {}
        int64_t a1 = ti.t->now(), r1 = ref.t->now();
        CHECK_CLOSE(mt_ticks_to_s(&ti, a1 - a0), mt_ticks_to_s(&ref, r1 - r0), 2e-4);
    }
    /* rdtscp: either available and calibrated to a sane frequency, or refused with a reason */
    int rc = mt_timer_open("rdtscp", &ti, err);
    if (rc == MT_OK) {
        CHECK(ti.ticks_per_s > 1e8 && ti.ticks_per_s < 1e10);
        mt_timer_inst_t ref;
        mt_timer_open("monotonic", &ref, err);
        int64_t a0 = ti.t->now(), r0 = ref.t->now();
        while (mt_ticks_to_s(&ref, ref.t->now() - r0) < 0.05) {}
        int64_t a1 = ti.t->now(), r1 = ref.t->now();
        double rel = mt_ticks_to_s(&ti, a1 - a0) / mt_ticks_to_s(&ref, r1 - r0);
        CHECK_CLOSE(rel, 1.0, 1e-3);
    } else {
        CHECK(rc == MT_EUNSUP && strstr(err, "rdtscp"));
        printf("rdtscp refused here: %s\n", err);
    }
    /* which clock a timer follows: offsets to CLOCK_MONOTONIC and CLOCK_REALTIME */
    {
        double dm[4], dr[4];
        for (int i = 0; i < 4; i++) {
            dm[i] = 1234.5678901 + 1e-7 * i; /* constant, not whole seconds */
            dr[i] = -3600.0 * 472000 + 2e-7 * i; /* whole seconds (MPICH: realtime minus the hour) */
        }
        CHECK(strcmp(mt_timer_classify(dm, dr, 4), "CLOCK_REALTIME") == 0);
        for (int i = 0; i < 4; i++) {
            dm[i] = -5.0 + 1e-7 * i;
            dr[i] = -1.7e9 + 0.3217;
        }
        CHECK(strcmp(mt_timer_classify(dm, dr, 4), "CLOCK_MONOTONIC") == 0);
        for (int i = 0; i < 4; i++) dm[i] = dr[i] = 0.25 + 1e-3 * i; /* drifting: its own counter */
        CHECK(strncmp(mt_timer_classify(dm, dr, 4), "its own", 7) == 0);
        mt_timer_inst_t ti;
        const char *how;
        CHECK(mt_timer_open("monotonic", &ti, err) == MT_OK);
        CHECK(strcmp(mt_timer_follows(&ti, &how), "CLOCK_MONOTONIC") == 0);
    }
    TEST_DONE();
}
