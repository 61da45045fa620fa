/* libmpitempo-clock: the public C API of mpitempo/clock.h over the global
 * clock of the core (clock/session.h: base clock, sync by spec, Alg. 6 check).
 * Nothing here measures or synchronises by itself: it validates the caller's
 * input, keeps a duplicate communicator and turns the core's codes into the
 * library's. Its messages name the library's functions and arguments (mpitempo/clock.h), never
 * mpitempo's command-line options or meta.json, which a library user does not have. */
#define _GNU_SOURCE
#include "mpitempo/clock.h"

#include "clocklib_args.h"

#include "base/mt_common.h"
#include "base/mt_mpi.h"
#include "clock/session.h"
#include "clock/sync.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mtc_clock {
    mt_gclock_t g;          /* the core's global clock (its base clock lives here: never moved) */
    mt_timer_inst_t timer;
    MPI_Comm comm;          /* the library's duplicate of the caller's communicator */
    char spec[512];         /* canonical spec in use */
    double duration_s;      /* max over ranks of the last sync */
};

static _Thread_local char last_err[MT_ERRLEN];

const char *mtc_error(void) { return last_err; }
const char *mtc_version(void) { return MT_VERSION; }

__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    return code;
}

/* the core's codes are the library's (same numbers), except sync failures */
static int from_core(int rc, int sync)
{
    if (rc == MT_OK) return MTC_OK;
    if (sync && rc != MT_EINVAL && rc != MT_ENOMEM && rc != MT_EUNSUP) return MTC_ESYNC;
    return rc;
}

static int mpi_usable(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init) return fail(MTC_EMPI, "mpitempo-clock: MPI is not initialised (call MPI_Init first)");
    if (fin) return fail(MTC_EMPI, "mpitempo-clock: MPI is already finalised");
    return MTC_OK;
}

/* ranks sharing CPUs wait by sleeping: more ranks on this node than cores on any node */
static int wait_lazy(MPI_Comm comm, int wait)
{
    if (wait == 1) return 0;
    if (wait == 2) return 1;
    MPI_Comm node;
    int nlocal = 1, mine, any = 0;
    mt_check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    mt_check_mpi(MPI_Comm_size(node, &nlocal), "MPI_Comm_size");
    mt_check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
    mine = nlocal > (int)sysconf(_SC_NPROCESSORS_ONLN);
    mt_check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    return any;
}

/* mt_gclock_sync's steps in the library's words: the sync, the accuracy check right after it
 * (Alg. 6, SKaMPI-Offset, 100 ping-pongs), the warnings of ranks below their stated accuracy.
 * Collective; the code is agreed by every rank. */
static int lib_sync(mtc_clock_t *c, const mt_sync_spec_t *spec, const char *fn, char *err)
{
    mt_gclock_t *g = &c->g;
    g->spec = *spec;
    mt_clock_t in;
    mt_clock_init(&in, &g->base);
    int rc = mt_sync_run(spec, g->comm, &in, g->lazy, &g->res, err);
    if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
    double w0 = 0;
    rc = mt_check_run(g->comm, &g->res.clock, &mt_offset_skampi, 100, &w0, 1, 0, 1, g->lazy, &g->chk0, err);
    if ((rc = mt_agree(g->comm, rc, err)) != MT_OK) return rc;
    g->synced = 1;
    mt_check_mpi(MPI_Allreduce(MPI_IN_PLACE, &g->res.duration_s, 1, MPI_DOUBLE, MPI_MAX, g->comm), "MPI_Allreduce");
    const mt_sync_stats_t *st = &g->res.st;
    int mine[2] = {mt_meanrtt_below_accuracy(st->rtt_measured, st->rtt_preempted, st->spread_sum_s),
                   mt_sync_below_accuracy(st)}, all[2] = {0, 0};
    double spread = 0;
    mt_check_mpi(MPI_Reduce(mine, all, 2, MPI_INT, MPI_SUM, 0, g->comm), "MPI_Reduce");
    mt_check_mpi(MPI_Reduce(&g->res.st.spread_max_s, &spread, 1, MPI_DOUBLE, MPI_MAX, 0, g->comm), "MPI_Reduce");
    if (g->rank == 0 && all[0] > 0)
        fprintf(stderr, "mpitempo-clock: warning: %s: Mean-RTT-Offset saw preempted round trips on %d rank(s) (up to "
                        "%.3g us beyond the fastest): the clock is below its stated accuracy (mtc_accuracy measures "
                        "it; a sync_spec with offset=skampi uses minima)\n", fn, all[0], spread * 1e6);
    if (g->rank == 0 && all[1] > all[0])
        fprintf(stderr, "mpitempo-clock: warning: %s: the clocks of %d rank(s) are below their stated accuracy "
                        "(inherited from the clock they were synchronised to; mtc_accuracy measures it)\n",
                fn, all[1]);
    return MT_OK;
}

static int sync_with(mtc_clock_t *c, const char *s, const char *fn, char *err)
{
    mt_sync_spec_t spec;
    int rc = mt_sync_spec_parse(s, &spec, err);
    if (rc == MT_OK && spec.none)
        rc = mt_fail(err, MT_EINVAL, "sync spec 'none' gives no global clock (use a sync algorithm, e.g. '%s')",
                     MTC_FALLBACK_SYNC);
    /* a spec that parses on some ranks only must not leave the others in the sync */
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) return rc;
    mt_check_free(&c->g.chk0);
    c->g.synced = 0;
    rc = lib_sync(c, &spec, fn, err);
    if (rc != MT_OK) return from_core(rc, 1);
    mt_sync_spec_format(&spec, c->spec, sizeof c->spec);
    c->duration_s = c->g.res.duration_s;
    return MTC_OK;
}

/* Every rank must ask for the same clock: rank 0's arguments against each rank's, before anything
 * is set up (a different spec, timer or wait mode would run different collectives: a deadlock).
 * Collective over comm; the same code and message on every rank. */
static int agree_args(MPI_Comm comm, const char *fn, const mt_clib_args_t *mine, char *err)
{
    int rank, size, first;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    mt_clib_args_t a0 = *mine, ar = *mine;
    mt_check_mpi(MPI_Bcast(&a0, (int)sizeof a0, MPI_BYTE, 0, comm), "MPI_Bcast");
    int differs = mt_clib_args_diff(&a0, mine) ? rank : size;
    mt_check_mpi(MPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == size) return MT_OK;
    mt_check_mpi(MPI_Bcast(&ar, (int)sizeof ar, MPI_BYTE, first, comm), "MPI_Bcast");
    mt_clib_args_mismatch(fn, &a0, &ar, first, err, MT_ERRLEN);
    return MT_EINVAL;
}

static int create(MPI_Comm comm, const char *sync_spec, const mtc_options_t *opt, mtc_clock_t **out, const char *fn)
{
    last_err[0] = 0;
    if (out) *out = NULL;
    int rc = mpi_usable();
    if (rc != MTC_OK) return rc;
    if (comm == MPI_COMM_NULL) return fail(MTC_EINVAL, "mpitempo-clock: %s: the communicator is MPI_COMM_NULL", fn);
    int inter = 0, size = 0;
    mt_check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
    if (inter) return fail(MTC_EINVAL, "mpitempo-clock: %s: an intercommunicator has no global clock (use an intracommunicator)", fn);
    mt_check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    if (size < 2) {
        return fail(MTC_EINVAL, "mpitempo-clock: %s: the communicator has %d rank(s): a global clock needs at least 2 "
                                "(one process has only its local clock)", fn, size);
    }
    const char *timer = opt && opt->timer && *opt->timer ? opt->timer : "monotonic";
    int wait = opt ? opt->wait : 0;
    int defaulted = !sync_spec || !*sync_spec;
    const char *spec = defaulted ? MTC_DEFAULT_SYNC : sync_spec;
    char err[MT_ERRLEN] = "", where[MT_ERRLEN] = "";

    /* from here on every error is agreed: a NULL out on one rank must not leave the others waiting */
    mtc_clock_t *c = NULL;
    if (!out) rc = mt_fail(err, MT_EINVAL, "%s: the output pointer (out) is NULL", fn);
    else if (!(c = calloc(1, sizeof *c))) rc = mt_fail(err, MT_ENOMEM, "%s: cannot allocate the clock", fn);
    if (rc == MT_OK && (wait < 0 || wait > 2))
        rc = mt_fail(err, MT_EINVAL, "%s: invalid wait mode %d in opt->wait (allowed: 0 auto, 1 spin, 2 sleep)", fn, wait);
    /* the spec is checked before anything is set up */
    mt_sync_spec_t parsed;
    if (rc == MT_OK) {
        if ((rc = mt_sync_spec_parse(spec, &parsed, where)) == MT_OK && parsed.none)
            rc = mt_fail(where, MT_EINVAL, "sync spec 'none' gives no global clock (use a sync algorithm, e.g. '%s')",
                         MTC_FALLBACK_SYNC);
        if (rc != MT_OK) snprintf(err, sizeof err, "%s: sync_spec: %.1900s", fn, where);
    }
    if (rc == MT_OK && (rc = mt_timer_open(timer, &c->timer, where)) != MT_OK)
        snprintf(err, sizeof err, "%s: opt->timer: %.1900s", fn, where);
    if ((rc = mt_agree(comm, rc, err)) == MT_OK) {
        /* valid everywhere: now the same everywhere */
        mt_clib_args_t mine;
        char canon[sizeof mine.spec];
        mt_sync_spec_format(&parsed, canon, sizeof canon);
        mt_clib_args_set(&mine, canon, sync_spec, opt ? opt->timer : NULL, wait);
        rc = agree_args(comm, fn, &mine, err);
    }
    if (rc != MT_OK) {
        free(c);
        snprintf(last_err, sizeof last_err, "mpitempo-clock: %s", err);
        return from_core(rc, 0);
    }
    mt_set_prog("mpitempo-clock");
    mt_check_mpi(MPI_Comm_dup(comm, &c->comm), "MPI_Comm_dup");
    int lazy = wait_lazy(c->comm, wait);
    rc = mt_gclock_init(&c->g, c->comm, &c->timer, NULL, NULL, NULL, lazy, err);
    if ((rc = mt_agree(c->comm, rc, err)) == MT_OK) {
        rc = sync_with(c, spec, fn, err);
        if (rc != MTC_OK && defaulted) {
            char first[MT_ERRLEN];
            snprintf(first, sizeof first, "%s", err);
            rc = sync_with(c, MTC_FALLBACK_SYNC, fn, err);
            if (rc != MTC_OK) {
                char both[MT_ERRLEN];
                snprintf(both, sizeof both, "%.900s; fallback '%s': %.900s", first, MTC_FALLBACK_SYNC, err);
                snprintf(err, MT_ERRLEN, "%s", both);
            }
        }
    } else {
        rc = from_core(rc, 0);
    }
    if (rc != MTC_OK) {
        snprintf(last_err, sizeof last_err, "mpitempo-clock: %s: %s", fn, err);
        mt_gclock_free(&c->g);
        MPI_Comm_free(&c->comm);
        free(c);
        return rc;
    }
    *out = c;
    return MTC_OK;
}

int mtc_create(MPI_Comm comm, const char *sync_spec, mtc_clock_t **out)
{
    return create(comm, sync_spec, NULL, out, "mtc_create");
}

int mtc_create_ex(MPI_Comm comm, const char *sync_spec, const mtc_options_t *opt, mtc_clock_t **out)
{
    return create(comm, sync_spec, opt, out, "mtc_create_ex");
}

double mtc_local_now(const mtc_clock_t *c)
{
    if (!c) {
        fail(MTC_EINVAL, "mpitempo-clock: mtc_local_now: the clock is NULL");
        return NAN;
    }
    return mt_base_now(&c->g.base);
}

double mtc_to_global(const mtc_clock_t *c, double local_s)
{
    if (!c) {
        fail(MTC_EINVAL, "mpitempo-clock: mtc_to_global: the clock is NULL");
        return NAN;
    }
    /* the model of a rank applied to inf gives inf or NaN by its slope's sign: refused alike */
    char msg[256];
    if (mt_clib_time_check("mtc_to_global", "local_s", local_s, msg, sizeof msg) != 0) {
        fail(MTC_EINVAL, "mpitempo-clock: %s", msg);
        return NAN;
    }
    return mt_clock_apply(&c->g.res.clock, local_s);
}

double mtc_now(const mtc_clock_t *c)
{
    if (!c) {
        fail(MTC_EINVAL, "mpitempo-clock: mtc_now: the clock is NULL");
        return NAN;
    }
    return mt_clock_now(&c->g.res.clock);
}

int mtc_resync(mtc_clock_t *c)
{
    last_err[0] = 0;
    if (!c) return fail(MTC_EINVAL, "mpitempo-clock: mtc_resync: the clock is NULL");
    int rc = mpi_usable();
    if (rc != MTC_OK) return rc;
    char err[MT_ERRLEN] = "";
    char spec[sizeof c->spec];
    memcpy(spec, c->spec, sizeof spec);
    mt_sync_result_t old = c->g.res;   /* kept when the new sync fails */
    mt_sync_spec_t old_spec = c->g.spec;
    rc = sync_with(c, spec, "mtc_resync", err);
    if (rc != MTC_OK) {
        c->g.res = old;
        c->g.spec = old_spec;
        c->g.synced = 1;
        snprintf(last_err, sizeof last_err, "mpitempo-clock: mtc_resync: %s (the clock keeps its previous model)", err);
        return rc;
    }
    c->g.nresync++;
    return MTC_OK;
}

int mtc_accuracy(mtc_clock_t *c, double *max_abs_offset_s, double *median_abs_offset_s)
{
    last_err[0] = 0;
    if (!c) return fail(MTC_EINVAL, "mpitempo-clock: mtc_accuracy: the clock is NULL");
    int rc = mpi_usable();
    if (rc != MTC_OK) return rc;
    char err[MT_ERRLEN] = "";
    mt_check_t chk;
    double w0 = 0, v[2] = {0, 0};
    rc = mt_check_run(c->comm, &c->g.res.clock, &mt_offset_skampi, 100, &w0, 1, 0, 1, c->g.lazy, &chk, err);
    if ((rc = mt_agree(c->comm, rc, err)) != MT_OK) {
        mt_check_free(&chk);
        snprintf(last_err, sizeof last_err, "mpitempo-clock: mtc_accuracy: %s", err);
        return from_core(rc, 0);
    }
    if (c->g.rank == 0) mt_check_summary(&chk, 0, &v[0], &v[1]);
    mt_check_free(&chk);
    mt_check_mpi(MPI_Bcast(v, 2, MPI_DOUBLE, 0, c->comm), "MPI_Bcast");
    if (max_abs_offset_s) *max_abs_offset_s = v[0];
    if (median_abs_offset_s) *median_abs_offset_s = v[1];
    return MTC_OK;
}

const char *mtc_spec(const mtc_clock_t *c) { return c ? c->spec : NULL; }

double mtc_sync_duration(const mtc_clock_t *c) { return c ? c->duration_s : NAN; }

int mtc_free(mtc_clock_t **cp)
{
    last_err[0] = 0;
    if (!cp) return fail(MTC_EINVAL, "mpitempo-clock: mtc_free: the pointer (clk) is NULL");
    mtc_clock_t *c = *cp;
    if (!c) return MTC_OK;
    int rc = mpi_usable();
    if (rc != MTC_OK) return rc;
    mt_gclock_free(&c->g);
    mt_check_mpi(MPI_Comm_free(&c->comm), "MPI_Comm_free");
    free(c);
    *cp = NULL;
    return MTC_OK;
}
