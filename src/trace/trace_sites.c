/* mpitempo: call sites of the tracer's records. Each wrapper stores its return address (an
 * address in the code that called MPI, tr_ev_t.site); at MPI_Finalize every rank resolves its
 * distinct addresses with dladdr (the object file that holds it, where that object is loaded
 * and, when the object exports one, the nearest dynamic symbol), so that `mpitempo trace DIR`
 * can name each site as function and file:line (addr2line on the object, post mortem). This
 * works for PIE executables and shared libraries alike: the load address of the object on this
 * rank is recorded with each address. Nothing here runs on the application's path. */
#define _GNU_SOURCE
#include "trace/trace.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static int tr_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* the object path without tabs or newlines (the file is tab-separated) */
static void tr_put_clean(char **p, const char *s)
{
    for (; s && *s; s++) *(*p)++ = (*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s;
}

char *tr_sites_text(const tr_out_ev_t *ev, int64_t n, int rank, int64_t *len)
{
    *len = 0;
    if (n <= 0) return NULL;
    uint64_t *a = malloc(sizeof *a * (size_t)n);
    if (!a) return NULL;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (ev[i].site) a[m++] = ev[i].site;
    qsort(a, (size_t)m, sizeof *a, tr_cmp_u64);
    int64_t u = 0;
    for (int64_t i = 0; i < m; i++)
        if (u == 0 || a[u - 1] != a[i]) a[u++] = a[i];
    char *out = NULL;
    size_t cap = 0, used = 0;
    for (int64_t i = 0; i < u; i++) {
        Dl_info di;
        memset(&di, 0, sizeof di);
        int ok = dladdr((void *)(uintptr_t)a[i], &di) != 0;
        const char *obj = ok && di.dli_fname ? di.dli_fname : "";
        const char *sym = ok && di.dli_sname ? di.dli_sname : "";
        size_t need = strlen(obj) + strlen(sym) + 128;
        if (used + need > cap) {
            size_t nc = (cap + need) * 2;
            char *q = realloc(out, nc);
            if (!q) break;
            out = q;
            cap = nc;
        }
        char *p = out + used;
        p += sprintf(p, "%d\t%llx\t", rank, (unsigned long long)a[i]);
        tr_put_clean(&p, obj);
        p += sprintf(p, "\t%llx\t", (unsigned long long)(uintptr_t)(ok ? di.dli_fbase : NULL));
        tr_put_clean(&p, sym);
        p += sprintf(p, "\t%llx\n", (unsigned long long)(uintptr_t)(ok ? di.dli_saddr : NULL));
        used = (size_t)(p - out);
    }
    free(a);
    *len = (int64_t)used;
    return out;
}
