/* mpitempo: Check-Global-Clock (Hunold and Carpen-Amarie 2018, Algorithm 6): offsets of the
 * global clocks to rank 0's right after sync and after each wait time, with an
 * optional seeded random sample of ranks for large jobs. */
#define _GNU_SOURCE
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MT_CHECK_TAG_GO 741

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void mt_check_free(mt_check_t *c)
{
    free(c->wait_s);
    free(c->sample);
    free(c->offset_s);
    memset(c, 0, sizeof *c);
}

void mt_check_summary(const mt_check_t *c, int w, double *max_abs, double *median_abs)
{
    *max_abs = *median_abs = 0;
    if (c->nsample == 0) return;
    double *v = malloc(sizeof(double) * (size_t)c->nsample);
    if (!v) return;
    for (int i = 0; i < c->nsample; i++) v[i] = fabs(c->offset_s[(size_t)w * c->nsample + i]);
    qsort(v, (size_t)c->nsample, sizeof(double), cmp_double);
    *max_abs = v[c->nsample - 1];
    int n = c->nsample;
    *median_abs = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
}

/* wait on g until its time reaches target: busy (Alg. 6), or sleep in chunks
 * and spin the last ms (lazy: oversubscribed runs) */
static void wait_until(const mt_clock_t *g, double target, int busy)
{
    for (;;) {
        double left = target - mt_clock_now(g);
        if (left <= 0) return;
        mt_sim_skip(left);
        if (!busy && left > 2e-3) {
            struct timespec ts = {0, 0};
            double s = left - 1e-3;
            ts.tv_sec = (time_t)s;
            ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
            nanosleep(&ts, NULL);
        }
    }
}

double mt_check_gap_for(double run_s, int nprocs)
{
    double gap = 0.01 * run_s / ((double)(nprocs > 1 ? nprocs - 1 : 1) * (MT_CHECK_TRIES - 1));
    return gap < MT_CHECK_GAP_MIN_S ? MT_CHECK_GAP_MIN_S : gap > MT_CHECK_GAP_S ? MT_CHECK_GAP_S : gap;
}

int mt_check_tries_for(double run_s, int nprocs, double try_s, double gap_s)
{
    double budget = 0.01 * run_s > MT_CHECK_BUDGET_MIN_S ? 0.01 * run_s : MT_CHECK_BUDGET_MIN_S;
    double per = (double)(nprocs > 1 ? nprocs - 1 : 1) * (try_s + gap_s);
    double t = per > 0 ? floor((budget + (double)(nprocs > 1 ? nprocs - 1 : 1) * gap_s) / per) : MT_CHECK_TRIES;
    return t < 1 ? 1 : t > MT_CHECK_TRIES ? MT_CHECK_TRIES : (int)t;
}

double mt_check_budget_for(double run_s)
{
    return 0.01 * run_s > MT_CHECK_BUDGET_MIN_S ? 0.01 * run_s : MT_CHECK_BUDGET_MIN_S;
}

int mt_check_pp_for(double run_s, int nprocs, double try_s, int pp)
{
    double budget = 0.01 * run_s > MT_CHECK_BUDGET_MIN_S ? 0.01 * run_s : MT_CHECK_BUDGET_MIN_S;
    double per = (double)(nprocs > 1 ? nprocs - 1 : 1) * try_s;
    if (!(per > budget)) return pp;
    int n = (int)floor(pp * budget / per);
    return n < MT_CHECK_PP_MIN ? (pp < MT_CHECK_PP_MIN ? pp : MT_CHECK_PP_MIN) : n;
}

int mt_check_run(MPI_Comm comm, const mt_clock_t *g, const mt_offset_alg_t *oalg, int npp, const double *wait_s,
                 int nwait, int sample_n, uint64_t seed, int lazy, mt_check_t *out, char *err)
{
    return mt_check_run_ex(comm, g, oalg, npp, wait_s, nwait, sample_n, seed, lazy, MT_CHECK_TRIES, MT_CHECK_GAP_S, 0,
                           out, err);
}

int mt_check_run_ex(MPI_Comm comm, const mt_clock_t *g, const mt_offset_alg_t *oalg, int npp, const double *wait_s,
                    int nwait, int sample_n, uint64_t seed, int lazy, int tries, double gap_s, double budget_s,
                    mt_check_t *out, char *err)
{
    memset(out, 0, sizeof *out);
    mt_pp_t pp;
    int rc = mt_pp_open(&pp, comm, lazy, err);
    if (rc != MT_OK) return rc;
    int p = pp.size, r = pp.rank;
    for (int i = 0; i < nwait; i++)
        if (wait_s[i] < 0 || (i && wait_s[i] < wait_s[i - 1])) {
            mt_pp_close(&pp);
            return mt_fail(err, MT_EINVAL, "invalid wait time %g s (item %d): wait times must be >= 0 and ascending",
                           wait_s[i], i + 1);
        }
    int ns = p - 1;
    if (sample_n > 0 && sample_n < ns) ns = sample_n;
    out->nwait = nwait;
    out->nsample = ns;
    out->wait_s = malloc(sizeof(double) * (size_t)(nwait ? nwait : 1));
    out->sample = malloc(sizeof(int) * (size_t)(p));
    out->offset_s = calloc((size_t)(nwait ? nwait : 1) * (size_t)(ns ? ns : 1), sizeof(double));
    double *mine = malloc(sizeof(double) * (size_t)(nwait ? nwait : 1));
    double *all = r == 0 ? malloc(sizeof(double) * (size_t)(nwait ? nwait : 1) * (size_t)p) : NULL;
    if (!out->wait_s || !out->sample || !out->offset_s || !mine || (r == 0 && !all))
        mt_check_mpi(MPI_ERR_NO_MEM, "accuracy-check buffers");
    memcpy(out->wait_s, wait_s, sizeof(double) * (size_t)nwait);
    /* the sample: ranks 1..p-1, shuffled with the seed, first ns of them, sorted */
    int *perm = out->sample;
    for (int i = 0; i < p - 1; i++) perm[i] = i + 1;
    if (ns < p - 1) {
        mt_rng_t rng;
        mt_rng_seed(&rng, seed);
        mt_shuffle_int(&rng, perm, p - 1);
        qsort(perm, (size_t)ns, sizeof(int), cmp_int);
    }
    int busy = !lazy;
    double t_start = r == 0 ? mt_clock_now(g) : 0;
    for (int w = 0; w < nwait; w++) {
        if (r == 0) wait_until(g, t_start + wait_s[w], busy);
        mt_offset_res_t o;
        mine[w] = NAN;
        for (int i = 0; i < ns; i++) {
            int c = perm[i];
            if (r == 0 || r == c) {
                /* MT_CHECK_TRIES measurements MT_CHECK_GAP_S apart, the one
                 * with the fastest round trip counts: when both ranks share
                 * a core (a loaded machine) every ping-pong of one
                 * measurement is slow and its offset biased by ~1.5 us,
                 * which would be blamed on the clock model */
                double best = INFINITY, t_rank = r == 0 ? mt_clock_now(g) : 0;
                for (int t = 0; t < tries; t++) {
                    if (t > 0 && budget_s > 0) {
                        /* a budget: rank 0 stops this rank's tries when the next one would pass its
                         * share of it (the tries took longer than estimated: the load changed) */
                        double go = 1;
                        if (r == 0) {
                            double spent = mt_clock_now(g) - t_rank;
                            go = spent + spent / t + gap_s <= budget_s / ns;
                            mt_pp_send(&pp, &go, 1, c, MT_CHECK_TAG_GO);
                        } else {
                            mt_pp_recv_lazy(&pp, &go, 1, 0, MT_CHECK_TAG_GO);
                        }
                        if (go == 0) break;
                    }
                    if (t > 0 && r == 0) wait_until(g, mt_clock_now(g) + gap_s, busy);
                    oalg->measure(&pp, g, 0, c, npp, &o);
                    if (r == c && o.rtt_min < best) {
                        best = o.rtt_min;
                        mine[w] = o.offset;
                    }
                }
            }
        }
    }
    mt_check_mpi(MPI_Gather(mine, nwait, MPI_DOUBLE, all, nwait, MPI_DOUBLE, 0, pp.comm), "MPI_Gather");
    if (r == 0)
        for (int w = 0; w < nwait; w++)
            for (int i = 0; i < ns; i++) out->offset_s[(size_t)w * ns + i] = all[(size_t)perm[i] * nwait + w];
    free(mine);
    free(all);
    mt_pp_close(&pp);
    return MT_OK;
}
