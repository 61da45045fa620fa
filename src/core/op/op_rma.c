/* mpitempo: the one-sided (RMA) operations. The origin is rank 0, the target
 * its partner mt_op_pair_partner(0, p) = p/2; a window of the same size is
 * created on every rank of a->comm in setup (--rma-win: create = our buffer +
 * MPI_Win_create, allocate = MPI_Win_allocate, dynamic = MPI_Win_create_dynamic
 * + MPI_Win_attach, the target's and the origin's addresses broadcast in setup
 * and used as target displacements). One call (the timed region) is one whole
 * access epoch, synchronisation included, as OSU times it (--rma-sync):
 *   fence       every rank of a->comm: MPI_Win_fence; the origin's access(es); MPI_Win_fence
 *   lock        origin: MPI_Win_lock(target); access(es); MPI_Win_unlock (shared; exclusive for fop, cas)
 *   flush       origin: access(es); MPI_Win_flush(target); the lock (shared) is taken in setup and
 *               released in teardown (OSU's default)
 *   flush_local origin: access(es); MPI_Win_flush_local(target) (local completion only: the origin
 *               buffer may be reused, a get's data has arrived); the lock as with flush
 *   lock_all    origin: MPI_Win_lock_all; access(es); MPI_Win_unlock_all
 *   pscw        origin: MPI_Win_start({target}); access(es); MPI_Win_complete;
 *               target: MPI_Win_post({origin}); MPI_Win_wait
 * Ranks other than the origin and the target make no MPI call (except the fences).
 *
 * --rma-epochs 2 (the latency ops with fence or pscw): one call is OSU's
 * iteration of osu_<op>_latency, two epochs, the second from the target back
 * to the origin:
 *   fence       every rank: MPI_Win_fence; origin's access; MPI_Win_fence; target's access
 *               (to the origin); MPI_Win_fence (3 fences, 2 accesses)
 *   pscw        origin: start; access; complete; post; wait
 *               target: post; wait; start; access (to the origin); complete
 * OSU reports half of such an iteration as the latency: meta.json says so per
 * experiment (one_way_divisor 2); measurements.csv keeps the whole call.
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
 *   put_bibw origin and target each W x MPI_Put of msize bytes to the other, in one epoch: fence
 *            (fence; puts; fence) or pscw (post; start; puts; complete; wait on both; also for the
 *            default --rma-sync flush, as osu_put_bibw's default)       osu_put_bibw
 * bytes_per_call / msgs_per_call (info hook): put_bw, get_bw: W x msize and W
 * (the bandwidth is W x msize / time of a call, as OSU's); put_bibw 2 x W x
 * msize and 2W (OSU: twice the one-way bytes); the latency ops declare none (0).
 *
 * Whose time is the op's (info hook, meta.json timed_ranks): with lock, flush,
 * flush_local and lock_all the target makes no call at all and returns at once:
 * only the origin's time is the op's time (measurements.csv's runtime, the max
 * over ranks, is the origin's; a mean over ranks would halve it); pscw: the
 * origin and the target; fence: every rank (all take part in the fences).
 *
 * Differences to OSU: OSU's latency tests with fence and pscw run two epochs per
 * iteration (--rma-epochs 2 here; the default 1 times one epoch, origin to target
 * only, as OSU's bandwidth tests). OSU runs on exactly 2 ranks; here the other
 * ranks take part in the fences only. */
#include "op/op_rma.h"
#include "base/mt_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_PUT, K_GET, K_ACC, K_GET_ACC, K_FOP, K_CAS, K_PUT_BW, K_GET_BW, K_PUT_BIBW };
enum { R_OTHER, R_ORIGIN, R_TARGET };

typedef struct rma_state {
    MPI_Win win;
    int kind, sync, wkind, role;
    int origin, target;
    int peer;             /* origin: the target; target: the origin (it accesses it with 2 epochs, put_bibw) */
    int epochs;           /* 1, or 2 (--rma-epochs 2: the target accesses the origin in a second epoch) */
    int lock_type;        /* per-call lock of --rma-sync lock */
    int nacc;             /* accesses per call (1, or W for the bw ops) */
    int count;            /* elements per access */
    MPI_Datatype type;
    MPI_Aint *tdisp;      /* a rank that accesses: the displacement of each access in its peer's window */
    char **obufs;         /* a rank that accesses: origin address of each access (bw ops) */
    char *winmem;         /* this rank's window memory */
    size_t winbytes;
    int own_winmem;       /* malloc'ed here (create, dynamic) */
    int attached;         /* dynamic: winmem attached */
    char *obuf;           /* origin buffer of the bw ops */
    size_t obytes;
    MPI_Group group;      /* pscw: the target's group (origin) or the origin's (target) */
    int locked;           /* flush: the lock taken in setup */
    int64_t f_origin, f_compare, f_result; /* fop, cas operands */
} rma_state_t;

/* ---- the timed region ---- */

static int accesses(mt_op_args_t *a, rma_state_t *s)
{
    int rc = MPI_SUCCESS;
    switch (s->kind) {
    case K_PUT:
        return MPI_Put(a->sbuf, s->count, s->type, s->peer, s->tdisp[0], s->count, s->type, s->win);
    case K_GET:
        return MPI_Get(a->rbuf, s->count, s->type, s->peer, s->tdisp[0], s->count, s->type, s->win);
    case K_ACC:
        return MPI_Accumulate(a->sbuf, s->count, s->type, s->peer, s->tdisp[0], s->count, s->type, a->redop,
                              s->win);
    case K_GET_ACC:
        return MPI_Get_accumulate(a->sbuf, s->count, s->type, a->rbuf, s->count, s->type, s->peer, s->tdisp[0],
                                  s->count, s->type, a->redop, s->win);
    case K_FOP:
        return MPI_Fetch_and_op(&s->f_origin, &s->f_result, MPI_INT64_T, s->peer, s->tdisp[0], a->redop, s->win);
    case K_CAS:
        return MPI_Compare_and_swap(&s->f_origin, &s->f_compare, &s->f_result, MPI_INT64_T, s->peer,
                                    s->tdisp[0], s->win);
    case K_PUT_BW:
    case K_PUT_BIBW:
        for (int j = 0; j < s->nacc && rc == MPI_SUCCESS; j++)
            rc = MPI_Put(s->obufs[j], s->count, s->type, s->peer, s->tdisp[j], s->count, s->type, s->win);
        return rc;
    case K_GET_BW:
        for (int j = 0; j < s->nacc && rc == MPI_SUCCESS; j++)
            rc = MPI_Get(s->obufs[j], s->count, s->type, s->peer, s->tdisp[j], s->count, s->type, s->win);
        return rc;
    }
    return MPI_ERR_OTHER;
}

static int rma_call(mt_op_args_t *a)
{
    rma_state_t *s = a->state;
    int rc = MPI_SUCCESS;
    int both = s->kind == K_PUT_BIBW; /* origin and target access each other in one epoch */
    switch (s->sync) {
    case MT_RMA_FENCE:
        rc = MPI_Win_fence(0, s->win);
        if (rc == MPI_SUCCESS && (s->role == R_ORIGIN || (both && s->role == R_TARGET))) rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_fence(0, s->win);
        if (s->epochs == 2) { /* the target's epoch back to the origin, closed by a third fence */
            if (rc == MPI_SUCCESS && s->role == R_TARGET) rc = accesses(a, s);
            if (rc == MPI_SUCCESS) rc = MPI_Win_fence(0, s->win);
        }
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
    case MT_RMA_FLUSH_LOCAL:
        if (s->role != R_ORIGIN) return MPI_SUCCESS;
        rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_flush_local(s->target, s->win);
        return rc;
    case MT_RMA_LOCK_ALL:
        if (s->role != R_ORIGIN) return MPI_SUCCESS;
        rc = MPI_Win_lock_all(0, s->win);
        if (rc == MPI_SUCCESS) rc = accesses(a, s);
        if (rc == MPI_SUCCESS) rc = MPI_Win_unlock_all(s->win);
        return rc;
    case MT_RMA_PSCW:
        if (s->role == R_OTHER) return MPI_SUCCESS;
        if (both) { /* osu_put_bibw: post, start, puts, complete, wait on both */
            rc = MPI_Win_post(s->group, 0, s->win);
            if (rc == MPI_SUCCESS) rc = MPI_Win_start(s->group, 0, s->win);
            if (rc == MPI_SUCCESS) rc = accesses(a, s);
            if (rc == MPI_SUCCESS) rc = MPI_Win_complete(s->win);
            if (rc == MPI_SUCCESS) rc = MPI_Win_wait(s->win);
            return rc;
        }
        if (s->role == R_ORIGIN) {
            rc = MPI_Win_start(s->group, 0, s->win);
            if (rc == MPI_SUCCESS) rc = accesses(a, s);
            if (rc == MPI_SUCCESS) rc = MPI_Win_complete(s->win);
            if (s->epochs == 2) {
                if (rc == MPI_SUCCESS) rc = MPI_Win_post(s->group, 0, s->win);
                if (rc == MPI_SUCCESS) rc = MPI_Win_wait(s->win);
            }
        } else {
            rc = MPI_Win_post(s->group, 0, s->win);
            if (rc == MPI_SUCCESS) rc = MPI_Win_wait(s->win);
            if (s->epochs == 2) {
                if (rc == MPI_SUCCESS) rc = MPI_Win_start(s->group, 0, s->win);
                if (rc == MPI_SUCCESS) rc = accesses(a, s);
                if (rc == MPI_SUCCESS) rc = MPI_Win_complete(s->win);
            }
        }
        return rc;
    }
    return MPI_ERR_OTHER;
}

/* ---- setup and teardown (outside the timed region) ---- */

static const char *const sync_names[] = {"fence", "lock", "flush", "lock_all", "pscw", "flush_local"};
static const char *const win_names[] = {"create", "allocate", "dynamic"};

static void rma_free(rma_state_t *s)
{
    if (!s) return;
    if (s->locked) MPI_Win_unlock(s->target, s->win);
    if (s->group != MPI_GROUP_NULL) MPI_Group_free(&s->group);
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

/* What a combination of options cannot do, in one line (no MPI: also before
 * anything is launched, through the op's check hook); MT_OK otherwise. */
static int rma_refuse(const char *name, int kind, const mt_op_opts_t *o, char *err)
{
    int bw = kind == K_PUT_BW || kind == K_GET_BW || kind == K_PUT_BIBW;
    if (kind == K_PUT_BIBW && o->rma_sync != MT_RMA_FENCE && o->rma_sync != MT_RMA_PSCW && o->rma_sync != MT_RMA_FLUSH)
        return mt_fail(err, MT_EINVAL, "op '%s' needs --rma-sync fence or pscw (both ranks put in one epoch, as "
                       "osu_put_bibw; the default flush means pscw for it, osu_put_bibw's default), not %s", name,
                       sync_names[o->rma_sync]);
    if (o->rma_epochs == 2 && !bw && o->rma_sync != MT_RMA_FENCE && o->rma_sync != MT_RMA_PSCW)
        return mt_fail(err, MT_EINVAL, "--rma-epochs 2 needs --rma-sync fence or pscw (OSU's latency tests run "
                       "two epochs with these only), not %s", sync_names[o->rma_sync]);
    return MT_OK;
}

static int rma_setup(mt_op_args_t *a, int kind, char *err)
{
    if (a->size < 2) return mt_fail(err, MT_EINVAL, "one-sided ops need at least 2 ranks (origin and target)");
    int bw = kind == K_PUT_BW || kind == K_GET_BW || kind == K_PUT_BIBW;
    int atomic = kind == K_FOP || kind == K_CAS;
    if (bw && a->opts->window < 1)
        return mt_fail(err, MT_EINVAL, "--bw-window must be at least 1 (got %d)", a->opts->window);
    int rc0 = rma_refuse(a->op->name, kind, a->opts, err);
    if (rc0 != MT_OK) return rc0;
    rma_state_t *s = calloc(1, sizeof *s);
    if (!s) return mt_fail(err, MT_ENOMEM, "out of memory for the state of a one-sided op");
    s->win = MPI_WIN_NULL;
    s->group = MPI_GROUP_NULL;
    s->kind = kind;
    s->sync = a->opts->rma_sync;
    if (kind == K_PUT_BIBW && s->sync == MT_RMA_FLUSH) s->sync = MT_RMA_PSCW; /* the default: osu_put_bibw's pscw */
    s->wkind = a->opts->rma_win;
    s->epochs = a->opts->rma_epochs == 2 && !bw ? 2 : 1; /* the bandwidth ops do not read --rma-epochs */
    s->origin = 0;
    s->target = mt_op_pair_partner(0, a->size);
    s->role = a->rank == s->origin ? R_ORIGIN : a->rank == s->target ? R_TARGET : R_OTHER;
    s->peer = s->role == R_ORIGIN ? s->target : s->role == R_TARGET ? s->origin : -1;
    s->lock_type = atomic ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED; /* as OSU's fop/cas lock tests */
    s->nacc = bw ? a->opts->window : 1;
    s->count = atomic ? 1 : a->count;
    s->type = atomic ? MPI_INT64_T : a->type;
    size_t blk = atomic ? 8 : (size_t)a->count * (size_t)a->dtype->size;
    s->winbytes = (size_t)s->nacc * blk;
    if (s->winbytes < 8) s->winbytes = 8;
    s->f_origin = 1;
    s->f_compare = 0;
    /* the ranks that issue accesses: the origin; the target too with 2 epochs or put_bibw */
    int accessor = s->role == R_ORIGIN || (s->role == R_TARGET && (s->epochs == 2 || kind == K_PUT_BIBW));

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
    if (accessor) {
        s->tdisp = malloc(sizeof(MPI_Aint) * (size_t)s->nacc);
        if (bw) {
            s->obytes = (size_t)s->nacc * blk;
            s->obuf = mt_op_alloc(s->obytes);
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
        s->winmem = mt_op_alloc(s->winbytes);
        if (!s->winmem) {
            rma_free(s);
            return mt_fail(err, MT_ENOMEM, "cannot allocate a window of %zu B for %s", s->winbytes, a->op->name);
        }
        s->own_winmem = 1;
        memset(s->winmem, 0, s->winbytes);
    }
    MPI_Aint tbase = 0, obase = 0; /* dynamic windows: the target's and the origin's window addresses */
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
            rc = MPI_Get_address(s->winmem, &tbase);
            obase = tbase;
        }
        if (rc == MPI_SUCCESS) { /* the target's address to the origin, the origin's to the target */
            what = "MPI_Bcast of the window addresses";
            rc = MPI_Bcast(&tbase, 1, MPI_AINT, s->target, a->comm);
            if (rc == MPI_SUCCESS) rc = MPI_Bcast(&obase, 1, MPI_AINT, s->origin, a->comm);
        }
        break;
    }
    if (rc == MPI_SUCCESS && s->sync == MT_RMA_PSCW && s->role != R_OTHER) {
        MPI_Group all;
        what = "MPI_Group_incl";
        rc = MPI_Comm_group(a->comm, &all);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Group_incl(all, 1, &s->peer, &s->group);
            MPI_Group_free(&all);
        }
    }
    if (rc == MPI_SUCCESS && accessor) {
        MPI_Aint base = s->role == R_ORIGIN ? tbase : obase;
        for (int j = 0; j < s->nacc; j++) s->tdisp[j] = MPI_Aint_add(base, (MPI_Aint)((size_t)j * blk));
    }
    if (rc == MPI_SUCCESS) { /* the window memory is set before anyone accesses it */
        what = "MPI_Barrier";
        rc = MPI_Barrier(a->comm);
    }
    if (rc == MPI_SUCCESS && (s->sync == MT_RMA_FLUSH || s->sync == MT_RMA_FLUSH_LOCAL) && s->role == R_ORIGIN) {
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

/* bytes and messages of the bandwidth ops; whose time is the op's; what OSU divides a call by */
static void rma_info(mt_op_args_t *a, mt_op_info_t *out)
{
    const rma_state_t *s = a->state;
    memset(out, 0, sizeof *out);
    if (s->kind == K_PUT_BW || s->kind == K_GET_BW || s->kind == K_PUT_BIBW) {
        double dirs = s->kind == K_PUT_BIBW ? 2 : 1;
        out->bytes = dirs * (double)s->nacc * (double)s->count * (double)a->dtype->size;
        out->msgs = dirs * s->nacc;
    }
    out->one_way_divisor = s->epochs;
    out->rma_sync = sync_names[s->sync];
    switch (s->sync) {
    case MT_RMA_FENCE: /* every rank takes part in the fences */
        out->ntimed = 0;
        break;
    case MT_RMA_PSCW:
        out->ntimed = 2;
        out->timed[0] = s->origin;
        out->timed[1] = s->target;
        break;
    default: /* passive target: the target makes no call */
        out->ntimed = 1;
        out->timed[0] = s->origin;
        break;
    }
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

static int one(int p) { (void)p; return 1; }

/* the ops: setup, the option check before launch, the registry entry */
#define RMA_OPTS (MT_OPT_RMA_SYNC | MT_OPT_RMA_WIN)
#define RMA_OP(id, k, mpi, fl, o)                                                                              \
    static int s_##id(mt_op_args_t *a, char *err) { return rma_setup(a, k, err); }                           \
    static int k_##id(const mt_op_opts_t *op, int nprocs, char *err)                                         \
    {                                                                                                         \
        (void)nprocs;                                                                                         \
        return rma_refuse(#id, k, op, err);                                                                   \
    }                                                                                                         \
    static const mt_op_t op_##id = {.name = #id, .mpi_name = mpi, .min_procs = 2, .flags = fl, .blocks = one, \
                                    .call = rma_call, .setup = s_##id, .teardown = rma_teardown,              \
                                    .family = "rma", .opts = o, .info = rma_info, .check = k_##id};
RMA_OP(put, K_PUT, "MPI_Put", 0, RMA_OPTS | MT_OPT_RMA_EPOCHS)
RMA_OP(get, K_GET, "MPI_Get", 0, RMA_OPTS | MT_OPT_RMA_EPOCHS)
RMA_OP(acc, K_ACC, "MPI_Accumulate", MT_OP_REDUCTION, RMA_OPTS | MT_OPT_RMA_EPOCHS)
RMA_OP(get_acc, K_GET_ACC, "MPI_Get_accumulate", MT_OP_REDUCTION, RMA_OPTS | MT_OPT_RMA_EPOCHS)
RMA_OP(fop, K_FOP, "MPI_Fetch_and_op", MT_OP_NOSIZE, RMA_OPTS | MT_OPT_REDOP | MT_OPT_RMA_EPOCHS)
RMA_OP(cas, K_CAS, "MPI_Compare_and_swap", MT_OP_NOSIZE, RMA_OPTS | MT_OPT_RMA_EPOCHS)
RMA_OP(put_bw, K_PUT_BW, "MPI_Put", 0, RMA_OPTS | MT_OPT_WINDOW)
RMA_OP(get_bw, K_GET_BW, "MPI_Get", 0, RMA_OPTS | MT_OPT_WINDOW)
RMA_OP(put_bibw, K_PUT_BIBW, "MPI_Put, both ways (osu_put_bibw)", 0, RMA_OPTS | MT_OPT_WINDOW)

const mt_op_t *const mt_ops_rma[] = {
    &op_put, &op_get, &op_acc, &op_get_acc, &op_fop, &op_cas, &op_put_bw, &op_get_bw, &op_put_bibw, NULL,
};
