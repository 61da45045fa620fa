/* mpitempo: the point-to-point operations (see op.h) and the synthetic op
 * synbw. One call of each is its timed region; the message size is msize
 * rounded down to whole elements of --datatype: count = floor(msize / type
 * size) elements, and every bytes_per_call below is in effective bytes
 * eff = count x type size (= msize when msize is a multiple of the type size).
 * W is --bw-window (opts->window), p the number of ranks, partner(i) =
 * mt_op_pair_partner(i, p) (i <-> i + p/2). "Idle" ranks return MPI_SUCCESS at
 * once.
 *
 *  bw (OSU osu_bw): rank 0 and partner(0) = p/2. Rank 0 posts W MPI_Isend of
 *    eff bytes, MPI_Waitall, then MPI_Recv of a 4-byte acknowledgement; the
 *    partner posts W MPI_Irecv, MPI_Waitall, MPI_Send of the ack. Other ranks
 *    idle. bytes_per_call = W x eff, msgs_per_call = W.
 *  bibw (OSU osu_bibw): rank 0 and p/2 each post W MPI_Irecv and W MPI_Isend
 *    to the other and one MPI_Waitall of the 2W requests (no ack). Other ranks
 *    idle. bytes_per_call = 2 x W x eff, msgs_per_call = 2W.
 *  mbw_mr (OSU osu_mbw_mr): every pair (rank i < p/2 sends to i + p/2; an even
 *    p: MT_OP_PAIRS) does the bw window with its ack at the same time.
 *    bytes_per_call = p/2 x W x eff, msgs_per_call = p/2 x W.
 *  multi_lat (OSU osu_multi_lat): every pair does one ping-pong round trip:
 *    rank i < p/2 MPI_Send then MPI_Recv, its partner MPI_Recv then MPI_Send
 *    (eff bytes each way). MT_OP_PAIRS. A latency op: bytes_per_call = 0,
 *    msgs_per_call = 0; one call is the round trip (OSU reports half of it).
 *  pingping (IMB PingPing): rank 0 and p/2 each MPI_Isend eff bytes to the
 *    other, MPI_Recv the other's message, MPI_Wait the send. Other ranks idle.
 *    bytes_per_call = eff (IMB: Mbytes/sec = X / t), msgs_per_call = 1.
 *  sendrecv (IMB Sendrecv): all ranks in a periodic ring: one MPI_Sendrecv of
 *    eff bytes to rank+1 and from rank-1. bytes_per_call = 2 x eff (IMB: 2X / t),
 *    msgs_per_call = 2.
 *  exchange (IMB Exchange): every rank MPI_Isend eff bytes to its right and its
 *    left neighbour (periodic), MPI_Recv from the left and then from the right,
 *    MPI_Waitall of the two sends. Buffers as IMB_exchange.c: the two messages
 *    leave from two distinct blocks of the send buffer (right: block 0, left:
 *    block 1) and both arrive in block 0 of the receive buffer (the second
 *    overwrites the first). bytes_per_call = 4 x eff (IMB: 4X / t),
 *    msgs_per_call = 4.
 *  bw_persistent, bibw_persistent, multi_lat_persistent (OSU osu_bw_persistent,
 *    osu_bibw_persistent, osu_latency_persistent): the same messages as bw, bibw
 *    and multi_lat through persistent requests made in setup (MPI_Send_init,
 *    MPI_Recv_init on buffers of the op's own; MPI_Request_free in teardown).
 *    One call: bw_persistent: MPI_Startall of the W sends (receives on p/2),
 *    MPI_Waitall, the 4-byte ack by MPI_Recv/MPI_Send; bibw_persistent:
 *    MPI_Startall of the W receives, of the W sends, MPI_Waitall of the sends,
 *    of the receives; multi_lat_persistent: MPI_Start + MPI_Wait of the send
 *    then of the receive (the partner: receive first). bytes and messages as
 *    the non-persistent ops.
 *  synbw (synthetic, not MPI): every rank busy-waits eff nanoseconds on
 *    a->timer and communicates nothing. bytes_per_call = eff, msgs_per_call =
 *    1: its bandwidth is exactly 1e9 B/s (1000 MB/s) on any machine, a known
 *    answer for tests of the whole pipeline.
 *
 * Buffers: the windowed ops (bw, bibw, mbw_mr) send all W messages from one
 * buffer (MPI allows concurrent sends from one buffer) but receive into W
 * distinct blocks of a window allocated in setup (W x eff bytes): overlapping
 * receive buffers of pending receives are erroneous in MPI, although OSU
 * reuses one receive buffer. --bw-rbuf single does as OSU (one block for all W
 * receives; cache-resident, so faster for large messages: numbers comparable
 * with OSU's). That window is the op's own, so --cache cycle moves the send
 * buffer only for these ops. */
#include "base/mt_common.h"
#include "op/op.h"
#include "timer/timer.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 70, TAG_ACK = 71, TAG_RIGHT = 72, TAG_LEFT = 73 };
enum { ROLE_IDLE, ROLE_FIRST, ROLE_SECOND }; /* ROLE_FIRST: rank i < p/2 of a pair (the sender of bw) */

/* The state of the pair ops: this rank's role, its partner and, for the
 * windowed ops, the receive window and the requests. */
typedef struct p2p_state {
    int role, partner;
    int window;            /* W (windowed ops), else 1 */
    size_t eff;            /* effective bytes per message */
    unsigned char *rwin;   /* W receive blocks of eff bytes (windowed ops, active ranks); 1 with --bw-rbuf single */
    size_t rstep;          /* bytes between the receive blocks: eff, or 0 with --bw-rbuf single */
    MPI_Request *req;      /* 2W requests */
    unsigned char ack[4];
    /* the persistent forms: their requests (made in setup, bound to the op's own buffers) */
    MPI_Request *preq;     /* bw: W sends (first) or W receives (second); bibw: W receives then W sends;
                            * multi_lat: the send, then the receive */
    int npreq;
    unsigned char *psbuf, *prbuf; /* own send buffer (eff bytes); multi_lat: own receive buffer */
} p2p_state_t;

static int one(int p) { (void)p; return 1; }
static int two(int p) { (void)p; return 2; }

static double eff_bytes(const mt_op_args_t *a) { return (double)a->count * (double)a->dtype->size; }

/* pairs: 0 for rank 0 and p/2 only (bw, bibw, pingping), 1 for every pair
 * (mbw_mr, multi_lat: p must be even); windowed: allocate the receive window */
static int setup_pair(mt_op_args_t *a, char *err, int all_pairs, int windowed)
{
    const char *name = a->op->name;
    if (a->size < 2) return mt_fail(err, MT_EINVAL, "op '%s' needs at least 2 ranks, but the job has %d", name, a->size);
    if (all_pairs && a->size % 2)
        return mt_fail(err, MT_EINVAL, "op '%s' pairs rank i with rank i + p/2 and needs an even number of ranks, "
                       "but the job has %d", name, a->size);
    if (windowed && a->opts->window < 1)
        return mt_fail(err, MT_EINVAL, "op '%s': --bw-window must be at least 1 (got %d)", name, a->opts->window);
    p2p_state_t *s = calloc(1, sizeof *s);
    if (!s) return mt_fail(err, MT_ENOMEM, "op '%s': cannot allocate its state", name);
    s->window = windowed ? a->opts->window : 1;
    s->eff = (size_t)a->count * (size_t)a->dtype->size;
    s->partner = mt_op_pair_partner(a->rank, a->size);
    int active = all_pairs ? s->partner >= 0 : (a->rank == 0 || a->rank == mt_op_pair_partner(0, a->size));
    s->role = !active ? ROLE_IDLE : mt_op_pair_first(a->rank, a->size) ? ROLE_FIRST : ROLE_SECOND;
    a->state = s;
    if (!active || !windowed) return MT_OK;
    size_t w = (size_t)s->window, blocks = a->opts->rbuf_single ? 1 : w, bytes = blocks * (s->eff > 0 ? s->eff : 1);
    s->rstep = a->opts->rbuf_single ? 0 : s->eff;
    s->rwin = mt_op_alloc(bytes);
    s->req = malloc(2 * w * sizeof *s->req);
    if (!s->rwin || !s->req)
        return mt_fail(err, MT_ENOMEM, "op '%s': cannot allocate a receive window of %d x %zu bytes", name, s->window,
                       s->eff);
    memset(s->rwin, 0, bytes); /* first-touch page faults stay out of the measurements */
    return MT_OK;
}

static void teardown_pair(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    for (int i = 0; i < s->npreq; i++)
        if (s->preq[i] != MPI_REQUEST_NULL) MPI_Request_free(&s->preq[i]);
    free(s->preq);
    free(s->psbuf);
    free(s->prbuf);
    free(s->rwin);
    free(s->req);
    free(s);
}

/* The persistent requests of bw_persistent, bibw_persistent, multi_lat_persistent
 * (what = 'w' window one way, 'b' both ways, 'l' ping-pong), on buffers of the
 * op's own: a request binds its buffer at init, so --cache cycle (which moves
 * a->sbuf between calls) must not be under it. */
static int setup_persistent(mt_op_args_t *a, char *err, char what)
{
    p2p_state_t *s = a->state;
    if (s->role == ROLE_IDLE) return MT_OK;
    int w = s->window, n = what == 'w' ? w : what == 'b' ? 2 * w : 2;
    size_t blk = s->eff > 0 ? s->eff : 1;
    s->preq = malloc(sizeof *s->preq * (size_t)n);
    s->psbuf = mt_op_alloc(blk);
    s->prbuf = what == 'l' ? mt_op_alloc(blk) : NULL;
    if (!s->preq || !s->psbuf || (what == 'l' && !s->prbuf))
        return mt_fail(err, MT_ENOMEM, "op '%s': cannot allocate its persistent requests and buffers", a->op->name);
    memset(s->psbuf, 1, blk);
    if (s->prbuf) memset(s->prbuf, 0, blk);
    for (int i = 0; i < n; i++) s->preq[i] = MPI_REQUEST_NULL;
    s->npreq = n;
    int rc = MPI_SUCCESS, q = 0;
    if (what == 'l') {
        rc = MPI_Send_init(s->psbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->preq[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv_init(s->prbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->preq[1]);
    } else {
        int recv = what == 'b' || s->role == ROLE_SECOND, send = what == 'b' || s->role == ROLE_FIRST;
        for (int i = 0; recv && i < w && rc == MPI_SUCCESS; i++)
            rc = MPI_Recv_init(s->rwin + (size_t)i * s->rstep, a->count, a->type, s->partner, TAG_DATA, a->comm,
                               &s->preq[q++]);
        for (int i = 0; send && i < w && rc == MPI_SUCCESS; i++)
            rc = MPI_Send_init(s->psbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->preq[q++]);
    }
    if (rc != MPI_SUCCESS)
        return mt_fail(err, MT_EMPI, "op '%s': MPI_Send_init/MPI_Recv_init failed (MPI error %d)", a->op->name, rc);
    return MT_OK;
}

static int setup_rank0_window(mt_op_args_t *a, char *err) { return setup_pair(a, err, 0, 1); }
static int setup_pairs_window(mt_op_args_t *a, char *err) { return setup_pair(a, err, 1, 1); }
static int setup_rank0(mt_op_args_t *a, char *err) { return setup_pair(a, err, 0, 0); }
static int setup_pairs(mt_op_args_t *a, char *err) { return setup_pair(a, err, 1, 0); }
static int setup_bw_persistent(mt_op_args_t *a, char *err)
{
    int rc = setup_pair(a, err, 0, 1);
    return rc == MT_OK ? setup_persistent(a, err, 'w') : rc;
}
static int setup_bibw_persistent(mt_op_args_t *a, char *err)
{
    int rc = setup_pair(a, err, 0, 1);
    return rc == MT_OK ? setup_persistent(a, err, 'b') : rc;
}
static int setup_lat_persistent(mt_op_args_t *a, char *err)
{
    int rc = setup_pair(a, err, 1, 0);
    return rc == MT_OK ? setup_persistent(a, err, 'l') : rc;
}

/* ---- the timed regions ---- */

/* the bw window of one pair: W messages from the first rank, a 4-byte ack back */
static int c_window(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int w = s->window, rc = MPI_SUCCESS;
    if (s->role == ROLE_FIRST) {
        for (int i = 0; i < w && rc == MPI_SUCCESS; i++)
            rc = MPI_Isend(a->sbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->req[i]);
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(w, s->req, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Recv(s->ack, 4, MPI_BYTE, s->partner, TAG_ACK, a->comm, MPI_STATUS_IGNORE);
    } else if (s->role == ROLE_SECOND) {
        for (int i = 0; i < w && rc == MPI_SUCCESS; i++)
            rc = MPI_Irecv(s->rwin + (size_t)i * s->rstep, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->req[i]);
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(w, s->req, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Send(s->ack, 4, MPI_BYTE, s->partner, TAG_ACK, a->comm);
    }
    return rc;
}

static int c_bibw(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int w = s->window, rc = MPI_SUCCESS;
    if (s->role == ROLE_IDLE) return MPI_SUCCESS;
    for (int i = 0; i < w && rc == MPI_SUCCESS; i++)
        rc = MPI_Irecv(s->rwin + (size_t)i * s->rstep, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->req[i]);
    for (int i = 0; i < w && rc == MPI_SUCCESS; i++)
        rc = MPI_Isend(a->sbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &s->req[w + i]);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(2 * w, s->req, MPI_STATUSES_IGNORE);
    return rc;
}

static int c_multi_lat(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int rc = MPI_SUCCESS;
    if (s->role == ROLE_FIRST) {
        rc = MPI_Send(a->sbuf, a->count, a->type, s->partner, TAG_DATA, a->comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(a->rbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, MPI_STATUS_IGNORE);
    } else if (s->role == ROLE_SECOND) {
        rc = MPI_Recv(a->rbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Send(a->sbuf, a->count, a->type, s->partner, TAG_DATA, a->comm);
    }
    return rc;
}

/* the persistent forms, in OSU's order of calls (osu_bw_persistent, osu_bibw_persistent,
 * osu_latency_persistent): the window's requests started at once (MPI_Startall) and completed
 * (MPI_Waitall), the ack of bw a plain MPI_Recv/MPI_Send as in OSU */
static int c_bw_persistent(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int w = s->window, rc = MPI_SUCCESS;
    if (s->role == ROLE_IDLE) return MPI_SUCCESS;
    rc = MPI_Startall(w, s->preq);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(w, s->preq, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (s->role == ROLE_FIRST) return MPI_Recv(s->ack, 4, MPI_BYTE, s->partner, TAG_ACK, a->comm, MPI_STATUS_IGNORE);
    return MPI_Send(s->ack, 4, MPI_BYTE, s->partner, TAG_ACK, a->comm);
}

static int c_bibw_persistent(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int w = s->window, rc = MPI_SUCCESS;
    if (s->role == ROLE_IDLE) return MPI_SUCCESS;
    rc = MPI_Startall(w, s->preq);                                       /* the receives */
    if (rc == MPI_SUCCESS) rc = MPI_Startall(w, s->preq + w);            /* the sends */
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(w, s->preq + w, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(w, s->preq, MPI_STATUSES_IGNORE);
    return rc;
}

static int c_lat_persistent(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    int rc = MPI_SUCCESS;
    if (s->role == ROLE_IDLE) return MPI_SUCCESS;
    MPI_Request *first = s->role == ROLE_FIRST ? &s->preq[0] : &s->preq[1]; /* send first, or receive first */
    MPI_Request *second = s->role == ROLE_FIRST ? &s->preq[1] : &s->preq[0];
    rc = MPI_Start(first);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(first, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = MPI_Start(second);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(second, MPI_STATUS_IGNORE);
    return rc;
}

static int c_pingping(mt_op_args_t *a)
{
    p2p_state_t *s = a->state;
    if (s->role == ROLE_IDLE) return MPI_SUCCESS;
    MPI_Request r;
    int rc = MPI_Isend(a->sbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, &r);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Recv(a->rbuf, a->count, a->type, s->partner, TAG_DATA, a->comm, MPI_STATUS_IGNORE);
    int rw = MPI_Wait(&r, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS ? rc : rw;
}

static int c_sendrecv(mt_op_args_t *a)
{
    int right = (a->rank + 1) % a->size, left = (a->rank + a->size - 1) % a->size;
    return MPI_Sendrecv(a->sbuf, a->count, a->type, right, TAG_DATA, a->rbuf, a->count, a->type, left, TAG_DATA,
                        a->comm, MPI_STATUS_IGNORE);
}

/* IMB Exchange's buffers: the message to the right from the first block of
 * the send buffer, the one to the left from the second; both received into the
 * first block of the receive buffer (the second overwrites the first). A
 * message sent to the right carries TAG_RIGHT and is received from the left
 * with it (IMB: one tag, matched in order): with 2 ranks (left = right) the
 * same pairing */
static int c_exchange(mt_op_args_t *a)
{
    int right = (a->rank + 1) % a->size, left = (a->rank + a->size - 1) % a->size;
    unsigned char *s0 = a->sbuf, *s1 = s0 + (size_t)a->count * (size_t)a->dtype->size;
    MPI_Request r[2];
    int rc = MPI_Isend(s0, a->count, a->type, right, TAG_RIGHT, a->comm, &r[0]);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Isend(s1, a->count, a->type, left, TAG_LEFT, a->comm, &r[1]);
    if (rc != MPI_SUCCESS) { /* complete the first send before returning (its receive is posted by the peer) */
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        return rc;
    }
    rc = MPI_Recv(a->rbuf, a->count, a->type, left, TAG_RIGHT, a->comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = MPI_Recv(a->rbuf, a->count, a->type, right, TAG_LEFT, a->comm, MPI_STATUS_IGNORE);
    int rw = MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    return rc != MPI_SUCCESS ? rc : rw;
}

static int c_synbw(mt_op_args_t *a)
{
    const mt_timer_inst_t *t = a->timer;
    int64_t t0 = t->t->now();
    int64_t ticks = (int64_t)(eff_bytes(a) * 1e-9 * t->ticks_per_s);
    mt_sim_skip((double)ticks / t->ticks_per_s);
    while (t->t->now() - t0 < ticks) {
    }
    return MPI_SUCCESS;
}

/* ---- what one call moves (the same on every rank), whose time is the op's ---- */
static void set_info(mt_op_info_t *o, double bytes, double msgs)
{
    o->bytes = bytes;
    o->msgs = msgs;
}
/* the ops of rank 0 and p/2 only: the other ranks' times mean nothing */
static void pair0(const mt_op_args_t *a, mt_op_info_t *o)
{
    o->ntimed = 2;
    o->timed[0] = 0;
    o->timed[1] = mt_op_pair_partner(0, a->size);
}
static void i_bw(mt_op_args_t *a, mt_op_info_t *o)
{
    set_info(o, a->opts->window * eff_bytes(a), a->opts->window);
    pair0(a, o);
}
static void i_bibw(mt_op_args_t *a, mt_op_info_t *o)
{
    set_info(o, 2.0 * a->opts->window * eff_bytes(a), 2.0 * a->opts->window);
    pair0(a, o);
}
static void i_mbw_mr(mt_op_args_t *a, mt_op_info_t *o)
{
    double pairs = a->size / 2;
    set_info(o, pairs * a->opts->window * eff_bytes(a), pairs * a->opts->window);
}
/* a round trip: OSU's latency is half a call */
static void i_latency(mt_op_args_t *a, mt_op_info_t *o)
{
    (void)a;
    set_info(o, 0, 0);
    o->one_way_divisor = 2;
}
static void i_pingping(mt_op_args_t *a, mt_op_info_t *o)
{
    set_info(o, eff_bytes(a), 1);
    pair0(a, o);
}
static void i_one(mt_op_args_t *a, mt_op_info_t *o) { set_info(o, eff_bytes(a), 1); }
static void i_two(mt_op_args_t *a, mt_op_info_t *o) { set_info(o, 2 * eff_bytes(a), 2); }
static void i_four(mt_op_args_t *a, mt_op_info_t *o) { set_info(o, 4 * eff_bytes(a), 4); }

static const mt_op_t mt_op_bw = {.name = "bw", .mpi_name = "MPI_Isend/MPI_Irecv window (osu_bw)", .min_procs = 2,
                          .blocks = one, .call = c_window, .setup = setup_rank0_window, .teardown = teardown_pair,
                          .family = "p2p", .opts = MT_OPT_WINDOW | MT_OPT_RBUF, .info = i_bw};
static const mt_op_t mt_op_bibw = {.name = "bibw", .mpi_name = "MPI_Isend/MPI_Irecv bidirectional window (osu_bibw)",
                            .min_procs = 2, .blocks = one, .call = c_bibw, .setup = setup_rank0_window,
                            .teardown = teardown_pair, .family = "p2p", .opts = MT_OPT_WINDOW | MT_OPT_RBUF, .info = i_bibw};
static const mt_op_t mt_op_mbw_mr = {.name = "mbw_mr", .mpi_name = "MPI_Isend/MPI_Irecv window, all pairs (osu_mbw_mr)",
                              .min_procs = 2, .flags = MT_OP_PAIRS, .blocks = one, .call = c_window,
                              .setup = setup_pairs_window, .teardown = teardown_pair, .family = "p2p",
                              .opts = MT_OPT_WINDOW | MT_OPT_RBUF, .info = i_mbw_mr};
static const mt_op_t mt_op_multi_lat = {.name = "multi_lat", .mpi_name = "MPI_Send/MPI_Recv ping-pong, all pairs (osu_multi_lat)",
                                 .min_procs = 2, .flags = MT_OP_PAIRS, .blocks = one, .call = c_multi_lat,
                                 .setup = setup_pairs, .teardown = teardown_pair, .family = "p2p", .info = i_latency};
static const mt_op_t mt_op_pingping = {.name = "pingping", .mpi_name = "MPI_Isend/MPI_Recv/MPI_Wait (IMB PingPing)",
                                .min_procs = 2, .blocks = one, .call = c_pingping, .setup = setup_rank0,
                                .teardown = teardown_pair, .family = "p2p", .info = i_pingping};
static const mt_op_t mt_op_sendrecv = {.name = "sendrecv", .mpi_name = "MPI_Sendrecv (IMB Sendrecv)", .min_procs = 2,
                                .blocks = one, .call = c_sendrecv, .family = "p2p", .info = i_two};
static const mt_op_t mt_op_exchange = {.name = "exchange", .mpi_name = "MPI_Isend/MPI_Recv/MPI_Waitall (IMB Exchange)",
                                .min_procs = 2, .blocks = two, .call = c_exchange, .family = "p2p", .info = i_four};
static const mt_op_t mt_op_bw_persistent = {
    .name = "bw_persistent", .mpi_name = "MPI_Send_init/MPI_Recv_init window, MPI_Startall (osu_bw_persistent)",
    .min_procs = 2, .blocks = one, .call = c_bw_persistent, .setup = setup_bw_persistent, .teardown = teardown_pair,
    .family = "p2p", .opts = MT_OPT_WINDOW | MT_OPT_RBUF, .info = i_bw};
static const mt_op_t mt_op_bibw_persistent = {
    .name = "bibw_persistent",
    .mpi_name = "MPI_Send_init/MPI_Recv_init bidirectional window, MPI_Startall (osu_bibw_persistent)",
    .min_procs = 2, .blocks = one, .call = c_bibw_persistent, .setup = setup_bibw_persistent,
    .teardown = teardown_pair, .family = "p2p", .opts = MT_OPT_WINDOW | MT_OPT_RBUF, .info = i_bibw};
static const mt_op_t mt_op_multi_lat_persistent = {
    .name = "multi_lat_persistent",
    .mpi_name = "MPI_Send_init/MPI_Recv_init ping-pong, all pairs (osu_latency_persistent)", .min_procs = 2,
    .flags = MT_OP_PAIRS, .blocks = one, .call = c_lat_persistent, .setup = setup_lat_persistent,
    .teardown = teardown_pair, .family = "p2p", .info = i_latency};
static const mt_op_t mt_op_synbw = {.name = "synbw", .mpi_name = "synbw (synthetic busy-wait of 1 ns per byte)",
                             .min_procs = 1, .flags = MT_OP_SYNTHETIC, .blocks = one, .call = c_synbw,
                             .family = "synthetic", .info = i_one};

const mt_op_t *const mt_ops_p2p[] = {
    &mt_op_bw, &mt_op_bibw, &mt_op_mbw_mr, &mt_op_multi_lat, &mt_op_pingping, &mt_op_sendrecv, &mt_op_exchange,
    &mt_op_bw_persistent, &mt_op_bibw_persistent, &mt_op_multi_lat_persistent, &mt_op_synbw, NULL,
};
