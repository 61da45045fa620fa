/* mpitempo: the synthetic operation "delay": every rank busy-waits its own
 * time (--delay, per-rank values allowed) and nothing is communicated. Its true
 * runtime is known - max over ranks of the delays - which makes it the ground
 * truth for measurement schemes (a late rank, a barrier's distortion). */
#include <stdlib.h>

#include "base/mt_common.h"
#include "op/op.h"
#include "timer/timer.h"

#define MT_DELAY_MAX_S 3600.0

/* Test knob MPITEMPO_TEST_DELAY_STEP=K:F (docs/methods.md, "Flag rates"): from the (K+1)-th call of
 * `delay` in an experiment on (warm-up calls included) every call busy-waits F times its --delay: an
 * injected level change of known size and position (K=0: the whole run), the distortion that
 * bench/flag_rates.py asks the flags to detect. Unset: no effect. */
static long step_after = -1;   /* K, or -1 when the knob is off */
static double step_factor = 1.0;
static long delay_calls;       /* calls of `delay` since the experiment's mt_op_delay_for_rank */

static int parse_step(char *err)
{
    const char *v = getenv("MPITEMPO_TEST_DELAY_STEP");
    step_after = -1;
    step_factor = 1.0;
    if (!v || !*v) return MT_OK;
    char *end;
    long k = strtol(v, &end, 10);
    double f = 0.0;
    if (end != v && *end == ':' && k >= 0) {
        char *e2;
        f = strtod(end + 1, &e2);
        if (e2 != end + 1 && *e2 == '\0' && f > 0.0 && f <= 1000.0) {
            step_after = k;
            step_factor = f;
            return MT_OK;
        }
    }
    return mt_fail(err, MT_EINVAL, "invalid MPITEMPO_TEST_DELAY_STEP '%s': expected K:F (K >= 0 calls, 0 < F <= 1000)", v);
}

static int c_delay(mt_op_args_t *a)
{
    const mt_timer_inst_t *t = a->timer;
    double d = a->delay_s;
    if (step_after >= 0 && delay_calls++ >= step_after) d *= step_factor;
    int64_t t0 = t->t->now();
    int64_t ticks = (int64_t)(d * t->ticks_per_s);
    mt_sim_skip(d);
    while (t->t->now() - t0 < ticks) {
    }
    return MPI_SUCCESS;
}

const mt_op_t mt_op_delay = {.name = "delay", .mpi_name = "delay (synthetic busy-wait)", .min_procs = 1, .flags = MT_OP_SYNTHETIC | MT_OP_NOSIZE, .blocks = 0, .call = c_delay, .family = "synthetic", .opts = MT_OPT_DELAY};

int mt_op_delay_for_rank(const char *list, int rank, double *out, char *err)
{
    char **items;
    int n, rc = parse_step(err);
    if (rc != MT_OK) return rc;
    delay_calls = 0;
    rc = mt_split_list(list, &items, &n, err);
    if (rc != MT_OK) return rc;
    for (int i = 0; i < n && rc == MT_OK; i++) { /* every item is checked, whichever this rank gets */
        double d;
        rc = mt_parse_duration_as(items[i], "--delay", &d, err);
        if (rc == MT_OK && d > MT_DELAY_MAX_S)
            rc = mt_fail(err, MT_EINVAL, "invalid --delay '%s': at most %gs per call", items[i], MT_DELAY_MAX_S);
        if (rc == MT_OK && i == rank % n) *out = d;
    }
    mt_free_list(items, n);
    return rc;
}
