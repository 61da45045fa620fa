/* mpitempo: what an executable tells the run driver about itself. An app is
 * a table of facts (name, kind, result files, registry-valued parameters) and
 * a few hooks; src/apps/<name>.c fills one and calls mt_run_main. */
#ifndef MT_APP_H
#define MT_APP_H

#include <stddef.h>

#include "base/json.h"

struct mt_run;

/* How usage shows a parameter: a registry-valued one lists the names the
 * registry accepts; a metavar can say more than the type's ("SPEC", "R:T"). */
typedef struct mt_choices {
    int id;                                    /* MTP_<name>; -1 ends the list */
    void (*names)(char *buf, size_t len);      /* "a, b, c", or NULL */
    const char *label;                         /* before the names (NULL: "one of") */
    const char *metavar;                       /* NULL: from the type */
} mt_choices_t;

/* An option of one app only, beside the parameters and the shared options. */
typedef struct mt_cli_flag {
    const char *name;     /* flag without "--"; NULL ends the list */
    const char *metavar;  /* NULL: a flag without value */
    const char *help;     /* NULL: hidden from usage */
    int alias;            /* >= 0: another spelling of this shared option (MT_OPT_*), else -1 */
} mt_cli_flag_t;

/* A result file in --outdir. */
typedef struct mt_result_file {
    const char *name;     /* NULL ends the list */
    int optional;         /* opened by the app when needed (mt_run_open_file), else by the driver */
} mt_result_file_t;

typedef struct mt_app {
    const char *prog;              /* "mpitempo-bench": messages and meta.json "tool" */
    unsigned id;                   /* MT_APP_* (params.def) */
    const char *kind;              /* meta.json "kind" */
    const char *about;             /* paragraph of the usage text */
    const char *output;            /* what --outdir receives, for the usage text */
    const mt_choices_t *choices;   /* its registry-valued parameters (besides timer) */
    const mt_cli_flag_t *flags;    /* its own flags, or NULL */
    const mt_result_file_t *files; /* result files in --outdir: data first, "meta.json" last */
    int timer_study;               /* with a meta.json, the driver studies the timer on every rank (its "timer") */
    int meta_on_stdout;            /* without --outdir, the meta.json document goes to stdout */
    /* its registries for --list (keys written into the open object) */
    void (*list)(mt_json_t *j);
    /* Validate every option (pure, no MPI): np is the job size, or 0 when
     * unknown (--check-args without --expect-np). May keep parsed state in
     * r->state and choose r->writer. Called once per process. */
    int (*check)(struct mt_run *r, int np, char *err);
    /* --check-args: its keys of the JSON object (normalised options) */
    void (*check_json)(struct mt_run *r, mt_json_t *j);
    /* after MPI_Init, before validation: -1 to go on, or an exit code (e.g. --timer-study) */
    int (*early)(struct mt_run *r);
    /* measure; write data files (mt_run_file) and meta.json keys (mt_run_meta_begin). Collective. */
    int (*run)(struct mt_run *r, char *err);
    /* free r->state */
    void (*done)(struct mt_run *r);
} mt_app_t;

#endif
