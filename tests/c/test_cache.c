#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "op/cache.h"
#include "base/mt_common.h"
#include "mt_test.h"

static void put(const char *dir, int idx, const char *file, const char *val)
{
    char p[512];
    snprintf(p, sizeof p, "%s/index%d", dir, idx);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/index%d/%s", dir, idx, file);
    FILE *f = fopen(p, "w");
    fprintf(f, "%s\n", val);
    fclose(f);
}

int main(void)
{
    char err[MT_ERRLEN];
    CHECK(mt_cache_policy("warm") == MT_CACHE_WARM && mt_cache_policy("cold") == MT_CACHE_COLD);
    CHECK(mt_cache_policy("cycle") == MT_CACHE_CYCLE && mt_cache_policy("hot") == -1);
    /* a fake sysfs: private L1d 32K, L1i 32K, private L2 512K, shared L3 32M -> L2 */
    char dir[] = "/tmp/mt-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *lv[] = {"1", "1", "2", "3"}, *ty[] = {"Data", "Instruction", "Unified", "Unified"},
               *sz[] = {"32K", "32K", "512K", "32768K"}, *sh[] = {"0", "0", "0", "0-15"};
    for (int i = 0; i < 4; i++) {
        put(dir, i, "level", lv[i]);
        put(dir, i, "type", ty[i]);
        put(dir, i, "size", sz[i]);
        put(dir, i, "shared_cpu_list", sh[i]);
    }
    int level = 0;
    CHECK(mt_cache_detect(dir, &level) == 512 * 1024 && level == 2);
    CHECK(mt_cache_detect("/nonexistent", &level) == 0 && level == 0);
    /* SMT: L1d and L2 shared by the two hyperthreads of core 0 ("0,8") are private to the
     * core; L3 shared by all is not -> L2, not the 1 MiB fallback */
    char base[] = "/tmp/mt-smt-XXXXXX", cdir[600], tdir[600];
    CHECK(mkdtemp(base) != NULL);
    snprintf(cdir, sizeof cdir, "%s/cache", base);
    snprintf(tdir, sizeof tdir, "%s/topology", base);
    mkdir(cdir, 0755);
    mkdir(tdir, 0755);
    {
        char p[700];
        snprintf(p, sizeof p, "%s/thread_siblings_list", tdir);
        FILE *f = fopen(p, "w");
        fprintf(f, "0,8\n");
        fclose(f);
    }
    const char *sh2[] = {"0,8", "0,8", "0,8", "0-15"};
    for (int i = 0; i < 4; i++) {
        put(cdir, i, "level", lv[i]);
        put(cdir, i, "type", ty[i]);
        put(cdir, i, "size", sz[i]);
        put(cdir, i, "shared_cpu_list", sh2[i]);
    }
    CHECK(mt_cache_detect(cdir, &level) == 512 * 1024 && level == 2);

    /* cycling moves the buffers through the pool and wraps */
    mt_cache_t c;
    CHECK(mt_cache_init(&c, MT_CACHE_CYCLE, 4096, err) == MT_OK);
    mt_op_args_t a = {0};
    a.bufbytes = 1000;
    a.sbuf = malloc(1000);
    a.rbuf = malloc(1000);
    CHECK(mt_cache_setup_buffers(&c, &a, err) == MT_OK);
    CHECK(a.pool == 8192 && a.sbuf == a.sbase);
    void *first = a.sbuf;
    int wrapped = 0;
    for (int i = 0; i < 20; i++) {
        mt_cache_next(&c, &a);
        size_t off = (size_t)((unsigned char *)a.sbuf - (unsigned char *)a.sbase);
        CHECK(off + a.bufbytes <= a.pool);
        CHECK(off % 64 == 0);
        if (a.sbuf == first) wrapped = 1;
    }
    CHECK(wrapped);
    free(a.sbase);
    free(a.rbase);
    CHECK(mt_cache_init(&c, MT_CACHE_COLD, 65536, err) == MT_OK && c.scratch != NULL);
    mt_cache_next(&c, &a);
    mt_cache_free(&c);

    double d;
    CHECK(mt_parse_duration("20us", &d, err) == MT_OK && fabs(d - 20e-6) < 1e-15);
    CHECK(mt_parse_duration("1.5ms", &d, err) == MT_OK && fabs(d - 1.5e-3) < 1e-15);
    CHECK(mt_parse_duration("2e-6s", &d, err) == MT_OK && fabs(d - 2e-6) < 1e-18);
    CHECK(mt_parse_duration("0", &d, err) == MT_OK && d == 0);
    /* a bare number other than 0 needs a unit; infinities, NaN and overflow are errors */
    CHECK(mt_parse_duration("20", &d, err) == MT_EINVAL);
    CHECK_STR(err, "invalid duration '20': give a unit (s, ms, us or ns), e.g. 20s or 20us");
    CHECK(mt_parse_duration("infs", &d, err) == MT_EINVAL);
    CHECK(mt_parse_duration("nan", &d, err) == MT_EINVAL);
    CHECK(mt_parse_duration("1e400s", &d, err) == MT_EINVAL);
    CHECK(mt_parse_duration("1e10s", &d, err) == MT_EINVAL);
    CHECK_STR(err, "invalid duration '1e10s': longer than the largest duration, 1e+09s");
    CHECK(mt_parse_duration("-1us", &d, err) == MT_EINVAL);
    CHECK(mt_parse_duration("5 parsecs", &d, err) == MT_EINVAL);
    TEST_DONE();
}
