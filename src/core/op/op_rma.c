/* mpitempo: the one-sided (RMA) operations. The origin is rank 0, the target
 * its partner mt_op_pair_partner(0, p) = p/2; a window of the same size is
 * created on every rank of a->comm in setup (--rma-win: create = our buffer +
 * MPI_Win_create, allocate = MPI_Win_allocate, dynamic = MPI_Win_create_dynamic
 * + MPI_Win_attach, the target's address sent to the origin in setup and used
 * as the target displacement). One call (the timed region) is one whole access
 * epoch, synchronisation included, as OSU times it (--rma-sync):
 *   fence    every rank of a->comm: MPI_Win_fence; the origin's access(es); MPI_Win_fence
 *   lock     origin: MPI_Win_lock(target); access(es); MPI_Win_unlock (shared; exclusive for fop, cas)
 *   flush    origin: access(es); MPI_Win_flush(target); the lock (shared) is taken in setup and
 *            released in teardown (OSU's default)
 *   lock_all origin: MPI_Win_lock_all; access(es); MPI_Win_unlock_all
 *   pscw     origin: MPI_Win_start({target}); access(es); MPI_Win_complete;
 *            target: MPI_Win_post({origin}); MPI_Win_wait
 * Ranks other than the origin and the target make no MPI call (except the fences).
 *
 * The ops (the accesses of one call; OSU Micro-Benchmarks 7.x equivalent):
 *   put      1 x MPI_Put of msize bytes (a->sbuf -> target)               osu_put_latency
 *   get      1 x MPI_Get of msize bytes (target -> a->rbuf)                osu_get_latency
 *   acc      1 x MPI_Accumulate, a->redop on dtype->reduce, msize bytes   osu_acc_latency
 *   get_acc  1 x MPI_Get_accumulate, a->redop, msize bytes each way        osu_get_acc_latency
 *   fop      1 x MPI_Fetch_and_op, a->redop on one MPI_INT64_T (size 0)    osu_fop_latency
 *   cas      1 x MPI_Compare_and_swap on one MPI_INT64_T (size 0)          osu_cas_latency
 *   put_bw   W = --bw-window x MPI_Put of msize bytes, to consecutive blocks of the target's window
 *            (W x msize bytes) from consecutive blocks of an origin buffer  osu_put_bw (IMB-RMA Unidir_put)
 *   get_bw   W x MPI_Get of msize bytes, the same layout                   osu_get_bw (IMB-RMA Unidir_get)
 * bytes_per_call / msgs_per_call (info hook): put_bw, get_bw: W x msize and W
 * (the bandwidth is W x msize / time of a call, as OSU's); the latency ops
 * declare none (0).
 * Differences to OSU: OSU's latency tests with fence and pscw run two epochs per
 * iteration (rank 0 accesses rank 1, then rank 1 accesses rank 0) and report
 * half the time; one call here is one epoch, origin to target only (as OSU's
 * bandwidth tests). OSU runs on exactly 2 ranks; here the other ranks take part
 * in the fences only. */
#include "op/op_rma.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_PUT, K_GET, K_ACC, K_GET_ACC, K_FOP, K_CAS, K_PUT_BW, K_GET_BW };
enum { R_OTHER, R_ORIGIN, R_TARGET };

typedef struct rma_state {
    MPI_Win win;
    int kind, sync, wkind, role;
    int origin, target;
    int lock_type;        /* per-call lock of --rma-sync lock */
    int nacc;             /* accesses per call (1, or W for the bw ops) */
    int count;            /* elements per access */
    MPI_Datatype type;
    MPI_Aint *tdisp;      /* origin: target displacement of each access */
    char **obufs;         /* origin: origin address of each access (bw ops) */
    char *winmem;         /* this rank's window memory */
    size_t winbytes;
    int own_winmem;       /* malloc'ed here (create, dynamic) */
    int attached;         /* dynamic: winmem attached */
    char *obuf;           /* origin buffer of the bw ops */
    size_t obytes;
    MPI_Group peer;       /* pscw: the target's group (origin) or the origin's (target) */
    int locked;           /* flush: the lock taken in setup */
    int64_t f_origin, f_compare, f_result; /* fop, cas operands */
} rma_state_t;

/* ---- the timed region ---- */

static int accesses(mt_op_args_t *a, rma_state_t *s)
{
    int rc = MPI_SUCCESS;
    switch (s->kind) {
    case K_PUT:
        return MPI_Put(a->sbuf, s->count, s->type, s->target, s->tdisp[0], s->count, s->type, s->win);
    case K_GET:
        return MPI_Get(a->rbuf, s->count, s->type, s->target, s->tdisp[0], s->count, s->type, s->win);
    case K_ACC:
        return MPI_Accumulate(a->sbuf, s->count, s->type, s->target, s->tdisp[0], s->count, s->type, a->redop,
                              s->win);
    case K_GET_ACC:
        return MPI_Get_accumulate(a->sbuf, s->count, s->type, a->rbuf, s->count, s->type, s->target, s->tdisp[0],
                                  s->count, s->type, a->redop, s->win);
    case K_FOP:
        return MPI_Fetch_and_op(&s->f_origin, &s->f_result, MPI_INT64_T, s->target, s->tdisp[0], a->redop, s->win);
    case K_CAS:
        return MPI_Compare_and_swap(&s->f_origin, &s->f_compare, &s->f_result, MPI_INT64_T, s->target,
                                    s->tdisp[0], s->win);
    case K_PUT_BW:
        for (int j = 0; j < s->nacc && rc == MPI_SUCCESS; j++)
            rc = MPI_Put(s->obufs[j], s->count, s->type, s->target, s->tdisp[j], s->count, s->type, s->win);
        return rc;
    case K_GET_BW:
        for (int j = 0; j < s->nacc && rc == MPI_SUCCESS; j++)
            rc = MPI_Get(s->obufs[j], s->count, s->type, s->target, s->tdisp[j], s->count, s->type, s->win);
        return rc;
    }
    return MPI_ERR_OTHER;
}

static int rma_call(mt_op_args_t *a)
{
    rma_state_t *s = a->state;
    int rc = MPI_SUCCESS;
    switch (s->sync) {
    case MT_RMA_FENCE:
        rc = MPI_Win_fence(0, s->win);
        if (rc == MPI_SUCCESS && s->role == R_ORIGIN) rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_fence(0, s->win);
        return rc;
    case MT_RMA_LOCK:
        if (s->role != R_ORIGIN) return MPI_SUCCESS;
        rc = MPI_Win_lock(s->lock_type, s->target, 0, s->win);
        if (rc == MPI_SUCCESS) rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_unlock(s->target, s->win);
        return rc;
    case MT_RMA_FLUSH:
        if (s->role != R_ORIGIN) return MPI_SUCCESS;
        rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_flush(s->target, s->win);
        return rc;
    case MT_RMA_LOCK_ALL:
        if (s->role != R_ORIGIN) return MPI_SUCCESS;
        rc = MPI_Win_lock_all(0, s->win);
        if (rc == MPI_SUCCESS) rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_unlock_all(s->win);
        return rc;
    case MT_RMA_PSCW:
        if (s->role == R_ORIGIN) {
            rc = MPI_Win_start(s->peer, 0, s->win);
            if (rc == MPI_SUCCESS) rc = accesses(a, s);
            if (rc == MPI_SUCCESS) rc = MPI_Win_complete(s->win);
        } else if (s->role == R_TARGET) {
            rc = MPI_Win_post(s->peer, 0, s->win);
            if (rc == MPI_SUCCESS) rc = MPI_Win_wait(s->win);
        }
        return rc;
    }
    return MPI_ERR_OTHER;
}

/* ---- setup and teardown (outside the timed region) ---- */

static const char *const sync_names[] = {"fence", "lock", "flush", "lock_all", "pscw"};
static const char *const win_names[] = {"create", "allocate", "dynamic"};

static void rma_free(rma_state_t *s)
{
    if (!s) return;
    if (s->locked) MPI_Win_unlock(s->target, s->win);
    if (s->peer != MPI_GROUP_NULL) MPI_Group_free(&s->peer);
    if (s->win != MPI_WIN_NULL) {
        if (s->attached) MPI_Win_detach(s->win, s->winmem);
        MPI_Win_free(&s->win);
    }
    if (s->own_winmem) free(s->winmem);
    free(s->obuf);
    free(s->obufs);
    free(s->tdisp);
    free(s);
}

static void rma_teardown(mt_op_args_t *a)
{
    rma_free(a->state);
    a->state = NULL;
}

static int mpi_fail(char *err, int rc, const char *what, rma_state_t *s)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return mt_fail(err, MT_EMPI, "%s failed for --rma-sync %s --rma-win %s: %s", what, sync_names[s->sync],
                   win_names[s->wkind], msg);
}

/* Combinations that fail or hang with an MPI library (its version string's
 * first line in lib): a one-line reason, or NULL. None known: every op x sync
 * x window kind ran on 2 and 4 ranks with the MPICH 5.0 and Open MPI 5.0 wheels
 * (the passive modes on create/dynamic windows need the target inside MPI:
 * docs/methods.md, "Operations: rma"). */
static const char *refused(const rma_state_t *s, const char *lib)
{
    (void)s;
    (void)lib;
    return NULL;
}

static int rma_setup(mt_op_args_t *a, int kind, char *err)
{
    if (a->size < 2) return mt_fail(err, MT_EINVAL, "one-sided ops need at least 2 ranks (origin and target)");
    int bw = kind == K_PUT_BW || kind == K_GET_BW;
    int atomic = kind == K_FOP || kind == K_CAS;
    if (bw && a->opts->window < 1)
        return mt_fail(err, MT_EINVAL, "--bw-window must be at least 1 (got %d)", a->opts->window);
    rma_state_t *s = calloc(1, sizeof *s);
    if (!s) return mt_fail(err, MT_ENOMEM, "out of memory for the state of a one-sided op");
    s->win = MPI_WIN_NULL;
    s->peer = MPI_GROUP_NULL;
    s->kind = kind;
    s->sync = a->opts->rma_sync;
    s->wkind = a->opts->rma_win;
    s->origin = 0;
    s->target = mt_op_pair_partner(0, a->size);
    s->role = a->rank == s->origin ? R_ORIGIN : a->rank == s->target ? R_TARGET : R_OTHER;
    s->lock_type = atomic ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED; /* as OSU's fop/cas lock tests */
    s->nacc = bw ? a->opts->window : 1;
    s->count = atomic ? 1 : a->count;
    s->type = atomic ? MPI_INT64_T : a->type;
    size_t blk = atomic ? 8 : (size_t)a->count * (size_t)a->dtype->size;
    s->winbytes = (size_t)s->nacc * blk;
    if (s->winbytes < 8) s->winbytes = 8;
    s->f_origin = 1;
    s->f_compare = 0;

    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    const char *why = refused(s, lib);
    if (why) {
        int rc = mt_fail(err, MT_EUNSUP, "%s with --rma-sync %s --rma-win %s is refused with %s: %s",
                         a->op->name, sync_names[s->sync], win_names[s->wkind], lib, why);
        rma_free(s);
        return rc;
    }

    int rc = MPI_SUCCESS;
    const char *what = "";
    if (s->role == R_ORIGIN) {
        s->tdisp = malloc(sizeof(MPI_Aint) * (size_t)s->nacc);
        if (bw) {
            s->obytes = (size_t)s->nacc * blk;
            s->obuf = malloc(s->obytes > 0 ? s->obytes : 1);
            s->obufs = malloc(sizeof(char *) * (size_t)s->nacc);
        }
        if (!s->tdisp || (bw && (!s->obuf || !s->obufs))) {
            rma_free(s);
            return mt_fail(err, MT_ENOMEM, "cannot allocate %zu B of origin buffers for %s", s->obytes,
                           a->op->name);
        }
        if (bw) {
            memset(s->obuf, 1, s->obytes);
            for (int j = 0; j < s->nacc; j++) s->obufs[j] = s->obuf + (size_t)j * blk;
        }
    }
    if (s->wkind != MT_WIN_ALLOCATE) {
        s->winmem = malloc(s->winbytes);
        if (!s->winmem) {
            rma_free(s);
            return mt_fail(err, MT_ENOMEM, "cannot allocate a window of %zu B for %s", s->winbytes, a->op->name);
        }
        s->own_winmem = 1;
        memset(s->winmem, 0, s->winbytes);
    }
    MPI_Aint base = 0;
    switch (s->wkind) {
    case MT_WIN_CREATE:
        what = "MPI_Win_create";
        rc = MPI_Win_create(s->winmem, (MPI_Aint)s->winbytes, 1, MPI_INFO_NULL, a->comm, &s->win);
        break;
    case MT_WIN_ALLOCATE:
        what = "MPI_Win_allocate";
        rc = MPI_Win_allocate((MPI_Aint)s->winbytes, 1, MPI_INFO_NULL, a->comm, &s->winmem, &s->win);
        if (rc == MPI_SUCCESS) memset(s->winmem, 0, s->winbytes);
        break;
    default:
        what = "MPI_Win_create_dynamic";
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, a->comm, &s->win);
        if (rc == MPI_SUCCESS) {
            what = "MPI_Win_attach";
            rc = MPI_Win_attach(s->win, s->winmem, (MPI_Aint)s->winbytes);
            s->attached = rc == MPI_SUCCESS;
        }
        if (rc == MPI_SUCCESS) {
            what = "MPI_Get_address";
            rc = MPI_Get_address(s->winmem, &base);
        }
        if (rc == MPI_SUCCESS) { /* the target's address to the origin (every rank takes it) */
            what = "MPI_Bcast of the target's window address";
            rc = MPI_Bcast(&base, 1, MPI_AINT, s->target, a->comm);
        }
        break;
    }
    if (rc == MPI_SUCCESS && s->sync == MT_RMA_PSCW && s->role != R_OTHER) {
        MPI_Group all;
        int peer = s->role == R_ORIGIN ? s->target : s->origin;
        what = "MPI_Group_incl";
        rc = MPI_Comm_group(a->comm, &all);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Group_incl(all, 1, &peer, &s->peer);
            MPI_Group_free(&all);
        }
    }
    if (rc == MPI_SUCCESS && s->role == R_ORIGIN)
        for (int j = 0; j < s->nacc; j++) s->tdisp[j] = MPI_Aint_add(base, (MPI_Aint)((size_t)j * blk));
    if (rc == MPI_SUCCESS) { /* the window memory is set before anyone accesses it */
        what = "MPI_Barrier";
        rc = MPI_Barrier(a->comm);
    }
    if (rc == MPI_SUCCESS && s->sync == MT_RMA_FLUSH && s->role == R_ORIGIN) {
        what = "MPI_Win_lock";
        rc = MPI_Win_lock(MPI_LOCK_SHARED, s->target, 0, s->win);
        s->locked = rc == MPI_SUCCESS;
    }
    if (rc != MPI_SUCCESS) {
        int r = mpi_fail(err, rc, what, s);
        rma_free(s);
        return r;
    }
    a->state = s;
    return MT_OK;
}

static void rma_info(mt_op_args_t *a, mt_op_info_t *out)
{
    const rma_state_t *s = a->state;
    out->bytes = (double)s->nacc * (double)s->count * (double)a->dtype->size;
    out->msgs = s->nacc;
}

int mt_op_rma_view(const mt_op_args_t *a, mt_rma_view_t *v)
{
    if (!a->op || a->op->family == NULL || strcmp(a->op->family, "rma") != 0 || !a->state) return MT_EINVAL;
    const rma_state_t *s = a->state;
    v->win = s->win;
    v->winmem = s->winmem;
    v->winbytes = s->winbytes;
    v->obuf = s->obuf;
    v->obytes = s->obytes;
    v->origin = s->origin;
    v->target = s->target;
    return MT_OK;
}

#define RMA_SETUP(fn, k) \
    static int fn(mt_op_args_t *a, char *err) { return rma_setup(a, k, err); }
RMA_SETUP(s_put, K_PUT)
RMA_SETUP(s_get, K_GET)
RMA_SETUP(s_acc, K_ACC)
RMA_SETUP(s_get_acc, K_GET_ACC)
RMA_SETUP(s_fop, K_FOP)
RMA_SETUP(s_cas, K_CAS)
RMA_SETUP(s_put_bw, K_PUT_BW)
RMA_SETUP(s_get_bw, K_GET_BW)

static int one(int p) { (void)p; return 1; }

#define RMA_OPTS (MT_OPT_RMA_SYNC | MT_OPT_RMA_WIN)
static const mt_op_t op_put = {.name = "put", .mpi_name = "MPI_Put", .min_procs = 2, .blocks = one,
                               .call = rma_call, .setup = s_put, .teardown = rma_teardown, .family = "rma",
                               .opts = RMA_OPTS};
static const mt_op_t op_get = {.name = "get", .mpi_name = "MPI_Get", .min_procs = 2, .blocks = one,
                               .call = rma_call, .setup = s_get, .teardown = rma_teardown, .family = "rma",
                               .opts = RMA_OPTS};
static const mt_op_t op_acc = {.name = "acc", .mpi_name = "MPI_Accumulate", .min_procs = 2,
                               .flags = MT_OP_REDUCTION, .blocks = one, .call = rma_call, .setup = s_acc,
                               .teardown = rma_teardown, .family = "rma", .opts = RMA_OPTS};
static const mt_op_t op_get_acc = {.name = "get_acc", .mpi_name = "MPI_Get_accumulate", .min_procs = 2,
                                   .flags = MT_OP_REDUCTION, .blocks = one, .call = rma_call,
                                   .setup = s_get_acc, .teardown = rma_teardown, .family = "rma",
                                   .opts = RMA_OPTS};
static const mt_op_t op_fop = {.name = "fop", .mpi_name = "MPI_Fetch_and_op", .min_procs = 2,
                               .flags = MT_OP_NOSIZE, .blocks = one, .call = rma_call, .setup = s_fop,
                               .teardown = rma_teardown, .family = "rma", .opts = RMA_OPTS | MT_OPT_REDOP};
static const mt_op_t op_cas = {.name = "cas", .mpi_name = "MPI_Compare_and_swap", .min_procs = 2,
                               .flags = MT_OP_NOSIZE, .blocks = one, .call = rma_call, .setup = s_cas,
                               .teardown = rma_teardown, .family = "rma", .opts = RMA_OPTS};
static const mt_op_t op_put_bw = {.name = "put_bw", .mpi_name = "MPI_Put", .min_procs = 2, .blocks = one,
                                  .call = rma_call, .setup = s_put_bw, .teardown = rma_teardown,
                                  .family = "rma", .opts = RMA_OPTS | MT_OPT_WINDOW, .info = rma_info};
static const mt_op_t op_get_bw = {.name = "get_bw", .mpi_name = "MPI_Get", .min_procs = 2, .blocks = one,
                                  .call = rma_call, .setup = s_get_bw, .teardown = rma_teardown,
                                  .family = "rma", .opts = RMA_OPTS | MT_OPT_WINDOW, .info = rma_info};

const mt_op_t *const mt_ops_rma[] = {
    &op_put, &op_get, &op_acc, &op_get_acc, &op_fop, &op_cas, &op_put_bw, &op_get_bw, NULL,
};
