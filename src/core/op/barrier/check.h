/* mpitempo: the correctness check of a barrier op, run by
 * `mpitempo-logp --check-barriers` and the MPI tests:
 *   1. `calls` calls, before each of which one random rank busy-waits a random
 *      time in [0, max_delay]; the entry and exit times of every rank are read
 *      from one clock (CLOCK_MONOTONIC of the host: a global clock for ranks
 *      on one host and its network namespaces); a violation is a call that
 *      some rank left before the last rank entered it;
 *   2. `calls` calls back to back with short random delays, so that messages
 *      of consecutive calls are in flight at the same time; every message
 *      carries its call's number and a receive of another call's message is
 *      counted (mismatched);
 *   messages sent per rank and call (min and max over ranks and calls of part 1).
 * A deadlock is seen by the caller's timeout. Collective. */
#ifndef MT_OP_BARRIER_CHECK_H
#define MT_OP_BARRIER_CHECK_H

#include <mpi.h>
#include <stdint.h>

#include "op/op.h"
#include "timer/timer.h"

typedef struct mt_bar_check {
    const mt_op_t *op;
    int calls;
    long long violations;   /* calls some rank left before the last one entered */
    double min_slack_s;     /* min over calls of (first exit - last entry) */
    long long mismatched;   /* receives of another call's message, summed over ranks */
    int counted;            /* message counts available (our algorithms; not MPI_Barrier) */
    long long sent_min, sent_max; /* messages sent by one rank in one call */
} mt_bar_check_t;

int mt_bar_check(MPI_Comm comm, const mt_timer_inst_t *t, const mt_op_t *op, int calls, double max_delay_s,
                 uint64_t seed, mt_bar_check_t *out, char *err);

#endif
