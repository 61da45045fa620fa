/* mpitempo: RDTSCP time-stamp counter, calibrated against CLOCK_MONOTONIC_RAW.
 * Refused where the CPU does not advertise rdtscp, constant_tsc and nonstop_tsc
 * (then the counter's rate may change with frequency or stop in sleep states). */
#define _GNU_SOURCE
#include "timer/timer.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define MT_HAVE_RDTSCP 1
static inline int64_t rdtscp_ticks(void)
{
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    return (int64_t)(((uint64_t)hi << 32) | lo);
}
#else
#define MT_HAVE_RDTSCP 0
static inline int64_t rdtscp_ticks(void) { return 0; }
#endif

static int64_t now_rdtscp(void) { return rdtscp_ticks(); }

/* Does /proc/cpuinfo's first "flags" line contain the word w? */
static int cpu_has_flag(const char *flags, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = flags; (p = strstr(p, w)) != NULL; p += n) {
        int left = p == flags || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
        int right = p[n] == ' ' || p[n] == '\n' || p[n] == '\0';
        if (left && right) return 1;
    }
    return 0;
}

static int64_t raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int init_rdtscp(double *f, char *err)
{
#ifdef MT_SMPI
    (void)f;
    return mt_fail(err, MT_EUNSUP, "timer 'rdtscp' is refused under SimGrid/SMPI: it counts the host CPU's cycles, "
                   "not simulated time (SMPI replaces clock_gettime and gettimeofday only); use 'monotonic'");
#endif
    if (!MT_HAVE_RDTSCP)
        return mt_fail(err, MT_EUNSUP, "timer 'rdtscp' needs an x86 CPU; use 'monotonic' instead");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp) return mt_fail(err, MT_EUNSUP, "timer 'rdtscp': cannot read /proc/cpuinfo to check the CPU flags");
    static const char *need[] = {"rdtscp", "constant_tsc", "nonstop_tsc"};
    char line[8192];
    int found = 0, ok[3] = {0, 0, 0};
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "flags", 5) == 0) {
            for (int i = 0; i < 3; i++) ok[i] = cpu_has_flag(line, need[i]);
            found = 1;
            break;
        }
    }
    fclose(fp);
    if (!found) return mt_fail(err, MT_EUNSUP, "timer 'rdtscp': no CPU flags in /proc/cpuinfo; use 'monotonic'");
    for (int i = 0; i < 3; i++)
        if (!ok[i])
            return mt_fail(err, MT_EUNSUP,
                           "timer 'rdtscp' refused: the CPU lacks the '%s' flag, so the TSC is not a reliable "
                           "clock here; use 'monotonic'", need[i]);
    /* Calibrate: best of 3 windows of 20 ms; each end point is bracketed by two
     * TSC reads and the tighter bracket is used. */
    double best = 0;
    int64_t best_unc = INT64_MAX;
    for (int k = 0; k < 3; k++) {
        int64_t a0 = rdtscp_ticks(), n0 = raw_ns(), a1 = rdtscp_ticks();
        int64_t target = n0 + 20000000LL, n1;
        do n1 = raw_ns(); while (n1 < target);
        int64_t b0 = rdtscp_ticks(), n2 = raw_ns(), b1 = rdtscp_ticks();
        (void)n1;
        int64_t unc = (a1 - a0) + (b1 - b0);
        double hz = (double)((b0 + b1) / 2 - (a0 + a1) / 2) / ((double)(n2 - n0) * 1e-9);
        if (unc < best_unc) { best_unc = unc; best = hz; }
    }
    if (!(best > 1e6))
        return mt_fail(err, MT_EUNSUP, "timer 'rdtscp': calibration failed (%.0f Hz)", best);
    *f = best;
    return MT_OK;
}

const mt_timer_t mt_timer_rdtscp = {
    "rdtscp", "RDTSCP time-stamp counter, frequency calibrated against CLOCK_MONOTONIC_RAW", 0, init_rdtscp,
    now_rdtscp};
