/* The tracer's call-site table (src/trace/trace_sites.c): distinct addresses once each, every
 * one resolved with dladdr to this executable, its load address and the tab-separated line. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "trace/trace.h"
#include "mt_test.h"

__attribute__((noinline)) static int here(int x) { return x * 3 + 1; }

static int lines(const char *s, int64_t n)
{
    int k = 0;
    for (int64_t i = 0; i < n; i++) k += s[i] == '\n';
    return k;
}

int main(void)
{
    int64_t len = -1;
    CHECK(tr_sites_text(NULL, 0, 0, &len) == NULL && len == 0);
    tr_out_ev_t ev[5];
    memset(ev, 0, sizeof ev);
    uint64_t a = (uint64_t)(uintptr_t)&here + 4, b = (uint64_t)(uintptr_t)&main + 8;
    ev[0].site = a;
    ev[1].site = b;
    ev[2].site = a;   /* the same site again: one line */
    ev[3].site = 0;   /* no site: no line */
    ev[4].site = b;
    char *t = tr_sites_text(ev, 5, 3, &len);
    CHECK(t != NULL && len > 0 && lines(t, len) == 2);
    /* each line: rank, address, object, object base, symbol, symbol address */
    Dl_info di;
    CHECK(dladdr((void *)(uintptr_t)a, &di) != 0);
    char want[512];
    snprintf(want, sizeof want, "3\t%llx\t%s\t%llx\t", (unsigned long long)(a < b ? a : b), di.dli_fname,
             (unsigned long long)(uintptr_t)di.dli_fbase);
    CHECK(strncmp(t, want, strlen(want)) == 0);   /* sorted by address */
    int tabs = 0;
    for (int64_t i = 0; i < len && t[i] != '\n'; i++) tabs += t[i] == '\t';
    CHECK(tabs == 5);
    free(t);
    /* an address outside any object: an empty object, base 0 */
    ev[0].site = 16;
    t = tr_sites_text(ev, 1, 0, &len);
    CHECK(t != NULL && strcmp(t, "0\t10\t\t0\t\t0\n") == 0);
    free(t);
    (void)here(1);
    TEST_DONE();
}
