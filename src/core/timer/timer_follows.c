/* mpitempo: which system clock does a timer follow? (see timer.h, mt_timer_follows) */
#include "timer/timer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define FOLLOW_N 32
#define FOLLOW_TOL_S 5e-6 /* an offset within 5 us of whole seconds is "whole seconds" */

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double spread(const double *v, int n)
{
    double lo = v[0], hi = v[0];
    for (int i = 1; i < n; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    return hi - lo;
}

static int whole_seconds(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (fabs(v[i] - nearbyint(v[i])) > FOLLOW_TOL_S) return 0;
    return 1;
}

const char *mt_timer_classify(const double *d_mono, const double *d_real, int n)
{
    int mono_const = spread(d_mono, n) < 20 * FOLLOW_TOL_S, real_const = spread(d_real, n) < 20 * FOLLOW_TOL_S;
    if (real_const && whole_seconds(d_real, n)) return "CLOCK_REALTIME";
    if (mono_const && whole_seconds(d_mono, n)) return "CLOCK_MONOTONIC";
    if (mono_const || real_const) return "steady (CLOCK_MONOTONIC or CLOCK_REALTIME minus a fraction of a second: "
                                         "not distinguishable here)";
    return "its own counter (drifts against CLOCK_MONOTONIC)";
}

const char *mt_timer_follows(const mt_timer_inst_t *ti, const char **how)
{
    const char *n = ti->t->name;
    *how = "by construction";
    if (strcmp(n, "monotonic") == 0) return "CLOCK_MONOTONIC";
    if (strcmp(n, "monotonic_raw") == 0) return "CLOCK_MONOTONIC_RAW";
    if (strcmp(n, "realtime") == 0 || strcmp(n, "gettimeofday") == 0) return "CLOCK_REALTIME";
    if (strcmp(n, "rdtscp") == 0) return "TSC (the CPU's time-stamp counter, calibrated against CLOCK_MONOTONIC)";
    /* anything else (MPI_Wtime): compare its offsets to both clocks */
    double dm[FOLLOW_N], dr[FOLLOW_N];
    for (int i = 0; i < FOLLOW_N; i++) {
        double m = clock_s(CLOCK_MONOTONIC);
        double t = mt_ticks_to_s(ti, ti->t->now());
        double r = clock_s(CLOCK_REALTIME);
        dm[i] = t - m;
        dr[i] = t - r;
    }
    *how = "detected (offsets to both clocks over 32 reads)";
    return mt_timer_classify(dm, dr, FOLLOW_N);
}
