/* mpitempo: the PMPI wrappers that only count (trace_count.def): the MPI calls the tracer sees
 * but does not record; each forwards to the next tool (TR_FWD, trace.h). Counted while the tracer records (not during its own clock sync). */
#include "trace/trace.h"

const char *const tr_count_names[TRC_N] = {
#define TR_COUNT(ret, name, params, args) "MPI_" #name,
#include "trace_count.def"
#if MPI_VERSION >= 4
#include "trace_count4.def"
#endif
#include "trace_count_auto.def"
#undef TR_COUNT
    "MPI_Pcontrol",
};

int64_t tr_cnt[TRC_N];

#define TR_COUNT(ret, name, params, args)                                                                  \
    ret MPI_##name params                                                                                  \
    {                                                                                                      \
        static __typeof__(&PMPI_##name) tr_nx_##name;                                                      \
        if (tr.on) tr_cnt[TRC_##name]++;                                                                   \
        return TR_FWD(name, args);                                                                          \
    }
#include "trace_count.def"
#if MPI_VERSION >= 4 /* MPI-4 only (trace_count4.def) */
#include "trace_count4.def"
#endif
#undef TR_COUNT

/* every other function of this MPI's mpi.h (generated at build time by gen_count.py): weak, so
 * that a hand-written wrapper of the same name (recorded or counted) wins */
#define TR_COUNT(ret, name, params, args)                                                                  \
    __attribute__((weak)) ret MPI_##name params                                                            \
    {                                                                                                      \
        static __typeof__(&PMPI_##name) tr_nx_##name;                                                      \
        if (tr.on) tr_cnt[TRC_##name]++;                                                                   \
        return TR_FWD(name, args);                                                                          \
    }
#include "trace_count_auto.def"
#undef TR_COUNT

/* variadic: the extra arguments have no meaning to the library (MPI standard: profiling
 * interface), the level is passed on */
int MPI_Pcontrol(const int level, ...)
{
    static __typeof__(&PMPI_Pcontrol) tr_nx_Pcontrol;
    if (tr.on) tr_cnt[TRC_Pcontrol]++;
    return TR_FWD(Pcontrol, (level));
}
