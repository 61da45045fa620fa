/* The parameter table (params/params.def), its parser and the generated usage. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "run/cli.h"
#include "base/params.h"

static const mt_app_t bench = {"mpitempo-bench", MT_APP_BENCH, "bench", "About.", "write DIR/x", NULL, NULL,
                               NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
static const mt_cli_flag_t pp_flags[] = {{"mpirun", NULL, NULL, MT_OPT_RUN_INDEX}, {"study", NULL, "a flag", -1},
                                         {NULL, NULL, NULL, -1}};
static const mt_app_t pingpong = {"mpitempo-pingpong", MT_APP_PINGPONG, "pingpong", "About.", "write DIR/y", NULL,
                                  pp_flags, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};

static int parse(const mt_app_t *app, mt_cli_t *cli, char *err, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"prog";
    va_list ap;
    va_start(ap, err);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 31) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return mt_cli_parse(app, argc, argv, cli, err);
}

int main(void)
{
    char err[MT_ERRLEN];
    mt_cli_t cli;

    /* the table: unique (name, app), types and bounds consistent, every default valid */
    for (int i = 0; i < mt_nparam_defs; i++) {
        const mt_param_def_t *d = &mt_param_defs[i];
        CHECK(d->apps != 0 && d->help[0]);
        for (int k = i + 1; k < mt_nparam_defs; k++)
            CHECK(!(strcmp(d->name, mt_param_defs[k].name) == 0 && (d->apps & mt_param_defs[k].apps)));
        if (d->type == MT_T_STR || d->type == MT_T_BOOL || d->type == MT_T_LIST) CHECK(d->min == 0 && d->max == 0);
        else CHECK(d->min <= d->max);
        if (d->type == MT_T_DURATION) CHECK_STR(d->unit, "s");
        if (d->type == MT_T_SIZE) CHECK_STR(d->unit, "B");
    }
    for (unsigned app = 1; app <= 4; app <<= 1) { /* every default parses and is in bounds */
        mt_params_t p;
        mt_params_init(&p, app);
        CHECK(mt_params_check_bounds(&p, err) == MT_OK);
    }

    /* defaults and types */
    CHECK(parse(&bench, &cli, err, NULL) == MT_OK);
    CHECK(mt_p_int(&cli.p, MTP_nrep) == 100 && !mt_p_given(&cli.p, MTP_nrep));
    CHECK_STR(mt_p_str(&cli.p, MTP_msizes), "8,64,512,4K");
    CHECK_CLOSE(mt_p_num(&cli.p, MTP_time_slice), 1.0, 0);
    CHECK(!mt_p_set(&cli.p, MTP_window) && mt_p_str(&cli.p, MTP_barrier_skew) == NULL);
    CHECK(!mt_p_bool(&cli.p, MTP_timestamps));
    CHECK_STR(cli.config, "default");
    CHECK(cli.run_index == 0 && cli.expect_np == 0 && !cli.outdir);
    CHECK(parse(&bench, &cli, err, "--nrep", "7", "--time-slice", "200ms", "--window", "20us", "--cache-size", "1K",
                "--timestamps", "--rt-slack=1.5", "--outdir", "/tmp", "--run-index", "3", "--quiet", NULL) == MT_OK);
    CHECK(mt_p_int(&cli.p, MTP_nrep) == 7 && mt_p_given(&cli.p, MTP_nrep));
    CHECK_CLOSE(mt_p_num(&cli.p, MTP_time_slice), 0.2, 1e-15);
    CHECK_CLOSE(mt_p_num(&cli.p, MTP_window), 20e-6, 1e-18);
    CHECK(mt_p_size(&cli.p, MTP_cache_size) == 1024);
    CHECK(mt_p_bool(&cli.p, MTP_timestamps));
    CHECK_CLOSE(mt_p_num(&cli.p, MTP_rt_slack), 1.5, 0);
    CHECK_STR(cli.outdir, "/tmp");
    CHECK(cli.run_index == 3 && cli.quiet);
    /* the same name with per-app defaults */
    CHECK(parse(&pingpong, &cli, err, NULL) == MT_OK);
    CHECK_STR(mt_p_str(&cli.p, MTP_msizes), "0-4M");
    CHECK(mt_p_int(&cli.p, MTP_timer_reads) == 16777216 && mt_p_int(&cli.p, MTP_warmup) == 10);

    /* errors: the messages users and tests know */
    CHECK(parse(&bench, &cli, err, "--nrep", "0", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --nrep '0': expected an integer in [1, 100000000]");
    CHECK(parse(&bench, &cli, err, "--seed", "-1", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --seed '-1': expected an integer in [0, 9223372036854775807]");
    CHECK(parse(&bench, &cli, err, "--nrep", NULL) == MT_EINVAL);
    CHECK_STR(err, "option '--nrep' needs a value (see --help)");
    CHECK(parse(&bench, &cli, err, "--bogus", NULL) == MT_EINVAL);
    CHECK_STR(err, "unknown option '--bogus' (see --help)");
    CHECK(parse(&bench, &cli, err, "--timestamps=1", NULL) == MT_EINVAL);
    CHECK_STR(err, "option '--timestamps=1' takes no value (see --help)");
    CHECK(parse(&bench, &cli, err, "extra", NULL) == MT_EINVAL);
    CHECK_STR(err, "unexpected argument 'extra' (see --help)");
    CHECK(parse(&bench, &cli, err, "--npp", "3", NULL) == MT_EINVAL); /* a pingpong parameter */
    CHECK(parse(&bench, &cli, err, "--time-slice", "1parsec", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --time-slice '1parsec': the unit must be s, ms, us or ns");
    CHECK(parse(&bench, &cli, err, "--resync-age", "-1", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --resync-age '-1': must not be negative");
    CHECK(parse(&bench, &cli, err, "--cache-size", "0", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --cache-size '0': sizes must be at least 1 byte");
    CHECK(parse(&bench, &cli, err, "--rt-slack", "x", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --rt-slack 'x': expected a number");
    CHECK(parse(&bench, &cli, err, "--delay", "", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --delay '': empty list: give one or more comma-separated items");
    CHECK(parse(&bench, &cli, err, "--ops", "a,,b", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --ops 'a,,b': an empty item (two commas in a row, or a comma at an end)");
    CHECK(parse(&bench, &cli, err, "--run-index", "-1", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --run-index '-1': expected an integer in [0, 2147483647]");
    /* bounds of FLOAT, DURATION, SIZE come after parsing */
    CHECK(parse(&bench, &cli, err, "--rt-slack", "0.5", NULL) == MT_OK);
    CHECK(mt_params_check_bounds(&cli.p, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --rt-slack '0.5': expected a number in [1, 1e+06]");
    CHECK(parse(&bench, &cli, err, "--time-slice", "2d", NULL) == MT_EINVAL);
    CHECK(parse(&bench, &cli, err, "--time-slice", "100000s", NULL) == MT_OK);
    CHECK(mt_params_check_bounds(&cli.p, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --time-slice '100000s': expected a duration in seconds in [1e-06, 86400]");

    /* help, version and aliases stop or redirect */
    CHECK(parse(&bench, &cli, err, "-h", "--nrep", "0", NULL) == MT_OK && cli.help);
    CHECK(parse(&bench, &cli, err, "--version", NULL) == MT_OK && cli.version);
    CHECK(parse(&pingpong, &cli, err, "--mpirun", "4", "--study", NULL) == MT_OK && cli.run_index == 4);
    CHECK(cli.flag[1] && !cli.flag[0]);
    CHECK(parse(&pingpong, &cli, err, "--mpirun", "-1", NULL) == MT_EINVAL);
    CHECK_STR(err, "invalid --mpirun '-1': expected an integer in [0, 2147483647]");

    /* the usage text names every parameter of the app and no other */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_cli_usage(f, &pingpong);
    fclose(f);
    for (int i = 0; i < mt_nparam_defs; i++) {
        char flag[96], pat[100];
        mt_param_flag(&mt_param_defs[i], flag, sizeof flag);
        int want = mt_param_def(mt_param_defs[i].id, MT_APP_PINGPONG) != NULL;
        snprintf(pat, sizeof pat, "  %s ", flag);
        int has = strstr(buf, pat) != NULL;
        snprintf(pat, sizeof pat, "  %s\n", flag);
        has = has || strstr(buf, pat) != NULL;
        if (want != has) fprintf(stderr, "usage and table disagree on %s\n", flag);
        CHECK(want == has);
    }
    CHECK(strstr(buf, "--outdir DIR") && strstr(buf, "write DIR/y") && strstr(buf, "--study"));
    CHECK(strstr(buf, "--mpirun") == NULL); /* hidden alias */
    CHECK(strstr(buf, "one of: monotonic,") != NULL); /* registry names of --timer */
    free(buf);

    /* --list's params array */
    f = open_memstream(&buf, &len);
    mt_json_t j;
    mt_json_init(&j, f);
    mt_params_write_list(&j, MT_APP_CLOCKS);
    fclose(f);
    CHECK(strstr(buf, "\"name\": \"check_pp\"") && strstr(buf, "\"type\": \"INT\"") && strstr(buf, "\"default\": null"));
    CHECK(strstr(buf, "\"name\": \"nrep\"") == NULL);
    free(buf);
    TEST_DONE();
}
