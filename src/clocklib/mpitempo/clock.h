/* mpitempo/clock.h: the global clock of mpitempo as a library (libmpitempo-clock).
 *
 * A global clock gives every rank of a communicator the same time: each rank
 * reads its own local timer and applies a model (offset, or offset and drift)
 * learned against rank 0 by a clock-synchronisation algorithm (HCA3, JK,
 * SKaMPI, hierarchical combinations, ...; see docs/clocks.md of mpitempo).
 * Times are seconds as double, counted from a common epoch (rank 0's local
 * time when the clock was created), so they stay small and keep sub-ns precision.
 *
 *   mtc_clock_t *clk;
 *   if (mtc_create(MPI_COMM_WORLD, NULL, &clk) != MTC_OK) { fprintf(stderr, "%s\n", mtc_error()); ... }
 *   double t = mtc_now(clk);          // global time, the same on every rank
 *   ...
 *   mtc_free(&clk);
 *
 * Collective calls (marked so) must be called by every rank of the clock's
 * communicator, in the same order, like any MPI collective. They all return
 * MTC_OK or an error code that every rank gets alike, with a one-line message
 * from mtc_error() that is the same on every rank and names the call and its
 * argument (e.g. "mpitempo-clock: mtc_create: sync_spec: ..."). Reading the clock is local and costs one timer read plus a
 * few multiplications. A failing MPI call inside the library aborts the job
 * (MPI's default error handling). Build: pkg-config --cflags --libs mpitempo-clock. */
#ifndef MPITEMPO_CLOCK_H
#define MPITEMPO_CLOCK_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MTC_VERSION_MAJOR 0
#define MTC_VERSION_MINOR 1
#define MTC_VERSION_PATCH 0

/* Return codes (MTC_OK is 0; the others come with a message in mtc_error()). */
enum {
    MTC_OK = 0,
    MTC_EINVAL = 2,  /* bad argument: NULL, unknown sync spec or timer, unusable communicator */
    MTC_EMPI = 3,    /* MPI not initialised, or already finalised */
    MTC_ENOMEM = 5,  /* out of memory */
    MTC_EUNSUP = 6,  /* the machine cannot provide what was asked (e.g. timer rdtscp without an invariant TSC) */
    MTC_ESYNC = 7    /* the synchronisation failed (e.g. "prop" across ranks with different time sources) */
};

/* The spec used when NULL or "" is given: hierarchical, HCA3 between nodes and
 * ClockPropSync inside a node; when that fails (ranks of a node do not share a
 * time source) the clock falls back to MTC_FALLBACK_SYNC. */
#define MTC_DEFAULT_SYNC "h2:hca3/prop"
#define MTC_FALLBACK_SYNC "hca3"

typedef struct mtc_clock mtc_clock_t;

/* Options of mtc_create_ex (zero-initialise, then set what you need). */
typedef struct mtc_options {
    const char *timer;  /* local timer: "monotonic" (default when NULL), "monotonic_raw", "realtime",
                         * "gettimeofday", "rdtscp", "wtime" */
    int wait;           /* how ranks wait during the sync: 0 auto (sleep when more ranks than cores
                         * share a node, else spin), 1 spin, 2 sleep */
} mtc_options_t;

/* Collective over comm (an intracommunicator of at least 2 ranks; the library
 * works on its own duplicate). Synchronise a global clock with sync_spec, a
 * spec string of mpitempo ("hca3", "jk", "skampi:pp=50", "h2:hca3/prop", ...;
 * NULL or "" for MTC_DEFAULT_SYNC) and check it once (mtc_accuracy). Every
 * rank must ask for the same clock: the same sync_spec (compared with every
 * parameter spelled out, so "skampi" and "skampi:pp=100" are alike; NULL only
 * equals NULL or ""), opt->timer and opt->wait; otherwise every rank returns
 * MTC_EINVAL naming the argument and both values, before any sync starts. */
int mtc_create(MPI_Comm comm, const char *sync_spec, mtc_clock_t **out);
int mtc_create_ex(MPI_Comm comm, const char *sync_spec, const mtc_options_t *opt, mtc_clock_t **out);

/* Global time now, in seconds (local; NaN for a NULL clock, with a message in mtc_error). */
double mtc_now(const mtc_clock_t *clk);
/* This rank's local time now, in seconds since the common epoch, before the model (local; NaN for a NULL clock). */
double mtc_local_now(const mtc_clock_t *clk);
/* Global time of a local timestamp taken with mtc_local_now (local; pure). NaN for a NULL clock or a
 * non-finite local_s (NaN, inf, -inf), with the same message in mtc_error on every rank. */
double mtc_to_global(const mtc_clock_t *clk, double local_s);

/* Collective: synchronise again with the same spec (the models drift apart
 * over minutes; resync between phases that need the accuracy). When the new
 * sync fails, the clock keeps its previous model (and the error is returned). */
int mtc_resync(mtc_clock_t *clk);

/* Collective: measure now how far the ranks' global clocks are from rank 0's
 * (Hunold and Carpen-Amarie 2018, Alg. 6: SKaMPI-Offset, 100 ping-pongs, the
 * fastest of 5 tries per rank) and give every rank the largest and the median
 * |offset| over the ranks, in seconds. Either pointer may be NULL. */
int mtc_accuracy(mtc_clock_t *clk, double *max_abs_offset_s, double *median_abs_offset_s);

/* The spec in use, spelled out with every parameter (e.g. "hca3:fitpts=...");
 * after a fallback, the fallback's. NULL for a NULL clock. */
const char *mtc_spec(const mtc_clock_t *clk);
/* Wall time of the last synchronisation (max over ranks), seconds; NaN for a NULL clock. */
double mtc_sync_duration(const mtc_clock_t *clk);

/* Collective: release the clock and its communicator; *clk becomes NULL. */
int mtc_free(mtc_clock_t **clk);

/* The message of the last failed call of this thread ("" when none). */
const char *mtc_error(void);
/* "0.1.0" */
const char *mtc_version(void);

#ifdef __cplusplus
}
#endif
#endif
