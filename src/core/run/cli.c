/* mpitempo: the command line shared by the executables (see cli.h). */
#define _GNU_SOURCE
#include "run/cli.h"
#include "base/mt_common.h"
#include "timer/timer.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The run options every executable has, declared once. */
static const struct {
    const char *name, *metavar, *help;
} shared[MT_NOPTS] = {
    [MT_OPT_OUTDIR] = {"outdir", "DIR", NULL /* from the app: what it writes there */},
    [MT_OPT_CONFIG] = {"config", "NAME", "configuration name recorded in meta.json (default 'default')"},
    [MT_OPT_RUN_INDEX] = {"run-index", "N", "index of this mpirun within its campaign (default 0)"},
    [MT_OPT_LAUNCH_JSON] = {"launch-json", "FILE", "JSON object (launcher, command line) embedded in meta.json"},
    [MT_OPT_EXPECT_NP] = {"expect-np", "N", "fail if the job does not have N ranks (a binary started by the mpiexec "
                                            "of another MPI library sees a job of 1)"},
    [MT_OPT_QUIET] = {"quiet", NULL, "no progress lines on stderr"},
    [MT_OPT_LIST] = {"list", NULL, "print the registries and the parameter table as JSON (no MPI)"},
    [MT_OPT_CHECK_ARGS] = {"check-args", NULL, "validate the options without MPI and print them as JSON; checks "
                                               "that depend on the job size use --expect-np"},
    [MT_OPT_VERSION] = {"version", NULL, "print the version"},
    [MT_OPT_HELP] = {"help", NULL, "this help"},
    [MT_OPT_TIMER_CACHE] = {"timer-cache", "FILE", "reuse the timer study recorded in FILE when its key matches this "
                                                   "job (every rank's host, boot, CPU binding, timer and reads, the "
                                                   "clock source, the executable); else study the timer and write "
                                                   "FILE. mpitempo run passes CAMPAIGN/timer-study.txt"},
};

enum { K_PARAM, K_SHARED, K_FLAG };
typedef struct {
    int kind, idx;
    char flag[64];   /* "--name" for messages */
} entry_t;

#define MAXOPT (MTP_COUNT + MT_NOPTS + 8 + 1)

static int shared_value(mt_cli_t *cli, int opt, const char *flag, const char *val, char *err)
{
    switch (opt) {
    case MT_OPT_OUTDIR: cli->outdir = val; break;
    case MT_OPT_CONFIG: cli->config = val; break;
    case MT_OPT_LAUNCH_JSON: cli->launch_json = val; break;
    case MT_OPT_TIMER_CACHE: cli->timer_cache = val; break;
    case MT_OPT_RUN_INDEX: return mt_parse_int(val, flag, 0, INT_MAX, &cli->run_index, err);
    case MT_OPT_EXPECT_NP: return mt_parse_int(val, flag, 1, INT_MAX, &cli->expect_np, err);
    case MT_OPT_QUIET: cli->quiet = 1; break;
    case MT_OPT_LIST: cli->list = 1; break;
    case MT_OPT_CHECK_ARGS: cli->check_args = 1; break;
    case MT_OPT_VERSION: cli->version = 1; break;
    case MT_OPT_HELP: cli->help = 1; break;
    }
    return MT_OK;
}

int mt_cli_parse(const mt_app_t *app, int argc, char **argv, mt_cli_t *cli, char *err)
{
    memset(cli, 0, sizeof *cli);
    mt_params_init(&cli->p, app->id);
    cli->config = "default";
    struct option lo[MAXOPT];
    entry_t ent[MAXOPT];
    int n = 0;
    for (int id = 0; id < MTP_COUNT; id++) {
        const mt_param_def_t *d = cli->p.v[id].def;
        if (!d) continue;
        ent[n] = (entry_t){K_PARAM, id, ""};
        mt_param_flag(d, ent[n].flag, sizeof ent[n].flag);
        lo[n] = (struct option){ent[n].flag + 2, d->type == MT_T_BOOL ? no_argument : required_argument, 0, 256 + n};
        n++;
    }
    for (int o = 0; o < MT_NOPTS; o++) {
        ent[n] = (entry_t){K_SHARED, o, ""};
        snprintf(ent[n].flag, sizeof ent[n].flag, "--%s", shared[o].name);
        lo[n] = (struct option){ent[n].flag + 2, shared[o].metavar ? required_argument : no_argument, 0, 256 + n};
        n++;
    }
    for (int f = 0; app->flags && app->flags[f].name && f < 8; f++) {
        const mt_cli_flag_t *fl = &app->flags[f];
        int has_arg = fl->alias >= 0 ? shared[fl->alias].metavar != NULL : fl->metavar != NULL;
        ent[n] = (entry_t){K_FLAG, f, ""};
        snprintf(ent[n].flag, sizeof ent[n].flag, "--%s", fl->name);
        lo[n] = (struct option){ent[n].flag + 2, has_arg ? required_argument : no_argument, 0, 256 + n};
        n++;
    }
    lo[n] = (struct option){0, 0, 0, 0};

    int c, rc = MT_OK;
    opterr = 0;
    optind = 0; /* glibc: a full re-initialisation, so that tests can parse many times */
    while (rc == MT_OK && (c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') {
            cli->help = 1;
            return MT_OK;
        }
        if (c < 256 || c >= 256 + n) {
            const char *arg = argv[optind - 1];
            if (optopt >= 256 && optopt < 256 + n) {
                if (lo[optopt - 256].has_arg == no_argument)
                    return mt_fail(err, MT_EINVAL, "option '%s' takes no value (see --help)", arg);
                return mt_fail(err, MT_EINVAL, "option '%s' needs a value (see --help)", arg);
            }
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see --help)", arg);
        }
        const entry_t *e = &ent[c - 256];
        if (e->kind == K_PARAM) {
            rc = mt_params_set(&cli->p, e->idx, optarg, err);
        } else if (e->kind == K_SHARED) {
            rc = shared_value(cli, e->idx, e->flag, optarg, err);
            if (cli->help || cli->version) return rc;
        } else {
            const mt_cli_flag_t *fl = &app->flags[e->idx];
            if (fl->alias >= 0) {
                rc = shared_value(cli, fl->alias, e->flag, optarg, err);
            } else {
                cli->flag[e->idx] = 1;
                cli->flag_val[e->idx] = optarg;
            }
        }
    }
    if (rc != MT_OK) return rc;
    if (optind < argc) return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (see --help)", argv[optind]);
    return MT_OK;
}

/* ---- usage ---- */

#define COL 24
#define WIDTH 100

/* words of text from column col (the cursor is there already), wrapped at WIDTH, continuation
 * lines indented to indent */
static void wrap(FILE *f, const char *text, int col, int indent)
{
    const int start = col;
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        if (!w) break;
        if (col > start && col + 1 + (int)w > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > start) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
    }
    fputc('\n', f);
}

/* "  LEFT  text..." with text wrapped at WIDTH, continuation lines indented to COL */
static void item(FILE *f, const char *left, const char *text)
{
    int col = fprintf(f, "  %s", left);
    if (col >= COL - 1) {
        fputc('\n', f);
        col = 0;
    }
    fprintf(f, "%*s", COL - col, "");
    wrap(f, text, COL, COL);
}

static const char *metavar(const mt_param_def_t *d, int has_choices)
{
    switch (d->type) {
    case MT_T_INT: return "N";
    case MT_T_INT_AUTO: return "N|auto";
    case MT_T_FLOAT: return "X";
    case MT_T_PERCENT: return "P%|off";
    case MT_T_DURATION: return "T";
    case MT_T_SIZE: return "SIZE";
    case MT_T_LIST: return "LIST";
    case MT_T_BOOL: return "";
    case MT_T_STR: return has_choices ? "NAME" : "VALUE";
    }
    return "";
}

/* a paragraph wrapped at WIDTH */
static void para(FILE *f, const char *text) { wrap(f, text, 0, 0); }

void mt_cli_usage(FILE *f, const mt_app_t *app)
{
    static const mt_choices_t timer = {MTP_timer, mt_timer_names, NULL, NULL};
    fprintf(f, "usage: mpirun -n N %s [options]\n\n", app->prog);
    para(f, app->about);
    fprintf(f, "\nParameters (campaign keys: the names with '_' for '-'):\n");
    for (int i = 0; i < mt_nparam_defs; i++) {
        const mt_param_def_t *d = &mt_param_defs[i];
        if (!(d->apps & app->id)) continue;
        const mt_choices_t *ch = d->id == MTP_timer ? &timer : NULL;
        for (int k = 0; app->choices && app->choices[k].id >= 0; k++)
            if (app->choices[k].id == d->id) ch = &app->choices[k];
        char left[96], text[2048], reg[1024] = "";
        mt_param_flag(d, left, sizeof left);
        size_t l = strlen(left);
        if (d->type != MT_T_BOOL)
            snprintf(left + l, sizeof left - l, " %s", ch && ch->metavar ? ch->metavar : metavar(d, ch && ch->names));
        if (ch && ch->names) ch->names(reg, sizeof reg);
        snprintf(text, sizeof text, "%s%s%s%s%s%s%s", d->help, reg[0] ? "; " : "",
                 reg[0] ? (ch->label ? ch->label : "one of") : "", reg[0] ? ": " : "", reg,
                 d->def[0] && d->type != MT_T_BOOL ? " (default " : "", d->type != MT_T_BOOL ? d->def : "");
        if (d->def[0] && d->type != MT_T_BOOL) strncat(text, ")", sizeof text - strlen(text) - 1);
        item(f, left, text);
    }
    fprintf(f, "\nRun options:\n");
    for (int o = 0; o < MT_NOPTS; o++) {
        char left[96];
        if (o == MT_OPT_HELP) snprintf(left, sizeof left, "-h, --help");
        else snprintf(left, sizeof left, "--%s%s%s", shared[o].name, shared[o].metavar ? " " : "",
                      shared[o].metavar ? shared[o].metavar : "");
        item(f, left, o == MT_OPT_OUTDIR ? app->output : shared[o].help);
    }
    for (int k = 0; app->flags && app->flags[k].name; k++) {
        const mt_cli_flag_t *fl = &app->flags[k];
        if (!fl->help) continue; /* hidden (an old spelling) */
        char left[96];
        snprintf(left, sizeof left, "--%s%s%s", fl->name, fl->metavar ? " " : "", fl->metavar ? fl->metavar : "");
        item(f, left, fl->help);
    }
}

void mt_cli_write_run(mt_json_t *j, const mt_cli_t *cli)
{
    mt_json_obj_begin(j);
    mt_json_key(j, "outdir");
    if (cli->outdir) mt_json_str(j, cli->outdir);
    else mt_json_null(j);
    mt_json_kstr(j, "config", cli->config);
    mt_json_kint(j, "run_index", cli->run_index);
    mt_json_key(j, "launch_json");
    if (cli->launch_json) mt_json_str(j, cli->launch_json);
    else mt_json_null(j);
    mt_json_key(j, "expect_np");
    if (cli->expect_np) mt_json_int(j, cli->expect_np);
    else mt_json_null(j);
    mt_json_kbool(j, "quiet", cli->quiet);
    mt_json_key(j, "timer_cache");
    if (cli->timer_cache) mt_json_str(j, cli->timer_cache);
    else mt_json_null(j);
    mt_json_obj_end(j);
}
