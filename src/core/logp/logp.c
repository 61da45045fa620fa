/* mpitempo: LogP/LogGP parameters of rank pairs (logp.h). */
#define _GNU_SOURCE
#include "logp/logp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "base/mt_mpi.h"

enum { TAG_PP = 1, TAG_GO = 2, TAG_MSG = 3, TAG_ACK = 4, TAG_OR = 5 };

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double mt_logp_quantile_sorted(const double *v, int64_t n, double q)
{
    if (n <= 0) return NAN;
    double pos = q * (double)(n - 1);
    int64_t i = (int64_t)floor(pos);
    if (i >= n - 1) return v[n - 1];
    double f = pos - (double)i;
    return v[i] + f * (v[i + 1] - v[i]);
}

void mt_logp_median_iqr(double *v, int64_t n, double *median, double *iqr)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    *median = mt_logp_quantile_sorted(v, n, 0.5);
    *iqr = mt_logp_quantile_sorted(v, n, 0.75) - mt_logp_quantile_sorted(v, n, 0.25);
}

double mt_logp_slope(const double *x, const double *y, int n)
{
    if (n < 2) return NAN;
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxy = 0, sxx = 0;
    for (int i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
    }
    return sxx > 0 ? sxy / sxx : NAN;
}

void mt_logp_derive(mt_logp_pair_t *p, double train1, double traink, int k, const int64_t *msizes, int nsizes)
{
    p->L = p->rtt / 2.0 - p->o_s - p->o_r;
    p->g = k > 1 ? (traink - train1) / (double)(k - 1) : NAN;
    p->G = NAN;
    if (nsizes >= 2 && msizes && p->rtt_m) {
        double x[64], y[64];
        int n = nsizes < 64 ? nsizes : 64;
        for (int i = 0; i < n; i++) {
            x[i] = (double)msizes[i];
            y[i] = p->rtt_m[i] / 2.0;
        }
        p->G = mt_logp_slope(x, y, n);
    }
}

int mt_logp_sane(const mt_logp_pair_t *p, char *err)
{
    if (!(p->L >= -0.1 * p->rtt / 2)) /* 10% of RTT/2 for timer noise: L is about 0 in shared memory */
        return mt_fail(err, MT_EINVAL,
                       "LogP sanity check failed for ranks %d-%d: L = %.3f us < 0 (RTT/2 = %.3f us is less than "
                       "o_s + o_r = %.3f + %.3f us)",
                       p->a, p->b, p->L * 1e6, p->rtt / 2 * 1e6, p->o_s * 1e6, p->o_r * 1e6);
    if (!(p->g >= 0.9 * p->o_s))
        return mt_fail(err, MT_EINVAL,
                       "LogP sanity check failed for ranks %d-%d: g = %.3f us < o_s = %.3f us (a message train "
                       "cannot be faster than its sender posts messages)",
                       p->a, p->b, p->g * 1e6, p->o_s * 1e6);
    return MT_OK;
}

static void spin(const mt_timer_inst_t *t, int64_t ticks)
{
    int64_t t0 = t->t->now();
    mt_sim_skip((double)ticks / t->ticks_per_s);
    while (t->t->now() - t0 < ticks) {
    }
}

#define CK(call, what) mt_check_mpi((call), what)

int mt_logp_measure_pair(MPI_Comm comm, int a, int b, const mt_logp_cfg_t *c, const mt_timer_inst_t *t,
                         double *samples, mt_logp_pair_t *out, char *err)
{
    int me;
    MPI_Comm_rank(comm, &me);
    int is_a = me == a, peer = is_a ? b : a;
    int64_t n = c->nrep, maxm = 4;
    for (int i = 0; i < c->nsizes; i++)
        if (c->msizes[i] > maxm) maxm = c->msizes[i];
    char *buf = malloc((size_t)maxm);
    double *tmp = malloc(sizeof(double) * (size_t)n);
    double *rtt_m = is_a && c->nsizes ? calloc((size_t)c->nsizes, sizeof(double)) : NULL;
    if (!buf || !tmp || (is_a && c->nsizes && !rtt_m)) {
        free(buf);
        free(tmp);
        free(rtt_m);
        return mt_fail(err, MT_ENOMEM, "out of memory for the LogP measurement");
    }
    memset(buf, 1, (size_t)maxm);
    int v = 0, w = 0;
    double *s_rtt = samples, *s_os = samples + n, *s_or = samples + 2 * n, *s_t1 = samples + 3 * n,
           *s_tk = samples + 4 * n;
    /* warm-up ping-pongs */
    for (int64_t i = 0; i < c->warmup; i++) {
        if (is_a) {
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_PP, comm), "MPI_Send");
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_PP, comm), "MPI_Send");
        }
    }
    /* RTT */
    for (int64_t i = 0; i < n; i++) {
        if (is_a) {
            int64_t t0 = t->t->now();
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_PP, comm), "MPI_Send");
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            s_rtt[i] = mt_ticks_to_s(t, t->t->now() - t0) - c->timer_ov_s;
        } else {
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_PP, comm), "MPI_Send");
        }
    }
    double rtt_med = 0, dummy;
    if (is_a) {
        memcpy(tmp, s_rtt, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &rtt_med, &dummy);
    }
    /* the peer needs the RTT for the o_r wait */
    if (is_a) CK(MPI_Send(&rtt_med, 1, MPI_DOUBLE, peer, TAG_GO, comm), "MPI_Send");
    else CK(MPI_Recv(&rtt_med, 1, MPI_DOUBLE, peer, TAG_GO, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    /* o_s: b has posted its receive and says go; a times MPI_Send */
    for (int64_t i = 0; i < n; i++) {
        if (is_a) {
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_GO, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            int64_t t0 = t->t->now();
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_MSG, comm), "MPI_Send");
            s_os[i] = mt_ticks_to_s(t, t->t->now() - t0) - c->timer_ov_s;
        } else {
            MPI_Request rq;
            CK(MPI_Irecv(&w, 1, MPI_INT, peer, TAG_MSG, comm, &rq), "MPI_Irecv");
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_GO, comm), "MPI_Send");
            CK(MPI_Wait(&rq, MPI_STATUS_IGNORE), "MPI_Wait");
        }
    }
    /* o_r: a sends after a hand-shake; b waits 4 RTT (the message has arrived), then times MPI_Recv */
    int64_t wait_ticks = (int64_t)(4.0 * rtt_med * t->ticks_per_s);
    for (int64_t i = 0; i < n; i++) {
        if (is_a) {
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_GO, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_MSG, comm), "MPI_Send");
        } else {
            CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_GO, comm), "MPI_Send");
            spin(t, wait_ticks);
            if (c->or_probe) {
                int flag = 0;
                while (!flag) CK(MPI_Iprobe(peer, TAG_MSG, comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
            }
            int64_t t0 = t->t->now();
            CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_MSG, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            tmp[i] = mt_ticks_to_s(t, t->t->now() - t0) - c->timer_ov_s;
        }
    }
    if (is_a) CK(MPI_Recv(s_or, (int)n, MPI_DOUBLE, peer, TAG_OR, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    else CK(MPI_Send(tmp, (int)n, MPI_DOUBLE, peer, TAG_OR, comm), "MPI_Send");
    /* trains of 1 and K messages, each answered by one ack */
    for (int pass = 0; pass < 2; pass++) {
        int k = pass == 0 ? 1 : c->train;
        double *dst = pass == 0 ? s_t1 : s_tk;
        for (int64_t i = 0; i < n; i++) {
            if (is_a) {
                int64_t t0 = t->t->now();
                for (int q = 0; q < k; q++) CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_MSG, comm), "MPI_Send");
                CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_ACK, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                dst[i] = mt_ticks_to_s(t, t->t->now() - t0) - c->timer_ov_s;
            } else {
                for (int q = 0; q < k; q++)
                    CK(MPI_Recv(&w, 1, MPI_INT, peer, TAG_MSG, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                CK(MPI_Send(&v, 1, MPI_INT, peer, TAG_ACK, comm), "MPI_Send");
            }
        }
    }
    /* RTT per message size (LogGP's G) */
    for (int si = 0; si < c->nsizes; si++) {
        int m = (int)c->msizes[si];
        for (int64_t i = 0; i < n + c->warmup; i++) {
            if (is_a) {
                int64_t t0 = t->t->now();
                CK(MPI_Send(buf, m, MPI_BYTE, peer, TAG_PP, comm), "MPI_Send");
                CK(MPI_Recv(buf, m, MPI_BYTE, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                if (i >= c->warmup) tmp[i - c->warmup] = mt_ticks_to_s(t, t->t->now() - t0) - c->timer_ov_s;
            } else {
                CK(MPI_Recv(buf, m, MPI_BYTE, peer, TAG_PP, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                CK(MPI_Send(buf, m, MPI_BYTE, peer, TAG_PP, comm), "MPI_Send");
            }
        }
        if (is_a) mt_logp_median_iqr(tmp, n, &rtt_m[si], &dummy);
    }
    if (is_a) {
        memset(out, 0, sizeof *out);
        out->a = a;
        out->b = b;
        double t1, tk, iq;
        memcpy(tmp, s_rtt, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &out->rtt, &out->rtt_iqr);
        memcpy(tmp, s_os, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &out->o_s, &out->o_s_iqr);
        memcpy(tmp, s_or, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &out->o_r, &out->o_r_iqr);
        memcpy(tmp, s_t1, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &t1, &iq);
        memcpy(tmp, s_tk, sizeof(double) * (size_t)n);
        mt_logp_median_iqr(tmp, n, &tk, &iq);
        out->g_iqr = c->train > 1 ? iq / (double)(c->train - 1) : NAN;
        out->rtt_m = rtt_m;
        mt_logp_derive(out, t1, tk, c->train, c->msizes, c->nsizes);
    }
    free(buf);
    free(tmp);
    return MT_OK;
}
