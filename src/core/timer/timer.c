/* mpitempo: the timer registry and the resolution/overhead study. */
#include "timer/timer.h"
#include "base/json.h"
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

void mt_timer_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_ntimers; i++) mt_names_add(buf, len, mt_timers[i]->name);
}

int mt_timer_check_name(const char *name, char *err)
{
    if (mt_timer_find(name)) return MT_OK;
    char allowed[256];
    mt_timer_names(allowed, sizeof allowed);
    return mt_fail(err, MT_EINVAL, "unknown timer '%s' (allowed: %s)", name, allowed);
}

int mt_timer_open(const char *name, mt_timer_inst_t *ti, char *err)
{
    const mt_timer_t *t = mt_timer_find(name);
    if (!t) return mt_timer_check_name(name, err);
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

void mt_timer_study_all(FILE *f, int64_t nreads)
{
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_arr_begin(&j);
    for (int i = 0; i < mt_ntimers; i++) {
        mt_timer_inst_t ti = {NULL, 0, 0};
        char err[MT_ERRLEN];
        mt_json_obj_begin(&j);
        mt_json_kstr(&j, "timer", mt_timers[i]->name);
        if (mt_timer_open(mt_timers[i]->name, &ti, err) != MT_OK) {
            mt_json_kbool(&j, "available", 0);
            mt_json_kstr(&j, "error", err);
        } else {
            mt_timer_quality_t q;
            mt_timer_study(&ti, nreads, &q);
            mt_json_kbool(&j, "available", 1);
            mt_json_knum(&j, "ticks_per_s", ti.ticks_per_s);
            mt_json_kint(&j, "nreads", q.nreads);
            mt_json_knum(&j, "resolution_s", q.res_s);
            mt_json_knum(&j, "min_overhead_s", q.min_ov_s);
            mt_json_knum(&j, "mean_read_s", q.mean_read_s);
        }
        mt_json_obj_end(&j);
    }
    mt_json_arr_end(&j);
}
