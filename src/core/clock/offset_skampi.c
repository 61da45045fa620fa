/* mpitempo: SKaMPI-Offset (Hunold and Carpen-Amarie 2018, Algorithm 7): minima of the one-way
 * differences bound the offset from both sides; the estimate is the middle. */
#include "clock/offset.h"

#include <math.h>

#define TAG_SK 701

double mt_offset_skampi_core(const double *s_last, const double *t_ref, const double *s_now, int n, double *rtt_min)
{
    double td_min = -INFINITY, td_max = INFINITY, rmin = INFINITY;
    for (int i = 0; i < n; i++) {
        double a = t_ref[i] - s_now[i], b = t_ref[i] - s_last[i];
        if (a > td_min) td_min = a;
        if (b < td_max) td_max = b;
        if (s_now[i] - s_last[i] < rmin) rmin = s_now[i] - s_last[i];
    }
    if (rtt_min) *rtt_min = rmin;
    /* (td_min + td_max) / 2 is reference minus client */
    return -0.5 * (td_min + td_max);
}

static void skampi_measure(mt_pp_t *pp, const mt_clock_t *clk, int ref, int client, int npp, mt_offset_res_t *out)
{
    out->timestamp = out->offset = out->rtt_min = 0;
    if (pp->rank == ref) {
        double dummy, t_last;
        for (int i = 0; i < npp; i++) {
            if (i == 0) mt_pp_recv_lazy(pp, &dummy, 1, client, TAG_SK);
            else mt_pp_recv(pp, &dummy, 1, client, TAG_SK);
            t_last = mt_clock_now(clk);
            mt_pp_send(pp, &t_last, 1, client, TAG_SK);
        }
    } else if (pp->rank == client) {
        double td_min = -INFINITY, td_max = INFINITY, rmin = INFINITY;
        for (int i = 0; i < npp; i++) {
            double s_last = mt_clock_now(clk), t_last;
            mt_pp_send(pp, &s_last, 1, ref, TAG_SK);
            if (i == 0) mt_pp_recv_lazy(pp, &t_last, 1, ref, TAG_SK); /* the reference may be busy elsewhere */
            else mt_pp_recv(pp, &t_last, 1, ref, TAG_SK);
            double s_now = mt_clock_now(clk);
            /* the same arithmetic as mt_offset_skampi_core, without arrays */
            if (t_last - s_now > td_min) td_min = t_last - s_now;
            if (t_last - s_last < td_max) td_max = t_last - s_last;
            if (s_now - s_last < rmin) rmin = s_now - s_last;
        }
        out->offset = -0.5 * (td_min + td_max);
        out->timestamp = mt_clock_now(clk);
        out->rtt_min = rmin;
    }
}

const mt_offset_alg_t mt_offset_skampi = {
    "skampi", "SKaMPI-Offset: middle of the tightest one-way bounds over the ping-pongs (minima)", skampi_measure};
