/* mpitempo: experimental factors of the machine, the process and the MPI
 * library (Hunold and Carpen-Amarie 2016, section 4), written into meta.json. */
#ifndef MT_FACTORS_H
#define MT_FACTORS_H

#include <stddef.h>

#include "scheme/ctx.h"
#include "base/json.h"

#define MT_RANKREC_LEN 2048

/* This rank's record as a JSON object text: rank, host, pid, allowed CPUs
 * (affinity as reported by the OS), CPU at the time of the call, bound flag,
 * timer frequency. */
void mt_factors_rank_record(const mt_ctx_t *ctx, char *buf, size_t len);
/* Format a CPU set as "0-3,8" (pure; exposed for tests). cpus is a 0/1 array. */
void mt_format_cpulist(const unsigned char *cpus, int n, char *out, size_t len);
/* Machine factors of the calling process's host: cpu model, governor, kernel, ... */
void mt_factors_write_machine(mt_json_t *j);
/* Environment variables that influence MPI libraries and launchers. */
void mt_factors_write_env(mt_json_t *j);
/* The MPI library: "library" (first line of MPI_Get_library_version, blanks
 * collapsed), "library_version" (all of it), standard version, MPI_Wtick. */
void mt_factors_write_mpi(mt_json_t *j);
/* The keys every meta.json starts with (written into an open object):
 * format_version, tool, kind, config, run_index, start_time, end_time (when not
 * NULL), argv, launch (the launcher's record or null), mpi, nprocs, ranks
 * (recs: nprocs records of MT_RANKREC_LEN bytes from mt_factors_rank_record). */
void mt_factors_write_run_header(mt_json_t *j, const char *tool, const char *kind, const char *config,
                                 long long run_index,
                                 const char *start_iso, const char *end_iso, int argc, char **argv,
                                 const char *launch, int nprocs, const char *recs);
/* Build-time factors: compiler, flags, MPI headers. */
void mt_factors_write_build(mt_json_t *j);
/* ISO 8601 UTC time of now */
void mt_iso_now(char *out, size_t len);

#endif
