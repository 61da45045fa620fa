/* mpitempo: the synthetic operation "delay": every rank busy-waits its own
 * time (--delay, per-rank values allowed) and nothing is communicated. Its true
 * runtime is known - max over ranks of the delays - which makes it the ground
 * truth for measurement schemes (a late rank, a barrier's distortion). */
#include "base/mt_common.h"
#include "op/op.h"
#include "timer/timer.h"

#define MT_DELAY_MAX_S 3600.0

static int c_delay(mt_op_args_t *a)
{
    const mt_timer_inst_t *t = a->timer;
    int64_t t0 = t->t->now();
    int64_t ticks = (int64_t)(a->delay_s * t->ticks_per_s);
    while (t->t->now() - t0 < ticks) {
    }
    return MPI_SUCCESS;
}

const mt_op_t mt_op_delay = {.name = "delay", .mpi_name = "delay (synthetic busy-wait)", .min_procs = 1, .flags = MT_OP_SYNTHETIC | MT_OP_NOSIZE, .blocks = 0, .call = c_delay};

int mt_op_delay_for_rank(const char *list, int rank, double *out, char *err)
{
    char **items;
    int n, rc = mt_split_list(list, &items, &n, err);
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
