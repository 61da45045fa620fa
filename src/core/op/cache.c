/* mpitempo: cache policies (see cache.h). */
#define _GNU_SOURCE
#include "op/cache.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"warm", "cold", "cycle"};

int mt_cache_policy(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

const char *mt_cache_policy_name(int policy) { return policy >= 0 && policy < 3 ? names[policy] : "?"; }

void mt_cache_policy_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < 3; i++) mt_names_add(buf, len, names[i]);
}

static int read_str(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* "512K" -> bytes */
static size_t parse_sysfs_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
    else if (*end == 'G') v <<= 30;
    return (size_t)v;
}

/* a shared_cpu_list naming exactly one CPU ("3") marks a private cache */
static int single_cpu(const char *list) { return list[0] && strchr(list, ',') == NULL && strchr(list, '-') == NULL; }

/* the SMT siblings of the CPU whose cache directory is dir (".../cpuN/cache"):
 * ".../cpuN/topology/thread_siblings_list", or "" */
static void smt_siblings(const char *dir, char *out, size_t len)
{
    char p[512];
    out[0] = '\0';
    snprintf(p, sizeof p, "%s/../topology/thread_siblings_list", dir);
    if (read_str(p, out, len) != 0) out[0] = '\0';
}

size_t mt_cache_detect(const char *dir, int *level)
{
    size_t best = 0;
    int best_level = 0;
    /* a cache shared only by the SMT siblings of one core is private to that core: the
     * ranks of a benchmark are bound to cores, and cold-cache scratch must cover it */
    char sib[256];
    smt_siblings(dir, sib, sizeof sib);
    for (int i = 0; i < 16; i++) {
        char p[512], lvl[32], typ[32], sz[32], shared[256];
        snprintf(p, sizeof p, "%s/index%d/level", dir, i);
        if (read_str(p, lvl, sizeof lvl) != 0) break;
        snprintf(p, sizeof p, "%s/index%d/type", dir, i);
        if (read_str(p, typ, sizeof typ) != 0 || strcmp(typ, "Instruction") == 0) continue;
        snprintf(p, sizeof p, "%s/index%d/size", dir, i);
        if (read_str(p, sz, sizeof sz) != 0) continue;
        snprintf(p, sizeof p, "%s/index%d/shared_cpu_list", dir, i);
        if (read_str(p, shared, sizeof shared) != 0) continue;
        if (!single_cpu(shared) && !(sib[0] && strcmp(shared, sib) == 0)) continue;
        if (atoi(lvl) > best_level) {
            best_level = atoi(lvl);
            best = parse_sysfs_size(sz);
        }
    }
    if (level) *level = best_level;
    return best;
}

int mt_cache_init(mt_cache_t *c, int policy, size_t size, char *err)
{
    memset(c, 0, sizeof *c);
    c->policy = policy;
    if (policy == MT_CACHE_WARM) return MT_OK;
    static char src[32];
    if (size) {
        c->size = size;
        c->size_src = "given";
    } else {
        int level = 0;
        c->size = mt_cache_detect("/sys/devices/system/cpu/cpu0/cache", &level);
        if (c->size) {
            snprintf(src, sizeof src, "sysfs L%d", level);
            c->size_src = src;
        } else {
            c->size = 1 << 20;
            c->size_src = "default (no private cache in sysfs)";
        }
    }
    if (policy == MT_CACHE_COLD) {
        c->scratch = malloc(c->size);
        if (!c->scratch) return mt_fail(err, MT_ENOMEM, "cannot allocate the %zu-byte cache scratch buffer", c->size);
        memset(c->scratch, 1, c->size);
    }
    return MT_OK;
}

void mt_cache_free(mt_cache_t *c)
{
    free(c->scratch);
    c->scratch = NULL;
}

int mt_cache_setup_buffers(mt_cache_t *c, mt_op_args_t *a, char *err)
{
    if (c->policy != MT_CACHE_CYCLE || a->bufbytes == 0) return MT_OK;
    size_t pool = 2 * c->size;
    if (pool < 2 * a->bufbytes) pool = 2 * a->bufbytes;
    unsigned char *s = mt_op_alloc(pool), *r = mt_op_alloc(pool);
    if (!s || !r) {
        free(s);
        free(r);
        return mt_fail(err, MT_ENOMEM, "cannot allocate 2 x %zu bytes of cycling buffers", pool);
    }
    memset(s, 1, pool);
    memset(r, 0, pool);
    free(a->sbuf);
    free(a->rbuf);
    a->sbase = s;
    a->rbase = r;
    a->pool = pool;
    a->sbuf = s;
    a->rbuf = r;
    c->pos = 0;
    return MT_OK;
}

void mt_cache_next(mt_cache_t *c, mt_op_args_t *a)
{
    if (c->policy == MT_CACHE_COLD) {
        /* write every cache line of the scratch buffer: evicts the op's buffers */
        for (size_t i = 0; i < c->size; i += 64) c->scratch[i] += 1;
        c->sum += c->scratch[c->size / 2];
    } else if (c->policy == MT_CACHE_CYCLE && a->pool) {
        /* advance by the block size, rounded up to a cache line */
        size_t step = (a->bufbytes + 63) & ~(size_t)63;
        c->pos += step;
        if (c->pos + a->bufbytes > a->pool) c->pos = 0;
        a->sbuf = (unsigned char *)a->sbase + c->pos;
        a->rbuf = (unsigned char *)a->rbase + c->pos;
    }
}
