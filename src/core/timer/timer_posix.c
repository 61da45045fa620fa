/* mpitempo: POSIX timers: clock_gettime (MONOTONIC, MONOTONIC_RAW, REALTIME)
 * and gettimeofday. All in int64 nanoseconds (gettimeofday: microseconds). */
#define _GNU_SOURCE
#include "timer/timer.h"
#include "base/mt_common.h"

#include <sys/time.h>
#include <time.h>

static inline int64_t ts_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

static int64_t now_monotonic(void) { return ts_ns(CLOCK_MONOTONIC); }
static int64_t now_monotonic_raw(void) { return ts_ns(CLOCK_MONOTONIC_RAW); }
static int64_t now_realtime(void) { return ts_ns(CLOCK_REALTIME); }

static int64_t now_gettimeofday(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000LL + (int64_t)tv.tv_usec;
}

static int check_clock(clockid_t id, const char *name, char *err)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return mt_fail(err, MT_EUNSUP, "timer '%s' is not available on this system (clock_gettime failed)", name);
    return MT_OK;
}

static int init_ns_mono(double *f, char *err) { *f = 1e9; return check_clock(CLOCK_MONOTONIC, "monotonic", err); }
static int init_ns_raw(double *f, char *err) { *f = 1e9; return check_clock(CLOCK_MONOTONIC_RAW, "monotonic_raw", err); }
static int init_ns_real(double *f, char *err) { *f = 1e9; return check_clock(CLOCK_REALTIME, "realtime", err); }
static int init_us(double *f, char *err) { (void)err; *f = 1e6; return MT_OK; }

const mt_timer_t mt_timer_monotonic = {
    "monotonic", "clock_gettime(CLOCK_MONOTONIC), int64 ns", 0, init_ns_mono, now_monotonic};
const mt_timer_t mt_timer_monotonic_raw = {
    "monotonic_raw", "clock_gettime(CLOCK_MONOTONIC_RAW), int64 ns (not slewed by NTP)", 0, init_ns_raw,
    now_monotonic_raw};
const mt_timer_t mt_timer_realtime = {
    "realtime", "clock_gettime(CLOCK_REALTIME), int64 ns (wall clock, may jump)", 0, init_ns_real, now_realtime};
const mt_timer_t mt_timer_gettimeofday = {
    "gettimeofday", "gettimeofday(), int64 us (wall clock, may jump)", 0, init_us, now_gettimeofday};
