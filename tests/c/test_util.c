#include <math.h>
#include <stdlib.h>

#include "base/mt_common.h"
#include "mt_test.h"

int main(void)
{
    char err[MT_ERRLEN];
    int64_t v;
    CHECK(mt_parse_size("8", &v, err) == MT_OK && v == 8);
    CHECK(mt_parse_size("1K", &v, err) == MT_OK && v == 1024);
    CHECK(mt_parse_size("4k", &v, err) == MT_OK && v == 4096);
    CHECK(mt_parse_size("2M", &v, err) == MT_OK && v == 2 * 1024 * 1024);
    CHECK(mt_parse_size("1KiB", &v, err) == MT_OK && v == 1024);
    CHECK(mt_parse_size("1G", &v, err) == MT_OK && v == 1024LL * 1024 * 1024);
    CHECK(mt_parse_size("0", &v, err) == MT_EINVAL);
    CHECK(strstr(err, "'0'") != NULL);
    CHECK(mt_parse_size("-8", &v, err) == MT_EINVAL);
    CHECK(mt_parse_size("abc", &v, err) == MT_EINVAL);
    CHECK(strstr(err, "'abc'") != NULL);
    CHECK(mt_parse_size("8X", &v, err) == MT_EINVAL);
    CHECK(mt_parse_size("", &v, err) == MT_EINVAL);
    CHECK(mt_parse_size("99999999999999999999", &v, err) == MT_EINVAL);

    int64_t *s;
    int n;
    CHECK(mt_parse_size_list("8-64", &s, &n, err) == MT_OK);
    CHECK(n == 4 && s[0] == 8 && s[1] == 16 && s[2] == 32 && s[3] == 64);
    free(s);
    CHECK(mt_parse_size_list("8,1K, 3", &s, &n, err) == MT_OK);
    CHECK(n == 3 && s[0] == 8 && s[1] == 1024 && s[2] == 3);
    free(s);
    CHECK(mt_parse_size_list("1-1M", &s, &n, err) == MT_OK && n == 21 && s[20] == 1 << 20);
    free(s);
    CHECK(mt_parse_size_list("3-20", &s, &n, err) == MT_OK && n == 3 && s[2] == 12); /* 3,6,12 */
    free(s);
    CHECK(mt_parse_size_list("64-8", &s, &n, err) == MT_EINVAL);
    CHECK(mt_parse_size_list("8,,16", &s, &n, err) == MT_EINVAL);
    /* the cause is formatted into the same buffer as its prefix: mt_fail copies, never overlaps */
    CHECK_STR(err, "invalid size list '8,,16': an empty item (two commas in a row, or a comma at an end)");
    CHECK(mt_parse_size_list("8,-1", &s, &n, err) == MT_EINVAL);
    CHECK(mt_parse_size_list("", &s, &n, err) == MT_EINVAL);
    CHECK_STR(err, "invalid size list '': empty list: give one or more comma-separated items");

    long long x;
    CHECK(mt_parse_int("10", "--nrep", 1, 100, &x, err) == MT_OK && x == 10);
    CHECK(mt_parse_int("0", "--nrep", 1, 100, &x, err) == MT_EINVAL);
    CHECK(strstr(err, "--nrep") && strstr(err, "'0'"));
    CHECK(mt_parse_int("1x", "--nrep", 1, 100, &x, err) == MT_EINVAL);
    CHECK(mt_parse_int(" 5", "--nrep", 1, 100, &x, err) == MT_EINVAL); /* as '5 ' is */

    char **items;
    CHECK(mt_split_list("a, b,c", &items, &n, err) == MT_OK && n == 3);
    CHECK_STR(items[1], "b");
    mt_free_list(items, n);

    /* shuffle: a permutation, deterministic for a seed, different for another */
    int a[100], b[100], c[100];
    for (int i = 0; i < 100; i++) a[i] = b[i] = c[i] = i;
    mt_rng_t r;
    mt_rng_seed(&r, 42);
    mt_shuffle_int(&r, a, 100);
    mt_rng_seed(&r, 42);
    mt_shuffle_int(&r, b, 100);
    mt_rng_seed(&r, 43);
    mt_shuffle_int(&r, c, 100);
    int seen[100] = {0}, same = 1, diff = 0;
    for (int i = 0; i < 100; i++) {
        seen[a[i]]++;
        same &= a[i] == b[i];
        diff += a[i] != c[i];
    }
    for (int i = 0; i < 100; i++) CHECK(seen[i] == 1);
    CHECK(same);
    CHECK(diff > 50);
    /* uniformity of rng_below: chi-square-ish bound on 6 buckets */
    mt_rng_seed(&r, 7);
    int cnt[6] = {0};
    for (int i = 0; i < 60000; i++) cnt[mt_rng_below(&r, 6)]++;
    for (int i = 0; i < 6; i++) CHECK(cnt[i] > 9500 && cnt[i] < 10500);
    {
        double v[] = {5, 1, 100, 3, 2};
        int ok[] = {1, 1, 0, 1, 1};
        CHECK_CLOSE(mt_median_valid(v, ok, 5), 2.5, 0);
        ok[0] = 0;
        CHECK_CLOSE(mt_median_valid(v, ok, 5), 2, 0);
        int none[] = {0, 0, 0, 0, 0};
        CHECK(isnan(mt_median_valid(v, none, 5)));
    }
    {   /* mt_median_inplace: odd and even counts, sorted in place, NaN when empty */
        double a[] = {5, 1, 100, 3, 2};
        CHECK_CLOSE(mt_median_inplace(a, 5), 3, 0);
        CHECK(a[0] == 1 && a[4] == 100);
        double b[] = {4, -1, 2, 10};
        CHECK_CLOSE(mt_median_inplace(b, 4), 3, 0);
        double c[] = {7};
        CHECK_CLOSE(mt_median_inplace(c, 1), 7, 0);
        CHECK(isnan(mt_median_inplace(c, 0)));
    }
    TEST_DONE();
}
