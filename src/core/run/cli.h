/* mpitempo: the command line of every executable: the measurement
 * parameters of params.def for that app plus the run options shared by all
 * (declared once, here), parsed by one generated getopt_long table; the usage
 * text is generated from the same tables and the registries. Pure (no MPI). */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <stdio.h>

#include "run/app.h"
#include "base/params.h"

/* the shared run options */
enum { MT_OPT_OUTDIR, MT_OPT_CONFIG, MT_OPT_RUN_INDEX, MT_OPT_LAUNCH_JSON, MT_OPT_EXPECT_NP, MT_OPT_QUIET,
       MT_OPT_LIST, MT_OPT_CHECK_ARGS, MT_OPT_VERSION, MT_OPT_HELP, MT_OPT_TIMER_CACHE, MT_NOPTS };

typedef struct mt_cli {
    mt_params_t p;            /* the measurement parameters */
    const char *outdir;       /* NULL: no files */
    const char *config;       /* "default" */
    const char *launch_json;  /* NULL */
    const char *timer_cache;  /* NULL: study the timer in every mpirun */
    long long run_index;      /* 0 */
    long long expect_np;      /* 0: no check */
    int quiet, list, check_args, version, help;
    int flag[8];              /* app flags given (index in app->flags) */
    const char *flag_val[8];
} mt_cli_t;

/* Parse argv. Returns MT_OK, or MT_EINVAL with a one-line message in err.
 * -h/--help and --version stop the parse (cli->help / cli->version). */
int mt_cli_parse(const mt_app_t *app, int argc, char **argv, mt_cli_t *cli, char *err);
/* The usage text: every parameter of the app, the shared options, the app's flags. */
void mt_cli_usage(FILE *f, const mt_app_t *app);
/* --check-args: the "run" object of the shared options */
void mt_cli_write_run(mt_json_t *j, const mt_cli_t *cli);

#endif
