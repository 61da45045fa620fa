/* mpitempo: the timer registry and the resolution/overhead study. */
#include "timer/timer.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const mt_timer_t *const mt_timers[] = {
    &mt_timer_monotonic, &mt_timer_monotonic_raw, &mt_timer_realtime,
    &mt_timer_gettimeofday, &mt_timer_rdtscp, &mt_timer_wtime,
};
const int mt_ntimers = (int)(sizeof(mt_timers) / sizeof(mt_timers[0]));

const mt_timer_t *mt_timer_find(const char *name)
{
    for (int i = 0; i < mt_ntimers; i++)
        if (strcmp(mt_timers[i]->name, name) == 0) return mt_timers[i];
    return NULL;
}

int mt_timer_open(const char *name, mt_timer_inst_t *ti, char *err)
{
    const mt_timer_t *t = mt_timer_find(name);
    if (!t) {
        char allowed[256] = "";
        for (int i = 0; i < mt_ntimers; i++) {
            if (i) strncat(allowed, ", ", sizeof(allowed) - strlen(allowed) - 1);
            strncat(allowed, mt_timers[i]->name, sizeof(allowed) - strlen(allowed) - 1);
        }
        return mt_fail(err, MT_EINVAL, "unknown timer '%s' (allowed: %s)", name, allowed);
    }
    double f = 0;
    int rc = t->init(&f, err);
    if (rc != MT_OK) return rc;
    ti->t = t;
    ti->ticks_per_s = f;
    ti->s_per_tick = 1.0 / f;
    return MT_OK;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mt_timer_study_hist(const mt_timer_inst_t *ti, int64_t nreads, mt_timer_quality_t *q,
                         int64_t *hist, int nbins)
{
    int64_t (*now)(void) = ti->t->now;
    int64_t minpos = INT64_MAX, minnn = INT64_MAX;
    if (hist)
        for (int i = 0; i < nbins; i++) hist[i] = 0;
    double w0 = wall_s();
    int64_t prev = now();
    for (int64_t i = 0; i < nreads; i++) {
        int64_t t = now();
        int64_t d = t - prev;
        prev = t;
        if (d >= 0 && d < minnn) minnn = d;
        if (d > 0 && d < minpos) minpos = d;
        if (hist && d >= 0) hist[d < nbins - 1 ? d : nbins - 1]++;
    }
    double w1 = wall_s();
    q->nreads = nreads;
    q->res_s = minpos == INT64_MAX ? 0.0 : mt_ticks_to_s(ti, minpos);
    q->min_ov_s = minnn == INT64_MAX ? 0.0 : mt_ticks_to_s(ti, minnn);
    q->mean_read_s = nreads > 0 ? (w1 - w0) / (double)nreads : 0.0;
}

void mt_timer_study(const mt_timer_inst_t *ti, int64_t nreads, mt_timer_quality_t *q)
{
    mt_timer_study_hist(ti, nreads, q, NULL, 0);
}
