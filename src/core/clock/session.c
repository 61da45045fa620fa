/* mpitempo: the global clock of one run (see session.h). */
#include "clock/session.h"
#include "base/mt_common.h"
#include "base/mt_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the accuracy check of a run: SKaMPI-Offset with 100 ping-pongs, all ranks, right away */
#define CHECK_PP 100

int mt_gclock_init(mt_gclock_t *g, MPI_Comm comm, const mt_timer_inst_t *t, const char *sim_offsets,
                   const char *sim_drifts, const char *sim_random, int lazy, char *err)
{
    memset(g, 0, sizeof *g);
    g->comm = comm;
    g->lazy = lazy;
    g->spec.none = 1;
    mt_check_mpi(MPI_Comm_rank(comm, &g->rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &g->size), "MPI_Comm_size");
    int rc = mt_sim_from_env(sim_offsets, sim_drifts, sim_random, g->rank, g->size, &g->sim, err);
    if ((rc = mt_agree(comm, rc, err)) != MT_OK) return rc;
    double simv[2] = {g->sim.offset_s, g->sim.drift};
    if (g->rank == 0 && !(g->simall = malloc(sizeof(double) * 2 * (size_t)g->size)))
        mt_check_mpi(MPI_ERR_NO_MEM, "simulation settings");
    mt_check_mpi(MPI_Gather(simv, 2, MPI_DOUBLE, g->simall, 2, MPI_DOUBLE, 0, comm), "MPI_Gather");
    if ((rc = mt_baseclock_init(&g->base, t, &g->sim, comm, err)) != MT_OK) return rc;
    if (g->rank == 0 && g->sim.on)
        fprintf(stderr, "%s: note: SIMULATED clocks (per-rank offset and drift) on top of '%s'\n", mt_prog(),
                t->t->name);
    return MT_OK;
}

int mt_gclock_sync(mt_gclock_t *g, const mt_sync_spec_t *spec, char *err)
{
    g->spec = *spec;
    if (spec->none) return MT_OK;
    mt_clock_t in;
    mt_clock_init(&in, &g->base);
    int rc = mt_sync_run(spec, g->comm, &in, g->lazy, &g->res, err);
    if (rc != MT_OK) return rc;
    double w0 = 0;
    rc = mt_check_run(g->comm, &g->res.clock, &mt_offset_skampi, CHECK_PP, &w0, 1, 0, 1, g->lazy, &g->chk0, err);
    if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
    g->synced = 1;
    g->t_synced = mt_clock_now(&in);
    double dmax = 0;
    mt_check_mpi(MPI_Reduce(&g->res.duration_s, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, g->comm), "MPI_Reduce");
    g->res.duration_s = dmax;
    const mt_sync_stats_t *st = &g->res.st;
    int pre = mt_meanrtt_below_accuracy(st->rtt_measured, st->rtt_preempted, st->spread_sum_s);
    mt_check_mpi(MPI_Reduce(&pre, &g->rtt_preempted_ranks, 1, MPI_INT, MPI_SUM, 0, g->comm), "MPI_Reduce");
    int below = mt_sync_below_accuracy(st);
    mt_check_mpi(MPI_Reduce(&below, &g->below_accuracy_ranks, 1, MPI_INT, MPI_SUM, 0, g->comm), "MPI_Reduce");
    mt_check_mpi(MPI_Reduce(&g->res.st.spread_max_s, &g->rtt_spread_max_s, 1, MPI_DOUBLE, MPI_MAX, 0, g->comm),
                 "MPI_Reduce");
    if (g->rank == 0 && g->rtt_preempted_ranks > 0)
        fprintf(stderr, "%s: warning: clock sync: Mean-RTT-Offset saw preempted round trips on %d rank(s) (up to "
                        "%.3g us beyond the fastest): the sync is below its stated accuracy (meta.json "
                        "clock.rtt_preempted_ranks; offset=skampi uses minima)\n",
                mt_prog(), g->rtt_preempted_ranks, g->rtt_spread_max_s * 1e6);
    if (g->rank == 0 && g->below_accuracy_ranks > g->rtt_preempted_ranks)
        fprintf(stderr, "%s: warning: clock sync: the clocks of %d rank(s) are below their stated accuracy (the drift "
                        "not known to within 2 ppm, or inherited from the clock they were synchronised to; meta.json "
                        "clock.below_accuracy_ranks)\n",
                mt_prog(), g->below_accuracy_ranks);
    return MT_OK;
}

const mt_clock_t *mt_gclock_clock(const mt_gclock_t *g) { return g->synced ? &g->res.clock : NULL; }

int mt_gclock_resync_if_old(mt_gclock_t *g, double max_age_s, char *err)
{
    if (!g->synced || !(max_age_s > 0)) return MT_OK;
    int did = 0;
    int rc = mt_sync_resync_if_old(&g->spec, g->comm, &g->base, g->lazy, max_age_s, &g->t_synced, &g->res, &did, err);
    g->nresync += did;
    return mt_agree(g->comm, rc, err);
}

int mt_gclock_finish(mt_gclock_t *g, char *err)
{
    if (!g->synced) return MT_OK;
    double w0 = 0;
    int rc = mt_check_run(g->comm, &g->res.clock, &mt_offset_skampi, CHECK_PP, &w0, 1, 0, 1, g->lazy, &g->chk1, err);
    if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
    if (g->rank == 0 && !(g->slopes = calloc((size_t)g->size, sizeof(int))))
        mt_check_mpi(MPI_ERR_NO_MEM, "slope decisions");
    mt_sync_gather_slopes(g->comm, &g->res, g->slopes);
    /* the adaptive fit window of every rank's (last) model: fit points, the interval reached, how it ended */
    double mine[3] = {g->res.st.fit_points, g->res.st.fit_ci_ppm, g->res.st.fit_stop};
    if (g->rank == 0 && !(g->fits = calloc(3 * (size_t)g->size, sizeof(double))))
        mt_check_mpi(MPI_ERR_NO_MEM, "fit windows");
    mt_check_mpi(MPI_Gather(mine, 3, MPI_DOUBLE, g->fits, 3, MPI_DOUBLE, 0, g->comm), "MPI_Gather");
    g->finished = 1;
    return MT_OK;
}

void mt_gclock_write_meta(const mt_gclock_t *g, mt_json_t *j, int defaulted, double resync_age_s)
{
    mt_sync_write_json(j, &g->spec, &g->base, g->res.duration_s, g->synced ? &g->chk0 : NULL, g->size,
                       g->sim.on ? g->simall : NULL);
    mt_json_kbool(j, "defaulted", defaulted);
    if (g->synced) {
        double mx = 0, md = 0;
        if (g->finished) mt_check_summary(&g->chk1, 0, &mx, &md);
        mt_json_key(j, "quality_end");
        mt_json_obj_begin(j);
        mt_json_knum(j, "max_abs_offset_s", mx);
        mt_json_knum(j, "median_abs_offset_s", md);
        mt_json_obj_end(j);
        mt_json_knum(j, "resync_age_s", resync_age_s);
        mt_json_kint(j, "resyncs", g->nresync);
        /* Mean-RTT-Offset: ranks whose round trips showed preemption (below the stated accuracy) */
        mt_json_kint(j, "rtt_preempted_ranks", g->rtt_preempted_ranks);
        mt_json_knum(j, "rtt_spread_max_s", g->rtt_spread_max_s);
        /* ranks whose clock is below its stated accuracy for any reason (mt_sync_below_accuracy) */
        mt_json_kint(j, "below_accuracy_ranks", g->below_accuracy_ranks);
        if (g->slopes) mt_sync_write_slopes(j, g->slopes, g->size);
        if (g->fits) {
            /* per rank, null for ranks without a linear model of their own (the reference, ClockPropSync) */
            static const char *const keys[] = {"fit_points_per_rank", "fit_ci_ppm_per_rank", "fit_stop_per_rank"};
            for (int k = 0; k < 3; k++) {
                mt_json_key(j, keys[k]);
                mt_json_arr_begin(j);
                for (int r = 0; r < g->size; r++) {
                    const double *f = g->fits + 3 * (size_t)r;
                    if (!g->slopes || g->slopes[r] == MT_SLOPE_NONE) mt_json_null(j);
                    else if (k == 0) mt_json_int(j, (int64_t)f[0]);
                    else if (k == 1) mt_json_num(j, f[1]);
                    else mt_json_str(j, f[2] == MT_STOP_CI ? "ci" : f[2] == MT_STOP_MAX ? "window" : "fixed");
                }
                mt_json_arr_end(j);
            }
        }
    } else {
        mt_json_kstr(j, "note", "local timer only; runtimes are max over ranks of local runtimes");
    }
}

void mt_gclock_free(mt_gclock_t *g)
{
    mt_check_free(&g->chk0);
    mt_check_free(&g->chk1);
    free(g->simall);
    free(g->slopes);
    free(g->fits);
    g->fits = NULL;
    g->simall = NULL;
    g->slopes = NULL;
}
