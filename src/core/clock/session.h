/* mpitempo: the global clock of one run, as the executables use it: the base
 * clock (timer, common epoch, optional simulated offset and drift), a sync
 * checked right after it (Hunold and Carpen-Amarie 2018, Alg. 6), re-syncs by
 * age between timed regions, and the check at the end. */
#ifndef MT_SESSION_H
#define MT_SESSION_H

#include <mpi.h>

#include "base/json.h"
#include "clock/sync.h"

typedef struct mt_gclock {
    MPI_Comm comm;
    int rank, size;
    int lazy;                /* ranks share CPUs: waits sleep (see mt_sync_run) */
    mt_sim_t sim;            /* this rank's simulation settings */
    double *simall;          /* rank 0: offset_s, drift of every rank */
    mt_baseclock_t base;
    mt_sync_spec_t spec;     /* "none" until mt_gclock_sync */
    mt_sync_result_t res;    /* res.clock: the global clock; duration_s: max over ranks of the first sync */
    mt_check_t chk0, chk1;   /* accuracy right after the sync and at the end */
    double t_synced;         /* rank 0: base-clock time of the last sync */
    int nresync;
    int rtt_preempted_ranks;   /* rank 0: ranks whose Mean-RTT-Offset measurements saw preempted round trips */
    int below_accuracy_ranks;  /* rank 0: ranks whose clock is below its stated accuracy (mt_sync_below_accuracy) */
    double rtt_spread_max_s;   /* rank 0: the largest spread of those measurements (s) */
    int *slopes;             /* rank 0: slope decision of every rank (after mt_gclock_finish) */
    double *fits;            /* rank 0: fit points, slope interval reached (ppm), how the window ended, per rank */
    int synced, finished;
    /* the end-of-run check (docs/clocks.md, "Verified at the end") */
    double t_first;          /* base-clock time right after the first sync (the run's measurements start) */
    double horizon_s;        /* rank 0: last sync -> last measurement, base-clock seconds */
    double run_s;            /* rank 0: first sync -> last measurement */
    double end_check_s;      /* rank 0: wall time of the end check, max over ranks */
    double end_gap_s;        /* the gap between the check's tries (sized to the run) */
    int end_tries;           /* tries per rank of the end check (sized to the run) */
    int end_pp;              /* ping-pongs per try of the end check (sized to the run) */
    double try_s;            /* one try of one rank (CHECK_PP ping-pongs), measured by the check after the sync */
    double scheme_gap_s;     /* the smallest window (or Round-Time slack) of the run's scheme; 0: none */
    const char *scheme_gap_of; /* "window" or "slack" */
    double *endinfo;         /* rank 0: per rank: drift_unc + drift_unc_ref (s/s), own, slope_unresolved,
                              * ref_below, below_accuracy (at the horizon), refits */
    int below_end_ranks;     /* rank 0: ranks below their stated accuracy at the horizon */
    int inaccurate_end_ranks; /* rank 0: ranks whose end offset exceeds the threshold */
    /* checks between experiments (long runs) */
    double t_lastcheck;      /* rank 0: base-clock time of the last check (or sync) */
    int nchecks, ncheck_resyncs;
    double checks[64][3];    /* rank 0: first 64 checks: time since the first sync, max |offset|, resynced */
    double checks_max_s;     /* rank 0: the largest max |offset| of any check between experiments */
} mt_gclock_t;

/* Simulation settings (arguments, else MPITEMPO_SIM_*), then the base clock on
 * timer t; collective, errors agreed by every rank. Rank 0 notes a simulation on stderr. */
int mt_gclock_init(mt_gclock_t *g, MPI_Comm comm, const mt_timer_inst_t *t, const char *sim_offsets,
                   const char *sim_drifts, const char *sim_random, int lazy, char *err);
/* Synchronise with spec (a no-op for "none") and check the result. Collective. */
int mt_gclock_sync(mt_gclock_t *g, const mt_sync_spec_t *spec, char *err);
/* The global clock, or NULL when not synchronised. */
const mt_clock_t *mt_gclock_clock(const mt_gclock_t *g);
/* Between timed regions: re-synchronise when the model is older than max_age_s (0: never). */
int mt_gclock_resync_if_old(mt_gclock_t *g, double max_age_s, char *err);
/* Between experiments of a long run: when the last check (or sync) is MT_CHECK_EVERY_S old, check the
 * clocks (sized to ~1% of that time) and re-synchronise when a rank is off by more than the threshold
 * (the stated accuracy, or the scheme's gap when smaller). Collective. */
int mt_gclock_check_if_due(mt_gclock_t *g, char *err);
#define MT_CHECK_EVERY_S 10.0
/* The scheme tolerates a clock error up to gap_s (its window, or Round-Time's slack; of = "window" or
 * "slack"); the smallest over the run counts. Any rank may call it; rank 0's value is used. */
void mt_gclock_scheme_gap(mt_gclock_t *g, double gap_s, const char *of);
/* After the measurements: the accuracy check at the end and the slope decisions. */
int mt_gclock_finish(mt_gclock_t *g, char *err);
/* meta.json's "clock" section body (keys into an open object, rank 0). */
void mt_gclock_write_meta(const mt_gclock_t *g, mt_json_t *j, int defaulted, double resync_age_s);
void mt_gclock_free(mt_gclock_t *g);

#endif
