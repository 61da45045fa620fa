/* mpitempo: the global clock of one run (see session.h). */
#include "clock/session.h"
#include "base/mt_common.h"
#include "base/mt_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

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

static double base_now(const mt_gclock_t *g)
{
    mt_clock_t in;
    mt_clock_init(&in, &g->base);
    return mt_clock_now(&in);
}

int mt_gclock_sync(mt_gclock_t *g, const mt_sync_spec_t *spec, char *err)
{
    g->spec = *spec;
    if (spec->none) return MT_OK;
    mt_clock_t in;
    mt_clock_init(&in, &g->base);
    int rc = mt_sync_run(spec, g->comm, &in, g->lazy, &g->res, err);
    if (rc != MT_OK) return rc;
    double w0 = 0, c0 = base_now(g);
    rc = mt_check_run(g->comm, &g->res.clock, &mt_offset_skampi, CHECK_PP, &w0, 1, 0, 1, g->lazy, &g->chk0, err);
    if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
    /* what one try of one rank costs here (the check's time without its gaps): sizes the later checks */
    c0 = base_now(g) - c0;
    mt_check_mpi(MPI_Allreduce(MPI_IN_PLACE, &c0, 1, MPI_DOUBLE, MPI_MAX, g->comm), "MPI_Allreduce");
    if (g->size > 1) {
        double np1 = (double)(g->size - 1), t = (c0 - np1 * (MT_CHECK_TRIES - 1) * MT_CHECK_GAP_S) / (np1 * MT_CHECK_TRIES);
        g->try_s = t > 0 ? t : 0;
    }
    g->synced = 1;
    g->t_synced = mt_clock_now(&in);
    g->t_first = g->t_lastcheck = g->t_synced;
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
        fprintf(stderr, "%s: warning: clock sync: the clocks of %d rank(s) are below their stated accuracy (inherited "
                        "from the clock they were synchronised to; meta.json clock.below_accuracy_ranks)\n",
                mt_prog(), g->below_accuracy_ranks);
    return MT_OK;
}

/* one check of every rank on the global clock, its tries spread so that it costs about 1% of basis_s
 * (at least MT_CHECK_GAP_MIN_S apart); *dur: its wall time, max over ranks (rank 0) */
static int sized_check(mt_gclock_t *g, double basis_s, mt_check_t *chk, double *dur, double *gap, int *tries,
                       int *pp, char *err)
{
    double w0 = 0, t0 = base_now(g);
    mt_check_mpi(MPI_Bcast(&basis_s, 1, MPI_DOUBLE, 0, g->comm), "MPI_Bcast");
    *gap = mt_check_gap_for(basis_s, g->size);
    *tries = mt_check_tries_for(basis_s, g->size, g->try_s, *gap);
    *pp = mt_check_pp_for(basis_s, g->size, g->try_s, CHECK_PP);
    int rc = mt_check_run_ex(g->comm, &g->res.clock, &mt_offset_skampi, *pp, &w0, 1, 0, 1, g->lazy,
                             *tries, *gap, mt_check_budget_for(basis_s), chk, err);
    double d = base_now(g) - t0;
    mt_check_mpi(MPI_Reduce(&d, dur, 1, MPI_DOUBLE, MPI_MAX, 0, g->comm), "MPI_Reduce");
    return mt_agree(g->comm, rc, err);
}

/* the largest end offset a rank may have: the stated accuracy, or the scheme's gap when smaller */
static double threshold(const mt_gclock_t *g, const char **of)
{
    if (g->scheme_gap_s > 0 && g->scheme_gap_s < MT_SYNC_ACCURACY_S) {
        *of = g->scheme_gap_of ? g->scheme_gap_of : "window";
        return g->scheme_gap_s;
    }
    *of = "stated_accuracy";
    return MT_SYNC_ACCURACY_S;
}

void mt_gclock_scheme_gap(mt_gclock_t *g, double gap_s, const char *of)
{
    if (gap_s > 0 && (g->scheme_gap_s == 0 || gap_s < g->scheme_gap_s)) {
        g->scheme_gap_s = gap_s;
        g->scheme_gap_of = of;
    }
}

int mt_gclock_check_if_due(mt_gclock_t *g, char *err)
{
    if (!g->synced) return MT_OK;
    double now = base_now(g);
    int due = g->rank == 0 && now - g->t_lastcheck >= MT_CHECK_EVERY_S;
    mt_check_mpi(MPI_Bcast(&due, 1, MPI_INT, 0, g->comm), "MPI_Bcast");
    if (!due) return MT_OK;
    mt_check_t chk;
    double dur = 0, gap = 0, mx = 0, md = 0;
    int tries = 0, pp = 0;
    int rc = sized_check(g, now - g->t_lastcheck, &chk, &dur, &gap, &tries, &pp, err);
    if (rc != MT_OK) return rc;
    const char *of;
    int resync = 0;
    if (g->rank == 0) {
        mt_check_summary(&chk, 0, &mx, &md);
        resync = mx > threshold(g, &of);
        if (mx > g->checks_max_s) g->checks_max_s = mx;
        if (g->nchecks < 64) {
            g->checks[g->nchecks][0] = now - g->t_first;
            g->checks[g->nchecks][1] = mx;
            g->checks[g->nchecks][2] = resync;
        }
        g->nchecks++;
    }
    mt_check_free(&chk);
    /* the policy: a rank past the threshold re-synchronises everyone now (between experiments) */
    mt_check_mpi(MPI_Bcast(&resync, 1, MPI_INT, 0, g->comm), "MPI_Bcast");
    if (resync) {
        int did = 0;
        double t_synced = g->t_synced;
        rc = mt_sync_resync_if_old(&g->spec, g->comm, &g->base, g->lazy, 1e-300, &t_synced, &g->res, &did, err);
        if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
        g->t_synced = base_now(g);
        g->nresync += did;
        g->ncheck_resyncs += did;
        if (g->rank == 0)
            fprintf(stderr, "%s: note: clock check after %.1f s: a rank was %.3g us off (more than %.3g us): "
                            "re-synchronised (meta.json clock.checks)\n",
                    mt_prog(), now - g->t_first, mx * 1e6, threshold(g, &of) * 1e6);
    }
    g->t_lastcheck = base_now(g);
    return MT_OK;
}

const mt_clock_t *mt_gclock_clock(const mt_gclock_t *g) { return g->synced ? &g->res.clock : NULL; }

int mt_gclock_resync_if_old(mt_gclock_t *g, double max_age_s, char *err)
{
    if (!g->synced || !(max_age_s > 0)) return MT_OK;
    int did = 0;
    int rc = mt_sync_resync_if_old(&g->spec, g->comm, &g->base, g->lazy, max_age_s, &g->t_synced, &g->res, &did, err);
    g->nresync += did;
    if (did) g->t_lastcheck = g->t_synced;
    return mt_agree(g->comm, rc, err);
}

int mt_gclock_finish(mt_gclock_t *g, char *err)
{
    if (!g->synced) return MT_OK;
    /* the horizon: the last sync -> the last measurement (now), on rank 0's base clock */
    double now = base_now(g), gap = 0;
    g->horizon_s = now - g->t_synced;
    g->run_s = now - g->t_first;
    mt_check_mpi(MPI_Bcast(&g->horizon_s, 1, MPI_DOUBLE, 0, g->comm), "MPI_Bcast");
    int rc = sized_check(g, g->run_s, &g->chk1, &g->end_check_s, &gap, &g->end_tries, &g->end_pp, err);
    if (rc != MT_OK) return rc;
    g->end_gap_s = gap;
    if (g->rank == 0 && !(g->slopes = calloc((size_t)g->size, sizeof(int))))
        mt_check_mpi(MPI_ERR_NO_MEM, "slope decisions");
    mt_sync_gather_slopes(g->comm, &g->res, g->slopes);
    /* the adaptive fit window of every rank's (last) model: fit points, the interval reached, how it ended */
    double mine[3] = {g->res.st.fit_points, g->res.st.fit_ci_ppm, g->res.st.fit_stop};
    if (g->rank == 0 && !(g->fits = calloc(3 * (size_t)g->size, sizeof(double))))
        mt_check_mpi(MPI_ERR_NO_MEM, "fit windows");
    mt_check_mpi(MPI_Gather(mine, 3, MPI_DOUBLE, g->fits, 3, MPI_DOUBLE, 0, g->comm), "MPI_Gather");
    /* the drift each rank's clock may have had, against the horizon it really had */
    mt_sync_stats_t st = g->res.st;
    mt_sync_at_horizon(&st, g->horizon_s);
    double info[6] = {st.drift_unc + st.drift_unc_ref, st.drift_unc, st.slope_unresolved, st.ref_below,
                      mt_sync_below_accuracy(&st), st.refits};
    if (g->rank == 0 && !(g->endinfo = calloc(6 * (size_t)g->size, sizeof(double))))
        mt_check_mpi(MPI_ERR_NO_MEM, "end-of-run facts");
    mt_check_mpi(MPI_Gather(info, 6, MPI_DOUBLE, g->endinfo, 6, MPI_DOUBLE, 0, g->comm), "MPI_Gather");
    if (g->rank == 0) {
        const char *of;
        double thr = threshold(g, &of);
        for (int r = 0; r < g->size; r++) g->below_end_ranks += g->endinfo[6 * (size_t)r + 4] != 0;
        for (int i = 0; i < g->chk1.nsample; i++) g->inaccurate_end_ranks += fabs(g->chk1.offset_s[i]) > thr;
        double mx = 0, md = 0;
        mt_check_summary(&g->chk1, 0, &mx, &md);
        if (g->inaccurate_end_ranks)
            fprintf(stderr, "%s: warning: clock check at the end (%.3g s after the sync): %d rank(s) more than %.3g us "
                            "off (%s), up to %.3g us: the global clock is below its stated accuracy (meta.json "
                            "clock.quality_end, flag sync_inaccurate)\n",
                    mt_prog(), g->horizon_s, g->inaccurate_end_ranks, thr * 1e6, of, mx * 1e6);
        if (g->below_end_ranks > g->below_accuracy_ranks)
            fprintf(stderr, "%s: warning: clock sync: the drift of %d rank(s) is not known well enough for the %.3g s "
                            "between the sync and the last measurement (bound %.3g ppm = %.3g us / horizon; meta.json "
                            "clock.drift_unc_ppm_per_rank, flag sync_inaccurate)\n",
                    mt_prog(), g->below_end_ranks, g->horizon_s, mt_drift_bound(g->horizon_s) * 1e6,
                    MT_SYNC_ACCURACY_S * 1e6);
    }
    g->finished = 1;
    return MT_OK;
}

void mt_gclock_write_meta(const mt_gclock_t *g, mt_json_t *j, int defaulted, double resync_age_s)
{
    mt_sync_write_json(j, &g->spec, &g->base, g->res.duration_s, g->synced ? &g->chk0 : NULL, g->size,
                       g->sim.on ? g->simall : NULL);
    mt_json_kbool(j, "defaulted", defaulted);
    if (g->synced) {
        double mx = 0, md = 0, mx0 = 0, md0 = 0;
        if (g->finished) mt_check_summary(&g->chk1, 0, &mx, &md);
        mt_check_summary(&g->chk0, 0, &mx0, &md0);
        const char *of;
        double thr = threshold(g, &of);
        mt_json_key(j, "quality_end");
        mt_json_obj_begin(j);
        mt_json_knum(j, "max_abs_offset_s", mx);
        mt_json_knum(j, "median_abs_offset_s", md);
        if (g->finished) {
            /* every rank's offset to rank 0 after the last measurement (rank 0: 0) */
            mt_json_key(j, "offset_per_rank_s");
            mt_json_arr_begin(j);
            mt_json_num(j, 0);
            for (int i = 0; i < g->chk1.nsample; i++) mt_json_num(j, g->chk1.offset_s[i]);
            mt_json_arr_end(j);
            mt_json_knum(j, "horizon_s", g->horizon_s);
            mt_json_knum(j, "run_s", g->run_s);
            mt_json_knum(j, "duration_s", g->end_check_s);
            mt_json_knum(j, "cost_fraction", g->run_s > 0 ? g->end_check_s / g->run_s : 0);
            mt_json_knum(j, "gap_s", g->end_gap_s);
            mt_json_kint(j, "tries", g->end_tries);
            mt_json_kint(j, "pp", g->end_pp);
            mt_json_knum(j, "threshold_s", thr);
            mt_json_kstr(j, "threshold_of", of);
            mt_json_kint(j, "inaccurate_ranks", g->inaccurate_end_ranks);
        }
        mt_json_obj_end(j);
        /* the accuracy this run states: the measured one, the worst of every check (after the sync,
         * between experiments, at the end) */
        double acc = mx0 > mx ? mx0 : mx;
        if (g->checks_max_s > acc) acc = g->checks_max_s;
        mt_json_knum(j, "accuracy_s", acc);
        mt_json_kstr(j, "accuracy_source", g->finished ? "measured: max |offset| of the checks after the sync, "
                                                         "between experiments and at the end" : "measured after the sync");
        if (g->finished) {
            mt_json_knum(j, "horizon_s", g->horizon_s);
            mt_json_knum(j, "drift_bound_ppm", mt_drift_bound(g->horizon_s) * 1e6);
            mt_json_key(j, "drift_unc_ppm_per_rank");
            mt_json_arr_begin(j);
            for (int r = 0; r < g->size; r++) mt_json_num(j, g->endinfo[6 * (size_t)r] * 1e6);
            mt_json_arr_end(j);
            mt_json_key(j, "refits_per_rank");
            mt_json_arr_begin(j);
            for (int r = 0; r < g->size; r++) mt_json_int(j, (int64_t)g->endinfo[6 * (size_t)r + 5]);
            mt_json_arr_end(j);
            int unres = 0;
            for (int r = 0; r < g->size; r++) unres += g->endinfo[6 * (size_t)r + 2] != 0;
            mt_json_kint(j, "slope_unresolved_ranks", unres);
            mt_json_kbool(j, "sync_inaccurate", g->inaccurate_end_ranks > 0 || g->below_end_ranks > 0 ||
                                                    mx0 > MT_SYNC_ACCURACY_S || g->checks_max_s > thr);
        }
        mt_json_kint(j, "check_every_s", (int64_t)MT_CHECK_EVERY_S);
        mt_json_key(j, "checks");
        mt_json_arr_begin(j);
        for (int c = 0; c < g->nchecks && c < 64; c++) {
            mt_json_obj_begin(j);
            mt_json_knum(j, "at_s", g->checks[c][0]);
            mt_json_knum(j, "max_abs_offset_s", g->checks[c][1]);
            mt_json_kbool(j, "resynced", g->checks[c][2] != 0);
            mt_json_obj_end(j);
        }
        mt_json_arr_end(j);
        mt_json_kint(j, "checks_total", g->nchecks);
        mt_json_kint(j, "resyncs_on_check", g->ncheck_resyncs);
        mt_json_knum(j, "resync_age_s", resync_age_s);
        mt_json_kint(j, "resyncs", g->nresync);
        /* Mean-RTT-Offset: ranks whose round trips showed preemption (below the stated accuracy) */
        mt_json_kint(j, "rtt_preempted_ranks", g->rtt_preempted_ranks);
        mt_json_knum(j, "rtt_spread_max_s", g->rtt_spread_max_s);
        /* ranks whose clock is below its stated accuracy for any reason (mt_sync_below_accuracy) */
        mt_json_kint(j, "below_accuracy_ranks", g->finished ? g->below_end_ranks : g->below_accuracy_ranks);
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
    free(g->endinfo);
    g->endinfo = NULL;
    g->fits = NULL;
    g->simall = NULL;
    g->slopes = NULL;
}
