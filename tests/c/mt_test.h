/* mpitempo: a tiny test harness for the C unit tests. */
#ifndef MT_TEST_H
#define MT_TEST_H
#include <math.h>
#include <stdio.h>
#include <string.h>

static int mt_test_failures = 0;
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            mt_test_failures++;                                                       \
        }                                                                             \
    } while (0)
#define CHECK_STR(a, b)                                                                              \
    do {                                                                                             \
        if (strcmp((a), (b)) != 0) {                                                                 \
            fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__, __LINE__, (a), (b));                \
            mt_test_failures++;                                                                      \
        }                                                                                            \
    } while (0)
#define CHECK_CLOSE(a, b, tol)                                                                       \
    do {                                                                                             \
        if (!(fabs((double)(a) - (double)(b)) <= (tol))) {                                          \
            fprintf(stderr, "%s:%d: %g != %g (tol %g)\n", __FILE__, __LINE__, (double)(a), (double)(b), \
                    (double)(tol));                                                                  \
            mt_test_failures++;                                                                      \
        }                                                                                            \
    } while (0)
#define TEST_DONE()                                                  \
    do {                                                             \
        if (mt_test_failures) fprintf(stderr, "%d failures\n", mt_test_failures); \
        else printf("ok\n");                                         \
        return mt_test_failures ? 1 : 0;                             \
    } while (0)
#endif
