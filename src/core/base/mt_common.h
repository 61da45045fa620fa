/* mpitempo: common definitions shared by every part of the C core. */
#ifndef MT_COMMON_H
#define MT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define MT_VERSION "0.1.0"
#define MT_ERRLEN 2048

/* Return codes of the core: 0 is success, everything else is an error whose
 * text has been written into the caller's error buffer. */
enum { MT_OK = 0, MT_EINVAL = 2, MT_EMPI = 3, MT_EIO = 4, MT_ENOMEM = 5, MT_EUNSUP = 6 };

/* Write a formatted message into err (of length MT_ERRLEN) and return code. */
int mt_fail(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- parsing helpers (pure, unit tested) ---- */

/* Parse a size with an optional K/M/G suffix (powers of 1024) into bytes.
 * Returns MT_OK or MT_EINVAL with a message naming the bad value. */
int mt_parse_size(const char *s, int64_t *out, char *err);

/* Parse a size list "8,64,1K" with ranges "8-1M" (powers of two from the first
 * to the last value). Allocates *out (free with free()). Sizes must be >= 1. */
int mt_parse_size_list(const char *s, int64_t **out, int *n, char *err);
/* The same with 0 allowed when allow_zero is set (ping-pong latency is
 * defined on 0-byte messages); a range from 0 goes 0, 1, 2, 4, ... */
int mt_parse_size_ex(const char *s, int allow_zero, int64_t *out, char *err);
int mt_parse_size_list_ex(const char *s, int allow_zero, int64_t **out, int *n, char *err);
/* The same, with the message naming the option: "invalid --cache-size '0': ..." */
int mt_parse_size_as(const char *s, const char *name, int allow_zero, int64_t *out, char *err);

/* Parse a duration "20us", "1.5ms", "100ns", "1s" into seconds (>= 0). A unit is required (a bare number
 * only for 0); NaN, infinities and durations above MT_DURATION_MAX_S are errors. */
#define MT_DURATION_MAX_S 1e9
int mt_parse_duration(const char *s, double *out, char *err);
/* The same, with the message naming the option: "invalid --time-slice '1x': ..." */
int mt_parse_duration_as(const char *s, const char *name, double *out, char *err);

/* Parse a finite number: "invalid NAME 'S': expected a number" otherwise. */
int mt_parse_double(const char *s, const char *name, double *out, char *err);

/* Parse a percentage "1%", "0.5%" in [lo_pct, hi_pct] into a fraction (0.01), or "off" into 0. */
int mt_parse_percent(const char *s, const char *name, double lo_pct, double hi_pct, double *out, char *err);

/* Parse a non-negative integer with bounds; name is used in the message. */
int mt_parse_int(const char *s, const char *name, long long lo, long long hi,
                 long long *out, char *err);

/* Split a comma-separated list in place-independent way: returns a malloc'ed
 * array of malloc'ed strings. */
int mt_split_list(const char *s, char ***items, int *n, char *err);
void mt_free_list(char **items, int n);

/* qsort comparison of doubles, ascending */
int mt_cmp_double(const void *a, const void *b);

/* Median of v[0..n-1], sorting v in place (the mean of the two middle values for an even n; NaN
 * for n <= 0). src/core/clock has its own (mt_median in clock/sync_learn.c, returning 0 for n <= 0). */
double mt_median_inplace(double *v, int n);

/* Median of the values v[i] with valid[i] != 0 (NaN when there is none). */
double mt_median_valid(const double *v, const int *valid, int n);

/* Append name to a comma-separated list of names in buf (registries' "allowed: ..." texts). */
void mt_names_add(char *buf, size_t len, const char *name);

/* ---- deterministic PRNG (splitmix64), used for the shuffle ---- */
typedef struct { uint64_t s; } mt_rng_t;
void mt_rng_seed(mt_rng_t *r, uint64_t seed);
uint64_t mt_rng_next(mt_rng_t *r);
/* uniform integer in [0, n) without modulo bias */
uint64_t mt_rng_below(mt_rng_t *r, uint64_t n);
/* Fisher-Yates shuffle of an int array */
void mt_shuffle_int(mt_rng_t *r, int *a, int n);

/* Under SimGrid/SMPI (MT_SMPI) sleep s seconds of simulated time (nanosleep is simulated there and
 * costs one simulation step), so that a busy wait on the clock skips its wait at once instead of
 * advancing simulated time by smpi/wtime per read (millions of host-microsecond reads); a no-op
 * elsewhere. Busy waits call it with a little less than what is left, then spin the rest. */
void mt_sim_skip(double s);

/* Under SimGrid/SMPI (MT_SMPI) charge `flops` floating-point operations to the calling rank's
 * simulated host (smpi_execute_flops: flops / the host's core speed of simulated time), so that
 * computation the simulation does not time (smpi/simulate-computation:no) still costs what the
 * platform says and a slower host is slower; a no-op elsewhere. */
void mt_sim_flops(double flops);

#endif
