/* mpitempo: running a sync spec, flat or hierarchical (Hunold and Carpen-Amarie 2018, Algorithm 4
 * generalised to L levels, HlHCA). Each level splits the current group (node:
 * MPI_Comm_split_type SHARED; socket: hwloc or sysfs package id; block=K;
 * env=VAR); the group leaders (rank 0 of each subgroup) synchronise with the
 * algorithm of that level, on the clock they already have; the last algorithm
 * runs inside the innermost groups. World rank 0 is the reference throughout. */
#define _GNU_SOURCE
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef MT_HAVE_HWLOC
#include <hwloc.h>
#endif

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* socket (package) of this process: hwloc when built with it, else sysfs of
 * the first CPU this process may run on; -1 when unknown */
static int my_socket(void)
{
#ifdef MT_HAVE_HWLOC
    hwloc_topology_t topo;
    int hid = -1;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        hwloc_cpuset_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
            hwloc_obj_t o = hwloc_get_next_obj_covering_cpuset_by_type(topo, set, HWLOC_OBJ_PACKAGE, NULL);
            if (!o) o = hwloc_get_obj_covering_cpuset(topo, set);
            while (o && o->type != HWLOC_OBJ_PACKAGE) o = o->parent;
            if (o) hid = (int)o->logical_index;
        }
        if (set) hwloc_bitmap_free(set);
        hwloc_topology_destroy(topo);
        if (hid >= 0) return hid;
    }
#endif
    cpu_set_t set;
    int cpu = -1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
    if (cpu < 0) return -1;
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    int id = -1;
    if (f) {
        if (fscanf(f, "%d", &id) != 1) id = -1;
        fclose(f);
    }
    return id;
}

/* split cur by level l into *sub; errors agreed on by every rank of cur */
static int split_level(MPI_Comm cur, const mt_level_t *l, MPI_Comm *sub, char *err)
{
    int rank, color = 0, bad = 0, anybad = 0;
    mt_check_mpi(MPI_Comm_rank(cur, &rank), "MPI_Comm_rank");
    switch (l->kind) {
    case MT_LEVEL_NODE:
        mt_check_mpi(MPI_Comm_split_type(cur, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, sub),
                     "MPI_Comm_split_type");
        return MT_OK;
    case MT_LEVEL_SOCKET:
        color = my_socket();
        if (color < 0) color = 0; /* unknown: one group */
        break;
    case MT_LEVEL_BLOCK: color = rank / l->block; break;
    case MT_LEVEL_ENV: {
        const char *v = getenv(l->env);
        char *end = NULL;
        long c = v ? strtol(v, &end, 10) : -1;
        if (!v || end == v || *end || c < 0 || c > 1 << 30) bad = 1;
        else color = (int)c;
        break;
    }
    }
    mt_check_mpi(MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, cur), "MPI_Allreduce");
    if (anybad)
        return mt_fail(err, MT_EINVAL,
                       "hierarchical level env=%s: the variable must hold a non-negative integer colour on every rank",
                       l->env);
    mt_check_mpi(MPI_Comm_split(cur, color, rank, sub), "MPI_Comm_split");
    return MT_OK;
}

static void add_stats(mt_sync_stats_t *a, const mt_sync_stats_t *b)
{
    a->msgs_sent += b->msgs_sent;
    a->learn_ref += b->learn_ref;
    a->learn_client += b->learn_client;
    a->offsets += b->offsets;
    a->rtt_measured += b->rtt_measured;
    a->rtt_preempted += b->rtt_preempted;
    a->spread_sum_s += b->spread_sum_s;
    if (b->spread_max_s > a->spread_max_s) a->spread_max_s = b->spread_max_s;
    a->slope_unresolved |= b->slope_unresolved;
    a->ref_below |= b->ref_below;
    a->refits += b->refits;
    if (b->slope_state != MT_SLOPE_NONE) {
        a->slope_state = b->slope_state;
        a->fit_slope = b->fit_slope;
        a->fit_slope_se = b->fit_slope_se;
        a->fit_window_s = b->fit_window_s;
        a->fit_dropped = b->fit_dropped;
        a->slope_windows = b->slope_windows;
        a->fit_points = b->fit_points;
        a->fit_ci_ppm = b->fit_ci_ppm;
        a->fit_stop = b->fit_stop;
    }
}

/* after one level synchronised the ranks of comm (its rank 0 the reference, holding the clock of the
 * levels before): every other rank's clock is now learned against (or copied from) the reference's,
 * so its drift uncertainty is that of its model at this level plus the reference's whole one; the
 * models of earlier levels are superseded (the new model fits the whole difference) */
static void level_unc(MPI_Comm comm, mt_sync_stats_t *res, const mt_sync_stats_t *lvl)
{
    int crank;
    mt_check_mpi(MPI_Comm_rank(comm, &crank), "MPI_Comm_rank");
    double t0 = res->drift_unc + res->drift_unc_ref;
    mt_check_mpi(MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    if (crank != 0) {
        res->drift_unc = lvl->drift_unc;
        res->drift_unc_ref = lvl->drift_unc_ref + t0;
    }
}

static void stats_init(mt_sync_stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->slope_state = MT_SLOPE_NONE;
}

/* the same error on every rank of comm: the first failing rank's text */
static int agree(int rc, MPI_Comm comm, char *err)
{
    int rank, who = rc != MT_OK ? 0 : 1 << 30, first = 0;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    if (rc != MT_OK) who = rank;
    mt_check_mpi(MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == 1 << 30) return MT_OK;
    int code = rc;
    mt_check_mpi(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast");
    mt_check_mpi(MPI_Bcast(err, MT_ERRLEN, MPI_CHAR, first, comm), "MPI_Bcast");
    return code;
}

int mt_sync_run(const mt_sync_spec_t *spec, MPI_Comm comm, const mt_clock_t *in, int lazy, mt_sync_result_t *res,
                char *err)
{
    memset(res, 0, sizeof *res);
    stats_init(&res->st);
    res->clock = *in;
    mt_check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    double t0 = wall_s();
    int rc = MT_OK;
    if (spec->none) {
        /* nothing */
    } else if (spec->nlevels == 0) {
        mt_sync_stats_t st;
        stats_init(&st);
        rc = mt_sync_one(spec->alg[0], &spec->params[0], comm, in, lazy, &res->clock, &st, err);
        add_stats(&res->st, &st);
        level_unc(comm, &res->st, &st);
        res->nlevels_run = 1;
    } else {
        MPI_Comm cur = comm;
        mt_clock_t clk = *in;
        for (int l = 0; l <= spec->nlevels && rc == MT_OK; l++) {
            MPI_Comm sub = MPI_COMM_NULL, lead = MPI_COMM_NULL;
            mt_sync_stats_t st;
            stats_init(&st);
            /* this level learns on the clock of the levels before: their error stays in it */
            st.prior_below = mt_sync_below_accuracy(&res->st);
            if (l < spec->nlevels) {
                int srank;
                rc = split_level(cur, &spec->level[l], &sub, err);
                if (rc != MT_OK) break;
                mt_check_mpi(MPI_Comm_rank(sub, &srank), "MPI_Comm_rank");
                int crank;
                mt_check_mpi(MPI_Comm_rank(cur, &crank), "MPI_Comm_rank");
                mt_check_mpi(MPI_Comm_split(cur, srank == 0 ? 0 : MPI_UNDEFINED, crank, &lead), "MPI_Comm_split");
                if (lead != MPI_COMM_NULL) {
                    rc = mt_sync_one(spec->alg[l], &spec->params[l], lead, &clk, lazy, &clk, &st, err);
                    level_unc(lead, &res->st, &st);
                    mt_check_mpi(MPI_Comm_free(&lead), "MPI_Comm_free");
                }
            } else {
                rc = mt_sync_one(spec->alg[l], &spec->params[l], cur, &clk, lazy, &clk, &st, err);
                level_unc(cur, &res->st, &st);
            }
            add_stats(&res->st, &st);
            res->nlevels_run++;
            /* oversubscribed: the ranks that are not leaders sleep while the leaders measure */
            mt_lazy_barrier(cur, lazy);
            /* an error on some leaders must stop everyone in cur */
            rc = agree(rc, cur, err);
            if (cur != comm) mt_check_mpi(MPI_Comm_free(&cur), "MPI_Comm_free");
            cur = sub;
            if (rc != MT_OK && cur != MPI_COMM_NULL) mt_check_mpi(MPI_Comm_free(&cur), "MPI_Comm_free");
            if (rc == MT_OK && cur != MPI_COMM_NULL) {
                /* every clock of the group derives from its leader's: so does the leader's error */
                int below = mt_sync_below_accuracy(&res->st), grank;
                mt_check_mpi(MPI_Bcast(&below, 1, MPI_INT, 0, cur), "MPI_Bcast");
                mt_check_mpi(MPI_Comm_rank(cur, &grank), "MPI_Comm_rank");
                if (grank != 0 && below) res->st.ref_below = 1;
            }
        }
        if (rc == MT_OK && cur != comm && cur != MPI_COMM_NULL) mt_check_mpi(MPI_Comm_free(&cur), "MPI_Comm_free");
        res->clock = clk;
    }
    res->duration_s = wall_s() - t0;
    return agree(rc, comm, err);
}
