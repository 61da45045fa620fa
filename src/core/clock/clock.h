/* mpitempo: clocks (Hunold and Carpen-Amarie 2018, sections III-IV). A base clock reads a timer
 * (int64 ticks) relative to a common epoch (rank 0's reading at start, so
 * times stay small and doubles keep sub-ns precision even for CLOCK_REALTIME),
 * optionally through a simulated offset and drift. A global clock is a base
 * clock plus a stack of models; each model maps the time of the layer below
 * to the time of a reference:
 *
 *     offset o(t) = slope * t + intercept   (client time minus reference time)
 *     global(t)   = t - o(t)
 *
 * An offset-only model has slope 0. Nesting (HCA3 pushes, hierarchical sync)
 * pushes one more model; flatten/unflatten carry the model stack (not the base
 * clock, which is always the receiver's own) through MPI_Bcast. */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "timer/timer.h"

#define MT_CLOCK_MAXDEPTH 8

enum { MT_MODEL_OFFSET = 1, MT_MODEL_LINEAR = 2 };

typedef struct mt_model {
    int kind;         /* MT_MODEL_OFFSET or MT_MODEL_LINEAR */
    double slope;     /* dimensionless drift of this clock against the reference */
    double intercept; /* seconds */
} mt_model_t;

/* Simulated clock: sim(t) = t * (1 + drift) + offset_s, per rank. */
typedef struct mt_sim {
    int on;
    double offset_s;
    double drift;     /* relative (ppm * 1e-6) */
} mt_sim_t;

typedef struct mt_baseclock {
    mt_timer_inst_t timer;
    int64_t epoch;    /* ticks subtracted from every reading (common to all ranks) */
    mt_sim_t sim;
} mt_baseclock_t;

typedef struct mt_clock {
    const mt_baseclock_t *base;
    int depth;                         /* 0: the base clock itself */
    mt_model_t m[MT_CLOCK_MAXDEPTH];   /* m[0] is applied first (innermost) */
} mt_clock_t;

/* Set up a base clock; collective over comm: rank 0's reading becomes the
 * epoch of every rank. sim may be NULL (no simulation). */
int mt_baseclock_init(mt_baseclock_t *b, const mt_timer_inst_t *t, const mt_sim_t *sim, MPI_Comm comm,
                      char *err);
/* Without MPI (unit tests): explicit epoch. */
void mt_baseclock_init_local(mt_baseclock_t *b, const mt_timer_inst_t *t, int64_t epoch, const mt_sim_t *sim);

static inline double mt_base_from_ticks(const mt_baseclock_t *b, int64_t ticks)
{
    double t = (double)(ticks - b->epoch) * b->timer.s_per_tick;
    if (b->sim.on) t = t * (1.0 + b->sim.drift) + b->sim.offset_s;
    return t;
}
static inline double mt_base_now(const mt_baseclock_t *b) { return mt_base_from_ticks(b, b->timer.t->now()); }

/* Apply the model stack to a base time (pure). */
static inline double mt_clock_apply(const mt_clock_t *c, double t)
{
    for (int i = 0; i < c->depth; i++) t = t - (c->m[i].slope * t + c->m[i].intercept);
    return t;
}
/* The clock's time in seconds (global time for a synchronised clock). */
static inline double mt_clock_now(const mt_clock_t *c) { return mt_clock_apply(c, mt_base_now(c->base)); }

/* The base clock without any model (the "dummy" GLOBALCLOCKLM(clk, 0, 0)). */
void mt_clock_init(mt_clock_t *c, const mt_baseclock_t *b);
/* out = in with model m on top; out may alias in. MT_EINVAL when too deep. */
int mt_clock_nest(const mt_clock_t *in, const mt_model_t *m, mt_clock_t *out, char *err);
/* Effective drift of the clock against its base's raw time: 1 - prod(1 - slope_i). */
double mt_clock_drift(const mt_clock_t *c);

/* Flattened form: "MTCK", u32 version, u32 depth, depth x (i32 kind, f64 slope, f64 intercept). */
size_t mt_clock_flat_size(const mt_clock_t *c);
size_t mt_clock_flatten(const mt_clock_t *c, unsigned char *buf, size_t len);
int mt_clock_unflatten(const unsigned char *buf, size_t len, const mt_baseclock_t *b, mt_clock_t *out, char *err);

/* HCA2 merge: a is the model of clock B against reference A, b the model of C
 * against B; out is the model of C against A (out may alias a or b). */
void mt_model_merge(const mt_model_t *a, const mt_model_t *b, mt_model_t *out);

/* Ordinary least squares y = slope * x + intercept with the standard error of
 * the slope. x is centred internally for stability. n >= 2; returns MT_EINVAL
 * when n < 2 or all x are equal. */
typedef struct mt_fit {
    int n;
    double slope, intercept;
    double slope_se;   /* standard error of the slope (0 when n == 2) */
    double resid_sd;   /* residual standard deviation */
    double xmean, ymean;
} mt_fit_t;
int mt_fit_linear(const double *x, const double *y, int n, mt_fit_t *f);

/* ---- simulated clock (clock_sim.c) ---- */
/* Parse the simulation settings for rank `rank` of `nprocs`:
 *  offsets: "o0,o1,..." seconds per rank (the last value repeats), or NULL
 *  drifts:  "d0,d1,..." ppm per rank (the last value repeats), or NULL
 *  random:  "SEED[:MAXOFF_S[:MAXDRIFT_PPM]]" uniform in [-max, max], rank 0 included, or NULL
 * Any of them non-NULL turns the simulation on; random excludes the lists. */
int mt_sim_parse(const char *offsets, const char *drifts, const char *random, int rank, int nprocs, mt_sim_t *out,
                 char *err);
/* Same, from the environment: MPITEMPO_SIM_OFFSETS, MPITEMPO_SIM_DRIFTS, MPITEMPO_SIM_RANDOM
 * (used only for those of the arguments that are NULL). */
int mt_sim_from_env(const char *offsets, const char *drifts, const char *random, int rank, int nprocs,
                    mt_sim_t *out, char *err);

#endif
