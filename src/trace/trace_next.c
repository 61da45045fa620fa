/* mpitempo: the next tool after the tracer (trace.h, TR_FWD). */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "trace/trace.h"

int tr_self;

/* the MPI_ symbol after the tracer in the search order: a second PMPI tool preloaded after it, or
 * the MPI library's own MPI_ entry point; the library's PMPI_ one (pname) when none is found */
void (*tr_next_sym(const char *name, const char *pname))(void)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) p = dlsym(RTLD_DEFAULT, pname);
    return (void (*)(void))p;
}
