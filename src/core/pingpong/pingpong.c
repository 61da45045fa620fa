/* mpitempo: the ping-pong method of Luecke et al. 2009 (see pingpong.h). */
#define _GNU_SOURCE
#include "pingpong/pingpong.h"
#include "base/mt_mpi.h"
#include "base/mt_common.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- pure parts ---- */

int64_t mt_pp_nint(double x)
{
    return (int64_t)(x >= 0 ? floor(x + 0.5) : -floor(-x + 0.5));
}

int64_t mt_pp_npp_from(double res_npp, double res_timing_s, double median_ppt_s)
{
    if (!(median_ppt_s > 0)) return res_timing_s > 0 ? MT_PP_NPP_MAX : 1;
    double x = res_npp * res_timing_s / median_ppt_s;
    if (!(x > 1.0)) x = 1.0;                     /* max(1.d0, ...) */
    if (x > (double)MT_PP_NPP_MAX) return MT_PP_NPP_MAX;
    return mt_pp_nint(x);
}

double mt_pp_median(const double *v, int64_t n)
{
    if (n <= 0) return NAN;
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return NAN;
    memcpy(c, v, sizeof(double) * (size_t)n);
    double m = mt_median_inplace(c, (int)n);
    free(c);
    return m;
}

void mt_pp_defaults(mt_pp_cfg_t *c, int nprocs)
{
    if (c->source < 0) c->source = 0;
    if (c->dest < 0) c->dest = nprocs - 1;
}

int mt_pp_validate(const mt_pp_cfg_t *c, int nprocs, char *err)
{
    if (nprocs < 2)
        return mt_fail(err, MT_EINVAL,
                       "ping-pong needs at least 2 ranks, but the job has %d (start it with mpiexec -n 2 or more; "
                       "a job of 1 may also mean the wrong mpiexec)",
                       nprocs);
    if (c->source < 0 || c->source >= nprocs)
        return mt_fail(err, MT_EINVAL, "invalid --source %d: the job has %d ranks (allowed: 0..%d)", c->source,
                       nprocs, nprocs - 1);
    if (c->dest < 0 || c->dest >= nprocs)
        return mt_fail(err, MT_EINVAL, "invalid --dest %d: the job has %d ranks (allowed: 0..%d)", c->dest, nprocs,
                       nprocs - 1);
    if (c->source == c->dest)
        return mt_fail(err, MT_EINVAL, "--source and --dest are both rank %d: they must differ", c->source);
    if (c->ntrial < 1) return mt_fail(err, MT_EINVAL, "invalid --ntrial %lld: must be >= 1", (long long)c->ntrial);
    if (c->npp < 0) return mt_fail(err, MT_EINVAL, "invalid --npp %lld: must be >= 1", (long long)c->npp);
    for (int i = 0; i < c->nsweep; i++)
        if (c->npp_sweep[i] < 1)
            return mt_fail(err, MT_EINVAL, "invalid --npp-sweep value %lld: npp must be >= 1",
                           (long long)c->npp_sweep[i]);
    if (c->npp_init < 1)
        return mt_fail(err, MT_EINVAL, "invalid --npp-init %lld: must be >= 1", (long long)c->npp_init);
    if (c->npptrial < 1)
        return mt_fail(err, MT_EINVAL, "invalid --npptrial %lld: must be >= 1", (long long)c->npptrial);
    if (!(c->res_npp > 0) || !isfinite(c->res_npp))
        return mt_fail(err, MT_EINVAL, "invalid --res-npp %g: must be > 0", c->res_npp);
    return MT_OK;
}

int64_t mt_pp_loop_iters(const mt_pp_cfg_t *c, int64_t msize)
{
    if (c->loop_iters > 0) return c->loop_iters;
    return msize <= 8192 ? 10000 : 1000; /* osu_latency's defaults */
}

int64_t mt_pp_trials_for(const mt_pp_cfg_t *c, int64_t npp)
{
    int64_t n = c->ntrial;
    if (c->max_pp > 0 && npp > 0 && n > c->max_pp / npp) n = c->max_pp / npp;
    return n < 1 ? 1 : n;
}

/* ---- timer study ---- */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mt_pp_tstudy_free(mt_pp_tstudy_t *s)
{
    free(s->hist);
    free(s->over);
    s->hist = s->over = NULL;
}

int mt_pp_timer_study(const mt_timer_inst_t *ti, int64_t n, mt_pp_tstudy_t *s, char *err)
{
    memset(s, 0, sizeof *s);
    s->hist = calloc(MT_PP_HIST_BINS, sizeof(int64_t));
    s->nover_cap = (int64_t)1 << 22;
    int64_t over_alloc = 4096;
    s->over = malloc(sizeof(int64_t) * (size_t)over_alloc);
    if (!s->hist || !s->over) {
        mt_pp_tstudy_free(s);
        return mt_fail(err, MT_ENOMEM, "out of memory for the timer study");
    }
    int64_t (*now)(void) = ti->t->now;
    int64_t minpos = INT64_MAX, minnn = INT64_MAX, mx = INT64_MIN;
    double sum = 0, sumsq = 0;
    double w0 = wall_s();
    for (int64_t i = 0; i < n; i++) {
        int64_t t1 = now();
        int64_t t2 = now();
        int64_t d = t2 - t1;
        if (d > mx) mx = d;
        if (d < 0) {
            s->negative++;
            continue;
        }
        if (d < minnn) minnn = d;
        if (d > 0 && d < minpos) minpos = d;
        sum += (double)d;
        sumsq += (double)d * (double)d;
        if (d < MT_PP_HIST_BINS) {
            s->hist[d]++;
        } else if (s->nover < s->nover_cap) {
            if (s->nover == over_alloc) {
                int64_t *no = realloc(s->over, sizeof(int64_t) * (size_t)(over_alloc * 2));
                if (!no) {
                    s->nover_dropped++;
                    continue;
                }
                s->over = no;
                over_alloc *= 2;
            }
            s->over[s->nover++] = d;
        } else {
            s->nover_dropped++;
        }
    }
    s->seconds = wall_s() - w0;
    s->n = n;
    s->res_ticks = minpos == INT64_MAX ? 0 : minpos; /* the paper: 0 if every time was 0 */
    s->min_ov_ticks = minnn == INT64_MAX ? 0 : minnn;
    s->max_ticks = n > 0 ? mx : 0;
    s->sum_ticks = sum;
    s->sumsq_ticks = sumsq;
    return MT_OK;
}

/* ---- MPI parts ---- */

/* page-aligned buffers, as osu_latency's (posix_memalign to the page size): the
 * message starts at the same place in its page in every run, and a single-copy
 * transport (Linux CMA) maps the fewest pages (64 KiB: 16, not 17) */
static void *page_alloc(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t align = pg > 0 ? (size_t)pg : 4096;
    void *p = NULL;
    return posix_memalign(&p, align, n > 0 ? n : align) == 0 ? p : NULL;
}

int mt_pp_pair_init(mt_pp_pair_t *p, MPI_Comm world, const mt_pp_cfg_t *c, const mt_timer_inst_t *ti,
                    int64_t max_msize, char *err)
{
    int rank;
    memset(p, 0, sizeof *p);
    p->world = world;
    p->pair = MPI_COMM_NULL;
    p->ti = ti;
    mt_check_mpi(MPI_Comm_rank(world, &rank), "MPI_Comm_rank");
    p->role = rank == c->source ? 0 : rank == c->dest ? 1 : -1;
    /* key orders the pair as (source, dest): source is 0 in pair */
    mt_check_mpi(MPI_Comm_split(world, p->role >= 0 ? 0 : MPI_UNDEFINED, p->role >= 0 ? p->role : 0, &p->pair),
                 "MPI_Comm_split");
    p->peer = p->role == 0 ? 1 : 0;
    p->bar = c->barrier_all ? world : p->pair;
    if (max_msize > INT_MAX) return mt_fail(err, MT_EINVAL, "message size %lld is above INT_MAX", (long long)max_msize);
    p->buflen = max_msize < 8 ? 8 : max_msize;
    if (p->role >= 0) {
        /* two arrays always (the bidirectional exchange needs a receive buffer apart from the send
         * buffer); with --buffers one the ping-pongs use the first for both directions */
        p->sbuf = page_alloc((size_t)p->buflen);
        p->xbuf = page_alloc((size_t)p->buflen);
        if (!p->sbuf || !p->xbuf)
            return mt_fail(err, MT_ENOMEM, "out of memory for a %lld-byte buffer", (long long)p->buflen);
        memset(p->sbuf, 1, (size_t)p->buflen); /* touch every page before timing */
        memset(p->xbuf, 2, (size_t)p->buflen);
        p->rbuf = c->one_buffer ? p->sbuf : p->xbuf;
    }
    return MT_OK;
}

void mt_pp_pair_free(mt_pp_pair_t *p)
{
    if (p->pair != MPI_COMM_NULL) mt_check_mpi(MPI_Comm_free(&p->pair), "MPI_Comm_free");
    free(p->sbuf);
    free(p->xbuf);
    p->sbuf = p->rbuf = p->xbuf = NULL;
}

void mt_pp_sleepy_barrier(MPI_Comm world)
{
    MPI_Request req;
    int done = 0;
    struct timespec nap = {0, 20000}; /* 20 us */
    if (MT_SIMULATED) { /* SMPI: a blocked rank costs nothing, a nap a simulation step */
        mt_check_mpi(MPI_Barrier(world), "MPI_Barrier");
        return;
    }
    mt_check_mpi(MPI_Ibarrier(world, &req), "MPI_Ibarrier");
    for (;;) {
        mt_check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) break;
        nanosleep(&nap, NULL);
    }
}

void mt_pp_warmup(mt_pp_pair_t *p, int64_t msize, int64_t n)
{
    int cnt = (int)msize;
    for (int64_t i = 0; i < n; i++) {
        if (p->role == 0) {
            mt_check_mpi(MPI_Send(p->sbuf, cnt, MPI_BYTE, p->peer, MT_PP_TAG, p->pair), "MPI_Send");
            mt_check_mpi(MPI_Recv(p->rbuf, cnt, MPI_BYTE, p->peer, MT_PP_TAG, p->pair, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            mt_check_mpi(MPI_Recv(p->rbuf, cnt, MPI_BYTE, p->peer, MT_PP_TAG, p->pair, MPI_STATUS_IGNORE), "MPI_Recv");
            mt_check_mpi(MPI_Send(p->sbuf, cnt, MPI_BYTE, p->peer, MT_PP_TAG, p->pair), "MPI_Send");
        }
    }
}

void mt_pp_trials(mt_pp_pair_t *p, int64_t msize, int64_t npp, int64_t ntrial, int64_t min_ov_ticks,
                  int64_t *ticks)
{
    int64_t (*now)(void) = p->ti->t->now;
    int cnt = (int)msize, peer = p->peer, rc = MPI_SUCCESS;
    unsigned char *sb = p->sbuf, *rb = p->rbuf;
    MPI_Comm comm = p->pair;
    for (int64_t k = 0; k < ntrial; k++) {
        mt_check_mpi(MPI_Barrier(p->bar), "MPI_Barrier");
        if (p->role == 0) {
            /* hand-shake: the dest has left the barrier and is about to post its receive */
            mt_check_mpi(MPI_Recv(rb, 8, MPI_BYTE, peer, MT_PP_TAG_HS, comm, MPI_STATUS_IGNORE), "MPI_Recv (hand-shake)");
            int64_t t1 = now();
            for (int64_t i = 0; i < npp; i++) {
                if ((rc = MPI_Send(sb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm)) != MPI_SUCCESS) break;
                if ((rc = MPI_Recv(rb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, MPI_STATUS_IGNORE)) != MPI_SUCCESS) break;
            }
            int64_t t2 = now();
            mt_check_mpi(rc, "MPI_Send/MPI_Recv (ping-pong)");
            ticks[k] = t2 - t1 - min_ov_ticks;
        } else {
            mt_check_mpi(MPI_Send(sb, 8, MPI_BYTE, peer, MT_PP_TAG_HS, comm), "MPI_Send (hand-shake)");
            for (int64_t i = 0; i < npp; i++) {
                if ((rc = MPI_Recv(rb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, MPI_STATUS_IGNORE)) != MPI_SUCCESS) break;
                if ((rc = MPI_Send(sb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm)) != MPI_SUCCESS) break;
            }
            mt_check_mpi(rc, "MPI_Recv/MPI_Send (ping-pong)");
        }
    }
}

void mt_pp_idle_trials(mt_pp_pair_t *p, int64_t ntrial)
{
    for (int64_t k = 0; k < ntrial; k++) mt_check_mpi(MPI_Barrier(p->world), "MPI_Barrier");
}

void mt_pp_bidir_trials(mt_pp_pair_t *p, int64_t msize, int64_t npp, int64_t ntrial, int64_t min_ov_ticks,
                        int64_t *ticks)
{
    int64_t (*now)(void) = p->ti->t->now;
    int cnt = (int)msize, peer = p->peer, rc = MPI_SUCCESS;
    unsigned char *out = p->sbuf, *in = p->xbuf;
    MPI_Comm comm = p->pair;
    for (int64_t k = 0; k < ntrial; k++) {
        mt_check_mpi(MPI_Barrier(p->bar), "MPI_Barrier");
        if (p->role == 0)
            mt_check_mpi(MPI_Recv(in, 8, MPI_BYTE, peer, MT_PP_TAG_HS, comm, MPI_STATUS_IGNORE), "MPI_Recv (hand-shake)");
        else
            mt_check_mpi(MPI_Send(out, 8, MPI_BYTE, peer, MT_PP_TAG_HS, comm), "MPI_Send (hand-shake)");
        int64_t t1 = now();
        for (int64_t i = 0; i < npp && rc == MPI_SUCCESS; i++) {
            MPI_Request req[2];
            if ((rc = MPI_Irecv(in, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, &req[0])) != MPI_SUCCESS) break;
            if ((rc = MPI_Isend(out, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, &req[1])) != MPI_SUCCESS) break;
            rc = MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        }
        int64_t t2 = now();
        mt_check_mpi(rc, "MPI_Irecv/MPI_Isend/MPI_Waitall (bidirectional)");
        if (p->role == 0) ticks[k] = t2 - t1 - min_ov_ticks;
    }
}

void mt_pp_loop(mt_pp_pair_t *p, int64_t msize, int64_t skip, int64_t iters, int64_t *ticks)
{
    int64_t (*now)(void) = p->ti->t->now;
    int cnt = (int)msize, peer = p->peer, rc = MPI_SUCCESS;
    unsigned char *sb = p->sbuf, *rb = p->rbuf;
    MPI_Comm comm = p->pair;
    int64_t t1 = 0;
    mt_check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    if (p->role == 0) {
        for (int64_t i = 0; i < skip + iters; i++) {
            if (i == skip) t1 = now();
            if ((rc = MPI_Send(sb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm)) != MPI_SUCCESS) break;
            if ((rc = MPI_Recv(rb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, MPI_STATUS_IGNORE)) != MPI_SUCCESS) break;
        }
        int64_t t2 = now();
        mt_check_mpi(rc, "MPI_Send/MPI_Recv (loop)");
        *ticks = t2 - t1;
    } else {
        for (int64_t i = 0; i < skip + iters; i++) {
            if ((rc = MPI_Recv(rb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm, MPI_STATUS_IGNORE)) != MPI_SUCCESS) break;
            if ((rc = MPI_Send(sb, cnt, MPI_BYTE, peer, MT_PP_TAG, comm)) != MPI_SUCCESS) break;
        }
        mt_check_mpi(rc, "MPI_Recv/MPI_Send (loop)");
    }
}
