/* mpitempo: the run driver every executable shares. mt_run_main owns the run:
 *   options (cli.c) -> --help / --version / --list / --check-args (no MPI)
 *   -> MPI_Init -> expected job size -> the app's checks, agreed by all ranks
 *   -> --outdir checked, result files opened (temporary names), launch record
 *   -> the timer opened on every rank (+ its study) -> oversubscription
 *   -> per-rank records -> the app measures (app->run)
 *   -> meta.json's trailer, result files committed (meta.json last) -> MPI_Finalize.
 * Any error on any rank ends every rank with the lowest failing rank's
 * one-line message ("PROG: error: ...") and exit code 2. */
#ifndef MT_RUN_H
#define MT_RUN_H

#include <stdio.h>

#include "base/json.h"
#include "run/app.h"
#include "run/cli.h"
#include "run/corelat.h"
#include "run/files.h"
#include "scheme/ctx.h"
#include "timer/timer.h"

#define MT_RUN_MAXFILES 8

typedef struct mt_run {
    const mt_app_t *app;
    int argc;
    char **argv;
    mt_cli_t cli;             /* parameters (cli.p) and shared options */
    mt_ctx_t ctx;             /* comm, rank, size, timer, oversubscribed, lazy */
    int writer;               /* the rank that writes the results (0 unless app->check says otherwise) */
    char start_iso[64];
    char *launch;             /* writer: the --launch-json record, or NULL */
    char *recs;               /* writer: per-rank records (MT_RANKREC_LEN each) */
    /* shared-CPU detection (run/cpushare.h), known on the writer: the smallest CPU share of
     * the start-up check over ranks, how many ranks were below MT_CPUSHARE_MIN, whether the
     * recorded affinities of two ranks on one host intersect, and the verdict */
    mt_corelat_t corelat[2];  /* core-to-core latency probe before and after measuring (run/corelat.h) */
    const char *timer_follows, *timer_follows_how; /* mt_timer_follows: the clock the timer follows */
    double cpu_share_min, run_delay_max;           /* run_delay_max: -1 unknown */
    int cpu_shared_ranks, cpu_lost_ranks, affinity_overlap, shared_cpu;
    mt_timer_quality_t tq;    /* this rank's timer study (app->timer_study) */
    double tq_res_max, tq_ov_max; /* rank 0: the worst over ranks */
    int tq_cached;            /* rank 0: the study came from --timer-cache */
    char tq_from[1024];       /* rank 0: which mpirun made it (config, run index, start time) */
    mt_outfile_t out[MT_RUN_MAXFILES]; /* writer, --outdir: app->files in that order */
    mt_json_t meta;
    int meta_state;           /* 0 not begun, 1 open, 2 header had end_time */
    int exit_code;            /* of a complete run: 0, or the app's (bench: 3 = too few valid) */
    void *state;              /* the app's */
} mt_run_t;

/* The whole executable: returns the exit code for main(). */
int mt_run_main(const mt_app_t *app, int argc, char **argv);

/* The writer's open result file `name` (one of app->files), or NULL (other
 * ranks, no --outdir, or an optional file not opened). */
FILE *mt_run_file(mt_run_t *r, const char *name);
/* MT_OK, or "writing <its temporary path> failed: <reason>" when a write to
 * result file `name` failed (e.g. the disk is full) */
int mt_run_file_error(mt_run_t *r, const char *name, char *err);
/* Open an optional result file (e.g. timestamps.csv) on the writer. */
int mt_run_open_file(mt_run_t *r, const char *name, char *err);
/* On the writer: start meta.json (DIR/meta.json, or stdout for
 * app->meta_on_stdout) with the common header - format_version, tool, kind,
 * config, run_index, start_time, end_time (when with_end_time), argv, launch,
 * mpi, nprocs, ranks - and return the writer for the app's keys. NULL when
 * there is no meta.json (other ranks, no --outdir). The driver closes it with
 * end_time (if not yet written), machine, build and environment. */
mt_json_t *mt_run_meta_begin(mt_run_t *r, int with_end_time);
/* meta.json's "timer" object from the driver's study (app->timer_study) */
void mt_run_write_timer(const mt_run_t *r, mt_json_t *j);
/* progress on stderr: with --outdir and without --quiet */
int mt_run_progress(const mt_run_t *r);

#endif
