/* mpitempo: Mean-RTT-Offset of Jones and Koenig (Hunold and Carpen-Amarie 2018, Algorithm 8):
 * the RTT to a partner is measured once, then the offset is the median of
 * local - ref - rtt/2 over npp synchronous exchanges.
 *
 * rtt=mean (set by fit=paper) is Algorithm 8 as specified: the MEAN of npp
 * ping-pongs, measured once per partner (have_rtt) and reused. rtt=median
 * (default) is the following variant:
 *
 * The RTT measurement starts with an untimed hand-shake (the reference may be
 * busy with another client for milliseconds: the first ping-pong would wait
 * for it) and takes the MEDIAN of npp timed round trips, not their mean: one
 * preempted round trip must not move rtt/2. It is measured in every call,
 * right before the exchanges, not cached per partner as in the paper: the
 * load under which a cached RTT was taken need not be the load of a later fit
 * point. (With the mean, no hand-shake and the cache, rank 2 of a JK sync on 3
 * ranks ended up milliseconds off; with the cache alone, HCA on 5
 * oversubscribed ranks 0.35-1.4 ms.) */
#include "clock/offset.h"
#include "base/mt_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_RTT 801
#define TAG_MR 802

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mt_offset_meanrtt_core(const double *local, const double *ref, int n, double rtt, double *ts)
{
    double *v = malloc(sizeof(double) * (size_t)n), *s = malloc(sizeof(double) * (size_t)n);
    if (!v || !s) {
        free(v);
        free(s);
        *ts = local[n - 1];
        return local[n - 1] - ref[n - 1] - 0.5 * rtt;
    }
    for (int i = 0; i < n; i++) s[i] = v[i] = local[i] - ref[i] - 0.5 * rtt;
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double med = s[(n - 1) / 2];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] == med) {
            k = i;
            break;
        }
    *ts = local[k];
    free(v);
    free(s);
    return med;
}

double mt_rtt_median(double *rtt, int n)
{
    if (n <= 0) return 0;
    qsort(rtt, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? rtt[n / 2] : 0.5 * (rtt[n / 2 - 1] + rtt[n / 2]);
}

double mt_meanrtt_spread(double rtt_est, double rtt_min, double exch_rtt)
{
    double a = rtt_est - rtt_min, b = exch_rtt - rtt_min;
    double m = a > b ? a : b;
    return m > 0 ? 0.5 * m : 0.0;
}

int mt_meanrtt_below_accuracy(int n, int npre, double spread_sum)
{
    if (n <= 0) return 0;
    return npre > MT_MEANRTT_MAX_PREEMPTED * n || spread_sum / n > MT_MEANRTT_TOL_S;
}

/* RTT to the reference as seen by the client. MT_RTT_MEDIAN: an untimed hand-shake, then the
 * median of npp timed ping-pongs; MT_RTT_MEAN (the paper's measure_rtt): the mean of npp timed
 * ping-pongs, the first included. The reference echoes. Both sides return the same value (the
 * client sends it); *min gets the fastest round trip (client side). */
static double measure_rtt(mt_pp_t *pp, const mt_clock_t *clk, int ref, int client, int npp, double *min)
{
    double d = 0;
    int mean = pp->rtt_mode == MT_RTT_MEAN;
    if (pp->rank == ref) {
        if (!mean) {
            mt_pp_recv_lazy(pp, &d, 1, client, TAG_RTT); /* hand-shake: the client waits here, untimed */
            mt_pp_send(pp, &d, 1, client, TAG_RTT);
        }
        for (int i = 0; i < npp; i++) {
            if (mean && i == 0) mt_pp_recv_lazy(pp, &d, 1, client, TAG_RTT);
            else mt_pp_recv(pp, &d, 1, client, TAG_RTT);
            mt_pp_send(pp, &d, 1, client, TAG_RTT);
        }
        mt_pp_recv(pp, &d, 1, client, TAG_RTT);
        return d;
    }
    double *r = malloc(sizeof(double) * (size_t)npp);
    if (!r) mt_check_mpi(MPI_ERR_NO_MEM, "Mean-RTT-Offset buffer");
    if (!mean) {
        mt_pp_send(pp, &d, 1, ref, TAG_RTT);
        mt_pp_recv_lazy(pp, &d, 1, ref, TAG_RTT);
    }
    double sum = 0;
    for (int i = 0; i < npp; i++) {
        double t0 = mt_clock_now(clk);
        mt_pp_send(pp, &d, 1, ref, TAG_RTT);
        mt_pp_recv(pp, &d, 1, ref, TAG_RTT);
        r[i] = mt_clock_now(clk) - t0;
        sum += r[i];
    }
    double rtt = mean ? sum / npp : mt_rtt_median(r, npp);
    double mn = r[0];
    for (int i = 1; i < npp; i++)
        if (r[i] < mn) mn = r[i];
    *min = mn;
    free(r);
    mt_pp_send(pp, &rtt, 1, ref, TAG_RTT);
    return rtt;
}

static void meanrtt_measure(mt_pp_t *pp, const mt_clock_t *clk, int ref, int client, int npp, mt_offset_res_t *out)
{
    memset(out, 0, sizeof *out);
    int other = pp->rank == ref ? client : ref;
    /* rtt=median: both sides take part in the RTT measurement in every call. The paper
     * measures it once per partner (have_rtt) and reuses it (rtt=mean does), but an RTT
     * measured under other load (HCA: the slopes are measured by many pairs at once, the
     * intercepts one pair at a time) is off by hundreds of us on a busy or oversubscribed
     * machine, and rtt/2 goes into every offset. pp->rtt_min[] keeps the fastest round trip
     * seen with each partner (for the spread). */
    double mn = 0;
    if (pp->rtt_mode != MT_RTT_MEAN || pp->rtt[other] < 0) {
        pp->rtt[other] = measure_rtt(pp, clk, ref, client, npp, &mn);
        if (pp->rank == client) pp->rtt[pp->size + other] = mn;
    }
    if (pp->rank == ref) {
        double dummy, tlocal;
        for (int i = 0; i < npp; i++) {
            if (i == 0) mt_pp_recv_lazy(pp, &dummy, 1, client, TAG_MR);
            else mt_pp_recv(pp, &dummy, 1, client, TAG_MR);
            tlocal = mt_clock_now(clk);
            mt_pp_ssend(pp, &tlocal, 1, client, TAG_MR);
        }
    } else if (pp->rank == client) {
        double *local = malloc(sizeof(double) * 3 * (size_t)npp);
        if (!local) mt_check_mpi(MPI_ERR_NO_MEM, "Mean-RTT-Offset buffer");
        double *reft = local + npp, *sent = reft + npp, dummy = 0;
        for (int i = 0; i < npp; i++) {
            sent[i] = mt_clock_now(clk); /* not in the paper: the exchange's own round trip, for the spread */
            mt_pp_ssend(pp, &dummy, 1, ref, TAG_MR);
            mt_pp_recv(pp, &reft[i], 1, ref, TAG_MR);
            local[i] = mt_clock_now(clk);
        }
        double rtt = pp->rtt[other];
        out->rtt_min = rtt;
        out->offset = mt_offset_meanrtt_core(local, reft, npp, rtt, &out->timestamp);
        double fastest = pp->rtt[pp->size + other], exch = 0, emin = 1e300;
        for (int i = 0; i < npp; i++) {
            double e = local[i] - sent[i];
            if (e < emin) emin = e;
            if (local[i] == out->timestamp) exch = e;
        }
        if (emin < fastest) fastest = emin;
        out->spread = mt_meanrtt_spread(rtt, fastest, exch);
        out->preempted = out->spread > MT_MEANRTT_TOL_S;
        const char *tr = getenv("MPITEMPO_CLOCK_TRACE");
        if (tr && tr[0] == '1')
            fprintf(stderr, "trace meanrtt ref=%d client=%d rtt=%.9e rtt_fastest=%.9e exch_min=%.9e exch=%.9e off=%.9e spread=%.9e\n",
                    ref, client, rtt, pp->rtt[pp->size + other], emin, exch, out->offset, out->spread);
        free(local);
    }
}

const mt_offset_alg_t mt_offset_meanrtt = {
    "meanrtt", "Mean-RTT-Offset (Jones & Koenig): median of local - ref - RTT/2 over the ping-pongs (RTT: median after a hand-shake, or rtt=mean as in the paper)",
    meanrtt_measure};
