/* mpitempo: user regions in a trace of libmpitempo-trace.so (docs/trace.md).
 *
 *   #include <mpitempo_region.h>
 *   mpitempo_region_begin("solve");
 *   ...
 *   mpitempo_region_end("solve");
 *
 * Each begin/end pair becomes an OTF2 region (paradigm USER) and two rows of events.csv (kind
 * region, the name in column `of`). Regions nest; an end must name the innermost open region.
 * Nothing to link: the functions resolve at run time to the tracer when it is preloaded
 * (`mpitempo trace run`) and do nothing otherwise. Single-threaded use, like the tracer. */
#ifndef MPITEMPO_REGION_H
#define MPITEMPO_REGION_H

#ifdef __cplusplus
extern "C" {
#endif

extern void mt_trace_region_begin(const char *name) __attribute__((weak));
extern void mt_trace_region_end(const char *name) __attribute__((weak));

static inline void mpitempo_region_begin(const char *name)
{
    if (mt_trace_region_begin) mt_trace_region_begin(name);
}

static inline void mpitempo_region_end(const char *name)
{
    if (mt_trace_region_end) mt_trace_region_end(name);
}

#ifdef __cplusplus
}
#endif
#endif
