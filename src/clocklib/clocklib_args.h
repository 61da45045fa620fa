/* libmpitempo-clock: what the ranks of a collective call must give alike, and the check of times
 * given to the local calls. Pure (no MPI), so that tests/c/test_clocklib_args.c can hold it; the
 * names are not mtc_*, so exports.map keeps them private. */
#ifndef MT_CLOCKLIB_ARGS_H
#define MT_CLOCKLIB_ARGS_H

#include <stddef.h>

/* The arguments of mtc_create/mtc_create_ex as one rank gave them, in a fixed-size form that is
 * broadcast as bytes (zero it before filling). */
typedef struct mt_clib_args {
    char spec[512];     /* the canonical sync spec (every parameter spelled out): what is compared */
    char given[128];    /* the sync_spec as given, cut to fit (for the message only) */
    char timer[64];     /* the timer used ("monotonic" for NULL) */
    int spec_null;      /* sync_spec was NULL or "" (the default spec, with its fallback) */
    int timer_null;     /* opt or opt->timer was NULL or "" */
    int wait;           /* opt->wait (0 when opt is NULL) */
} mt_clib_args_t;

enum { MT_CLIB_DIFF_SPEC = 1, MT_CLIB_DIFF_TIMER = 2, MT_CLIB_DIFF_WAIT = 4 };

/* Fill a from one rank's arguments (canon: the canonical spec; given: sync_spec, may be NULL). */
void mt_clib_args_set(mt_clib_args_t *a, const char *canon, const char *given, const char *timer, int wait);
/* Which arguments differ (MT_CLIB_DIFF_* bits; 0: the same clock is asked for). Specs are compared in
 * their canonical form, so "hca3" and "hca3" with its default parameters written out are alike; the
 * default spec (NULL) differs from the same spec written out, since only the default falls back. */
int mt_clib_args_diff(const mt_clib_args_t *a, const mt_clib_args_t *b);
/* The one-line message (without the "mpitempo-clock: " prefix) when rank r's arguments b differ from
 * rank 0's a, naming the call fn and the first argument that differs; the same text on every rank. */
void mt_clib_args_mismatch(const char *fn, const mt_clib_args_t *a, const mt_clib_args_t *b, int r, char *msg,
                           size_t len);
/* 0 when t is finite; else -1 and a message naming fn, the argument and the value ("NaN", "inf" or
 * "-inf", whatever the sign bit of a NaN: the same text on every rank). */
int mt_clib_time_check(const char *fn, const char *arg, double t, char *msg, size_t len);

#endif
