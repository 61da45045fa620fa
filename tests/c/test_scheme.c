/* Schemes describe themselves: their parameters, configuration, meta.json keys,
 * advice and notes (pure parts; no MPI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "scheme/scheme.h"

static char *meta_of(const mt_scheme_inst_t *si, const mt_meas_info_t *info)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_json_t j;
    mt_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.nrep = 77;
    mt_json_init(&j, f);
    mt_json_obj_begin(&j);
    if (si->s->write_meta) si->s->write_meta(&j, si->cfg, &ctx);
    if (info && si->s->write_exp_meta) si->s->write_exp_meta(&j, info);
    mt_json_obj_end(&j);
    fclose(f);
    return buf;
}

static void set(mt_params_t *p, int id, const char *v)
{
    char err[MT_ERRLEN];
    if (mt_params_set(p, id, v, err) != MT_OK) fprintf(stderr, "set: %s\n", err);
}

int main(void)
{
    char err[MT_ERRLEN];
    mt_params_t p;
    mt_scheme_inst_t si;
    mt_meas_info_t info = {1e-6, 4e-6, 0.5, 1e-6};

    /* every scheme opens with the defaults; its parameters are bench parameters */
    mt_params_init(&p, MT_APP_BENCH);
    for (int i = 0; i < mt_nschemes; i++) {
        const mt_scheme_t *s = mt_schemes[i];
        CHECK(mt_scheme_open(s->name, &p, &si, err) == MT_OK);
        CHECK(s->few_valid_advice != NULL && s->desc && s->measure);
        for (int k = 0; s->params && s->params[k] >= 0; k++) CHECK(mt_param_def(s->params[k], MT_APP_BENCH) != NULL);
        if (s->write_exp_meta) CHECK(s->needs_global_clock); /* per-experiment keys come from the global clock */
        mt_scheme_close(&si);
    }
    CHECK(mt_scheme_open("nosuch", &p, &si, err) == MT_EINVAL);
    CHECK(strstr(err, "unknown scheme 'nosuch' (allowed: barrier, loop, barrier_loop, window, roundtime)") != NULL);
    mt_scheme_clock_names(err, sizeof err);
    CHECK_STR(err, "window, roundtime");

    /* barrier: no keys of its own */
    CHECK(mt_scheme_open("barrier", &p, &si, err) == MT_OK);
    char *m = meta_of(&si, &info);
    CHECK_STR(m, "{}\n");
    free(m);
    mt_scheme_close(&si);

    /* loop: --inner */
    set(&p, MTP_inner, "7");
    CHECK(mt_scheme_open("loop", &p, &si, err) == MT_OK);
    m = meta_of(&si, &info);
    CHECK(strstr(m, "\"inner\": 7") != NULL);
    free(m);
    mt_scheme_close(&si);

    /* roundtime: its options, their messages, its keys and advice */
    mt_params_init(&p, MT_APP_BENCH);
    set(&p, MTP_rt_slack, "3");
    set(&p, MTP_time_slice, "200ms");
    set(&p, MTP_no_rt_adapt, NULL);
    CHECK(mt_scheme_open("roundtime", &p, &si, err) == MT_OK);
    m = meta_of(&si, &info);
    CHECK(strstr(m, "\"rt_slack_B\": 3") && strstr(m, "\"rt_adapt\": false") && strstr(m, "\"time_slice_s\": 0.2"));
    CHECK(strstr(m, "\"max_nrep\": 77") && strstr(m, "\"slack_end_s\": 4e-06") && strstr(m, "\"bcast_latency_s\": 1e-06"));
    CHECK(strstr(m, "\"elapsed_s\": 0.5") && !strstr(m, "pilot_s"));
    free(m);
    CHECK(strstr(si.s->few_valid_advice, "--rt-slack") != NULL);
    mt_scheme_close(&si);
    set(&p, MTP_rt_slack, "0.5");
    CHECK(mt_scheme_open("roundtime", &p, &si, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --rt-slack '0.5': B must be a number >= 1");
    set(&p, MTP_rt_slack, "2");
    set(&p, MTP_time_slice, "0");
    CHECK(mt_scheme_open("roundtime", &p, &si, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --time-slice '0': must be > 0");

    /* window: given or pilot, its keys, advice and the note on lost measurements */
    mt_params_init(&p, MT_APP_BENCH);
    CHECK(mt_scheme_open("window", &p, &si, err) == MT_OK);
    m = meta_of(&si, &info);
    CHECK(strstr(m, "\"window_s\": 0") && strstr(m, "pilot: 3 x median") && strstr(m, "\"window_chunk\": 10"));
    CHECK(strstr(m, "\"pilot_s\": 1e-06") && strstr(m, "\"window_s\": 4e-06"));
    free(m);
    char note[256];
    CHECK(si.s->exp_note(si.cfg, &info, 100, 100, note, sizeof note) == 0);
    CHECK(si.s->exp_note(si.cfg, &info, 50, 100, note, sizeof note) == 1);
    CHECK_STR(note, "window 4.000 us kept 50 of 100 measurements; a window of 8.000 us would lose fewer");
    CHECK_STR(si.s->few_valid_advice, "; try a larger --window");
    mt_scheme_close(&si);
    set(&p, MTP_window, "20us");
    CHECK(mt_scheme_open("window", &p, &si, err) == MT_OK);
    m = meta_of(&si, NULL);
    CHECK(strstr(m, "\"window_s\": 2e-05") && strstr(m, "\"window_source\": \"given\""));
    free(m);
    mt_scheme_close(&si);
    set(&p, MTP_window, "0us");
    CHECK(mt_scheme_open("window", &p, &si, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --window '0us': the window size must be > 0");

    /* the barrier skew of the local schemes */
    int r;
    double t;
    CHECK(mt_barrier_skew_parse("1:20us", 2, &r, &t, err) == MT_OK && r == 1);
    CHECK_CLOSE(t, 20e-6, 1e-18);
    CHECK(mt_barrier_skew_parse("2:20us", 2, &r, &t, err) == MT_EINVAL);
    CHECK_STR(err, "invalid --barrier-skew '2:20us': rank 2 is not in the job (0..1)");
    CHECK(mt_barrier_skew_parse("2:20us", 0, &r, &t, err) == MT_OK); /* job size unknown */
    CHECK(mt_barrier_skew_parse("oops", 0, &r, &t, err) == MT_EINVAL && strstr(err, "expected RANK:TIME"));
    TEST_DONE();
}
