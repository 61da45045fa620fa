/* mpitempo: timers. A timer reads a local time source as int64 ticks; its
 * frequency (ticks per second) is known after init. Timers are registered in
 * a table (timer.c); a new timer is a new file plus one line there. */
#ifndef MT_TIMER_H
#define MT_TIMER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mt_timer {
    const char *name;   /* command-line name, e.g. "monotonic" */
    const char *desc;   /* one line for --help and meta.json */
    int needs_mpi;      /* 1 if it may only be read between MPI_Init and MPI_Finalize */
    /* Check availability and calibrate: set *ticks_per_s. Returns MT_OK or an
     * error (MT_EUNSUP with a message when the machine cannot provide it). */
    int (*init)(double *ticks_per_s, char *err);
    int64_t (*now)(void);
} mt_timer_t;

/* A timer ready to use: the registry entry plus what init measured. */
typedef struct mt_timer_inst {
    const mt_timer_t *t;
    double ticks_per_s;
    double s_per_tick;
} mt_timer_inst_t;

/* Resolution and overhead of back-to-back reads (Luecke et al. 2009, section 3.1):
 * res = min positive difference, ov = min non-negative difference. */
typedef struct mt_timer_quality {
    int64_t nreads;
    double res_s;      /* 0 if every difference was 0 */
    double min_ov_s;
    double mean_read_s;/* wall time per read over the whole study */
} mt_timer_quality_t;

extern const mt_timer_t *const mt_timers[];
extern const int mt_ntimers;

const mt_timer_t *mt_timer_find(const char *name);
/* "monotonic, monotonic_raw, ..." */
void mt_timer_names(char *buf, size_t len);
/* MT_OK for a registered name, else "unknown timer 'x' (allowed: ...)" (no init: no MPI needed) */
int mt_timer_check_name(const char *name, char *err);
/* Find and initialise; on error, err names the timer and the allowed ones. */
int mt_timer_open(const char *name, mt_timer_inst_t *ti, char *err);
/* Back-to-back study of nreads reads. */
void mt_timer_study(const mt_timer_inst_t *ti, int64_t nreads, mt_timer_quality_t *q);
/* Same, but also fill a histogram of differences (in ticks) 0..nbins-1; the
 * last bin collects everything >= nbins-1. hist may be NULL. */
void mt_timer_study_hist(const mt_timer_inst_t *ti, int64_t nreads, mt_timer_quality_t *q,
                         int64_t *hist, int nbins);

/* --timer-study: a JSON array on f, one object per registered timer:
 * available, resolution and overhead from nreads back-to-back reads */
void mt_timer_study_all(FILE *f, int64_t nreads);

static inline double mt_ticks_to_s(const mt_timer_inst_t *ti, int64_t dt)
{
    return (double)dt * ti->s_per_tick;
}

/* Which system clock the timer follows (timer_follows.c): by construction for
 * the clock_gettime timers and the TSC; for others (MPI_Wtime) detected by
 * reading it next to CLOCK_MONOTONIC and CLOCK_REALTIME: the one it differs
 * from by a constant number of whole seconds (MPICH: CLOCK_REALTIME minus the
 * start of the hour). A timer following CLOCK_REALTIME moves with NTP slews
 * and steps, and not with a time namespace. *how says which way it was found. */
const char *mt_timer_follows(const mt_timer_inst_t *ti, const char **how);
/* pure part: offsets timer - CLOCK_MONOTONIC and timer - CLOCK_REALTIME (s) */
const char *mt_timer_classify(const double *d_mono, const double *d_real, int n);

/* individual timers (one file each) */
extern const mt_timer_t mt_timer_monotonic, mt_timer_monotonic_raw, mt_timer_realtime,
    mt_timer_gettimeofday, mt_timer_rdtscp, mt_timer_wtime;

#endif
