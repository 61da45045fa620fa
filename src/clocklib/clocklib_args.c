/* libmpitempo-clock: the arguments the ranks must give alike, and finite times (clocklib_args.h). */
#include "clocklib_args.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void mt_clib_args_set(mt_clib_args_t *a, const char *canon, const char *given, const char *timer, int wait)
{
    memset(a, 0, sizeof *a);
    snprintf(a->spec, sizeof a->spec, "%s", canon ? canon : "");
    a->spec_null = !given || !*given;
    if (!a->spec_null) {
        size_t n = strlen(given);
        if (n < sizeof a->given) memcpy(a->given, given, n);
        else snprintf(a->given, sizeof a->given, "%.*s...", (int)sizeof a->given - 4, given);
    }
    a->timer_null = !timer || !*timer;
    snprintf(a->timer, sizeof a->timer, "%.*s", (int)sizeof a->timer - 1, a->timer_null ? "monotonic" : timer);
    a->wait = wait;
}

int mt_clib_args_diff(const mt_clib_args_t *a, const mt_clib_args_t *b)
{
    int d = 0;
    if (a->spec_null != b->spec_null || strncmp(a->spec, b->spec, sizeof a->spec) != 0) d |= MT_CLIB_DIFF_SPEC;
    if (strncmp(a->timer, b->timer, sizeof a->timer) != 0) d |= MT_CLIB_DIFF_TIMER;
    if (a->wait != b->wait) d |= MT_CLIB_DIFF_WAIT;
    return d;
}

static void spec_text(const mt_clib_args_t *a, char *buf, size_t len)
{
    if (a->spec_null) snprintf(buf, len, "NULL (the default spec)");
    else if (strcmp(a->given, a->spec) == 0) snprintf(buf, len, "'%s'", a->given);
    else snprintf(buf, len, "'%s' (%.300s)", a->given, a->spec);
}

static void timer_text(const mt_clib_args_t *a, char *buf, size_t len)
{
    if (a->timer_null) snprintf(buf, len, "NULL (monotonic)");
    else snprintf(buf, len, "'%s'", a->timer);
}

void mt_clib_args_mismatch(const char *fn, const mt_clib_args_t *a, const mt_clib_args_t *b, int r, char *msg,
                           size_t len)
{
    int d = mt_clib_args_diff(a, b);
    char x[512], y[512];
    const char *what;
    if (d & MT_CLIB_DIFF_SPEC) {
        what = "sync_spec";
        spec_text(a, x, sizeof x);
        spec_text(b, y, sizeof y);
    } else if (d & MT_CLIB_DIFF_TIMER) {
        what = "opt->timer";
        timer_text(a, x, sizeof x);
        timer_text(b, y, sizeof y);
    } else {
        what = "opt->wait";
        snprintf(x, sizeof x, "%d", a->wait);
        snprintf(y, sizeof y, "%d", b->wait);
    }
    snprintf(msg, len, "%s: the ranks gave different %s: rank 0 %s, rank %d %s; every rank of the communicator "
                       "must give the same %s (no clock was created)", fn, what, x, r, y, what);
}

int mt_clib_time_check(const char *fn, const char *arg, double t, char *msg, size_t len)
{
    if (isfinite(t)) return 0;
    snprintf(msg, len, "%s: %s is %s; give a finite time in seconds", fn, arg,
             isnan(t) ? "NaN" : t > 0 ? "inf" : "-inf");
    return -1;
}
