/* mpitempo: cache policy between measurements (Hunold and Carpen-Amarie 2016, section 4.7; mpptest).
 *  warm  - the buffers are reused: caches hold them (default)
 *  cold  - after each measurement, outside the timed region, write a scratch buffer of the
 *          last-level private cache size so the operation's buffers are evicted
 *  cycle - mpptest style: the buffers move through a pool twice the cache size; each
 *          measurement starts at the next address, wrapping to the start of the pool */
#ifndef MT_CACHE_H
#define MT_CACHE_H

#include <stddef.h>

#include "op/op.h"

enum { MT_CACHE_WARM = 0, MT_CACHE_COLD = 1, MT_CACHE_CYCLE = 2 };

typedef struct mt_cache {
    int policy;
    size_t size;          /* bytes of the cache to defeat */
    const char *size_src; /* "given", "sysfs Lx", or "default" */
    unsigned char *scratch;
    size_t pos;           /* cycle: offset of the current block in the pool */
    unsigned sum;         /* keeps the scratch writes observable */
} mt_cache_t;

/* policy name -> code; -1 if unknown */
int mt_cache_policy(const char *name);
const char *mt_cache_policy_name(int policy);
/* "warm, cold, cycle" */
void mt_cache_policy_names(char *buf, size_t len);
/* Size of the largest cache private to one CPU of cpu0 from sysfs (0 if unknown);
 * level is set to its level. Exposed for tests: root may point to a fake sysfs tree. */
size_t mt_cache_detect(const char *sysfs_cpu0_cache, int *level);
int mt_cache_init(mt_cache_t *c, int policy, size_t size, char *err);
void mt_cache_free(mt_cache_t *c);
/* cycle: replace the op's buffers by pools (after mt_op_prepare) */
int mt_cache_setup_buffers(mt_cache_t *c, mt_op_args_t *a, char *err);
/* between two measurements, outside the timed region */
void mt_cache_next(mt_cache_t *c, mt_op_args_t *a);

#endif
