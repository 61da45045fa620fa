/* mpitempo-tree: allreduce as an explicit spanning tree, reshaped and remapped
 * by the user and instrumented with global-clock event collectors (Bongo,
 * Anshus and Bjorndalen 2004). Workloads: Gsum (N allreduce calls of a global
 * sum alternating two identical trees) and a red-black SOR kernel whose
 * convergence test is the allreduce. Before measuring, the tree's result is
 * checked against MPI_Allreduce, and the event collectors' overhead is measured
 * (Gsum blocks without and with collection, interleaved). Writes DIR/events.csv,
 * DIR/links.csv and DIR/meta.json (atomically) with --outdir, or meta.json on
 * stdout. File formats: docs/tree.md. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/mt_common.h"
#include "clock/session.h"
#include "op/op.h"
#include "run/run.h"
#include "tree/tree.h"
#include "tree/tree_ar.h"

#define HOSTLEN 64

typedef struct treeapp {
    mt_tree_spec_t spec;
    int *map;                 /* --tree-map (node -> rank) or NULL */
    int nmap;
    char **hosts;             /* --tree-hosts (node -> host name) or NULL */
    int nhosts_given;
    int down_order;
    int sor;
    const mt_dtype_t *dtype;
    const mt_redop_t *redop;
    int imb_rank;             /* -1: none */
    double imb_s;
    double work_flops;        /* --work: flops every rank computes before every allreduce (gsum) */
    mt_sync_spec_t sync;
    int64_t sample; /* --sample: events of every K-th call of each tree */
} treeapp_t;

static int parse_int_list(const char *s, const char *flag, int **out, int *n, char *err)
{
    char **items;
    int ni, rc = mt_split_list(s, &items, &ni, err);
    if (rc != MT_OK) return rc;
    int *v = malloc(sizeof(int) * (size_t)ni);
    if (!v) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int i = 0; i < ni && rc == MT_OK; i++) {
        long long x;
        char what[64];
        snprintf(what, sizeof what, "%s entry", flag);
        if ((rc = mt_parse_int(items[i], what, 0, INT_MAX, &x, err)) == MT_OK) v[i] = (int)x;
    }
    mt_free_list(items, ni);
    if (rc != MT_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = ni;
    return MT_OK;
}

static int check(mt_run_t *r, int np, char *err)
{
    const mt_params_t *p = &r->cli.p;
    treeapp_t *a = r->state = calloc(1, sizeof *a);
    if (!a) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = mt_tree_spec_parse(mt_p_str(p, MTP_tree), &a->spec, err);
    if (rc != MT_OK) return rc;
    if (mt_p_set(p, MTP_tree_map) && (rc = parse_int_list(mt_p_str(p, MTP_tree_map), "--tree-map", &a->map, &a->nmap,
                                                          err)) != MT_OK)
        return rc;
    if (mt_p_set(p, MTP_tree_hosts)) {
        if (a->map) return mt_fail(err, MT_EINVAL, "--tree-map and --tree-hosts exclude each other: give one of them");
        if ((rc = mt_split_list(mt_p_str(p, MTP_tree_hosts), &a->hosts, &a->nhosts_given, err)) != MT_OK) return rc;
    }
    if ((a->map || a->hosts) && (a->spec.shape == MT_SHAPE_NODE || a->spec.shape == MT_SHAPE_MPI))
        return mt_fail(err, MT_EINVAL, "--tree %s places its nodes itself: no --tree-map or --tree-hosts",
                       mt_p_str(p, MTP_tree));
    const char *d = mt_p_str(p, MTP_down_order);
    if (!strcmp(d, "fixed")) a->down_order = MT_TAR_DOWN_FIXED;
    else if (!strcmp(d, "lifo")) a->down_order = MT_TAR_DOWN_LIFO;
    else return mt_fail(err, MT_EINVAL, "invalid --down-order '%s' (allowed: fixed, lifo)", d);
    const char *w = mt_p_str(p, MTP_workload);
    if (!strcmp(w, "sor")) a->sor = 1;
    else if (strcmp(w, "gsum")) return mt_fail(err, MT_EINVAL, "invalid --workload '%s' (allowed: gsum, sor)", w);
    char allowed[256];
    if (!(a->dtype = mt_dtype_find(mt_p_str(p, MTP_datatype)))) {
        mt_dtype_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown datatype '%s' (allowed: %s)", mt_p_str(p, MTP_datatype), allowed);
    }
    if (!(a->redop = mt_redop_find(mt_p_str(p, MTP_redop)))) {
        mt_redop_names(allowed, sizeof allowed);
        return mt_fail(err, MT_EINVAL, "unknown reduction op '%s' (allowed: %s)", mt_p_str(p, MTP_redop), allowed);
    }
    if (mt_p_set(p, MTP_msize) && mt_p_size(p, MTP_msize) < a->dtype->size)
        return mt_fail(err, MT_EINVAL, "invalid --msize %lld: smaller than one %s (%d B)",
                       (long long)mt_p_size(p, MTP_msize), a->dtype->name, a->dtype->size);
    a->imb_rank = -1;
    if (mt_p_set(p, MTP_imbalance)) {
        const char *s = mt_p_str(p, MTP_imbalance), *c = strchr(s, ':');
        long long rk;
        char rs[32];
        if (!c || c == s || (size_t)(c - s) >= sizeof rs)
            return mt_fail(err, MT_EINVAL, "invalid --imbalance '%s': expected RANK:TIME, e.g. 3:50us", s);
        snprintf(rs, sizeof rs, "%.*s", (int)(c - s), s);
        if ((rc = mt_parse_int(rs, "--imbalance rank", 0, INT_MAX, &rk, err)) != MT_OK) return rc;
        if ((rc = mt_parse_duration_as(c + 1, "--imbalance time", &a->imb_s, err)) != MT_OK) return rc;
        if (np > 0 && rk >= np)
            return mt_fail(err, MT_EINVAL, "invalid --imbalance '%s': rank %lld, the job has ranks 0..%d", s, rk, np - 1);
        a->imb_rank = (int)rk;
    }
    a->work_flops = (double)mt_p_int(p, MTP_work);
    if (a->sor && a->work_flops > 0)
        return mt_fail(err, MT_EINVAL, "--work applies to --workload gsum (sor computes its own sweeps)");
    if ((rc = mt_sync_spec_parse(mt_p_str(p, MTP_sync), &a->sync, err)) != MT_OK) return rc;
    if (np > 0) { /* what the job size decides */
        if (a->map && a->nmap != np)
            return mt_fail(err, MT_EINVAL, "invalid --tree-map: %d entries for %d ranks (one rank per tree node)",
                           a->nmap, np);
        if (a->hosts && a->nhosts_given != np)
            return mt_fail(err, MT_EINVAL, "invalid --tree-hosts: %d entries for %d ranks (one host per tree node)",
                           a->nhosts_given, np);
        if (a->spec.shape != MT_SHAPE_NODE && a->spec.shape != MT_SHAPE_MPI) {
            int *par = malloc(sizeof(int) * (size_t)np), *pr = malloc(sizeof(int) * (size_t)np);
            rc = par && pr ? mt_tree_build_shape(&a->spec, np, par, err) : mt_fail(err, MT_ENOMEM, "out of memory");
            if (rc == MT_OK && a->map) rc = mt_tree_map(par, a->map, np, pr, err);
            free(par);
            free(pr);
            if (rc != MT_OK) return rc;
        }
        if (a->sor && np < 2) return mt_fail(err, MT_EINVAL, "--workload sor needs at least 2 ranks");
    }
    return MT_OK;
}

static void check_json(mt_run_t *r, mt_json_t *j)
{
    treeapp_t *a = r->state;
    mt_json_kstr(j, "tree", mt_p_str(&r->cli.p, MTP_tree));
    mt_json_kstr(j, "workload", a->sor ? "sor" : "gsum");
}

static void list(mt_json_t *j)
{
    char buf[256];
    mt_tree_shape_names(buf, sizeof buf);
    mt_json_kstr(j, "tree_shapes", buf);
    mt_dtype_write_list(j);
}

/* -- the tree of this job ------------------------------------------------------------------ */

typedef struct job {
    int n;
    char (*host)[HOSTLEN];    /* per rank */
    int *hidx;                /* per rank: index of its host (first appearance) */
    int nh;
    int *parent;              /* per rank */
    int *map;                 /* node -> rank */
    int *depth;
} job_t;

static int job_hosts(job_t *jb, MPI_Comm comm)
{
    char me[HOSTLEN] = {0};
    mt_host_name(me, sizeof me); /* under SMPI: the simulated host */
    jb->host = calloc((size_t)jb->n, HOSTLEN);
    jb->hidx = malloc(sizeof(int) * (size_t)jb->n);
    if (!jb->host || !jb->hidx) return MT_ENOMEM;
    mt_check_mpi(MPI_Allgather(me, HOSTLEN, MPI_CHAR, jb->host, HOSTLEN, MPI_CHAR, comm), "MPI_Allgather");
    jb->nh = 0;
    for (int r = 0; r < jb->n; r++) {
        int h = -1;
        for (int q = 0; q < r && h < 0; q++)
            if (!strcmp(jb->host[q], jb->host[r])) h = jb->hidx[q];
        jb->hidx[r] = h >= 0 ? h : jb->nh++;
    }
    return MT_OK;
}

/* --tree-hosts: node i runs on the lowest free rank of host hosts[i] */
static int map_hosts(const treeapp_t *a, const job_t *jb, int *map, char *err)
{
    int n = jb->n;
    int *used = calloc((size_t)n, sizeof(int));
    if (!used) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        int found = 0, free_rank = -1;
        for (int r = 0; r < n; r++)
            if (!strcmp(jb->host[r], a->hosts[i])) {
                found++;
                if (!used[r] && free_rank < 0) free_rank = r;
            }
        if (!found) {
            char names[512] = "";
            for (int r = 0, last = -1; r < n; r++) /* host indices grow in order of first appearance */
                if (jb->hidx[r] > last) {
                    mt_names_add(names, sizeof names, jb->host[r]);
                    last = jb->hidx[r];
                }
            rc = mt_fail(err, MT_EINVAL, "invalid --tree-hosts: node %d is mapped to host '%s', which is not in the job "
                         "(hosts: %s)", i, a->hosts[i], names);
        } else if (free_rank < 0) {
            rc = mt_fail(err, MT_EINVAL, "invalid --tree-hosts: node %d is mapped to host '%s', which has no free rank "
                         "left (%d ranks there)", i, a->hosts[i], found);
        } else {
            map[i] = free_rank;
            used[free_rank] = 1;
        }
    }
    free(used);
    return rc;
}

static int job_tree(const treeapp_t *a, job_t *jb, char *err)
{
    int n = jb->n;
    int *node = malloc(sizeof(int) * (size_t)n);
    jb->parent = malloc(sizeof(int) * (size_t)n);
    jb->map = malloc(sizeof(int) * (size_t)n);
    jb->depth = malloc(sizeof(int) * (size_t)n);
    if (!node || !jb->parent || !jb->map || !jb->depth) {
        free(node);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    int rc = MT_OK;
    for (int i = 0; i < n; i++) jb->map[i] = i;
    if (a->spec.shape == MT_SHAPE_MPI) {
        for (int i = 0; i < n; i++) jb->parent[i] = i ? 0 : -1; /* nominal: the library's algorithm is unknown */
    } else if (a->spec.shape == MT_SHAPE_NODE) {
        rc = mt_tree_build_node(&a->spec, n, jb->hidx, jb->parent, err);
    } else {
        rc = mt_tree_build_shape(&a->spec, n, node, err);
        if (rc == MT_OK && a->hosts) rc = map_hosts(a, jb, jb->map, err);
        else if (rc == MT_OK && a->map) memcpy(jb->map, a->map, sizeof(int) * (size_t)n);
        if (rc == MT_OK) rc = mt_tree_map(node, jb->map, n, jb->parent, err);
        if (rc == MT_OK) rc = mt_tree_check(jb->parent, n, err);
    }
    if (rc == MT_OK) mt_tree_depths(jb->parent, n, jb->depth);
    free(node);
    return rc;
}

static void job_free(job_t *jb)
{
    free(jb->host);
    free(jb->hidx);
    free(jb->parent);
    free(jb->map);
    free(jb->depth);
}

/* -- workloads ------------------------------------------------------------------------------- */

/* the injected imbalance: busy-wait (sleep when ranks share CPUs) */
static void imbalance_wait(const mt_timer_inst_t *ti, double s, int lazy)
{
    if (lazy) {
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
        return;
    }
    int64_t t0 = ti->t->now(), ticks = (int64_t)(s * ti->ticks_per_s);
    while (ti->t->now() - t0 < ticks) {
    }
}

/* input of rank r: small integers, exact in every datatype and under every op
 * and reduction order for sums (and for products of up to a few dozen ranks) */
static void fill_input(const mt_dtype_t *dt, void *buf, int count, int rank, int salt)
{
    for (int i = 0; i < count; i++) {
        int v = 1 + (rank * 7 + i * 3 + salt) % 5;
        MPI_Datatype t = dt->reduce;
        if (t == MPI_UNSIGNED_CHAR) ((unsigned char *)buf)[i] = (unsigned char)v;
        else if (t == MPI_SIGNED_CHAR) ((signed char *)buf)[i] = (signed char)v;
        else if (t == MPI_INT) ((int *)buf)[i] = v;
        else if (t == MPI_LONG) ((long *)buf)[i] = v;
        else if (t == MPI_INT64_T) ((int64_t *)buf)[i] = v;
        else if (t == MPI_FLOAT) ((float *)buf)[i] = (float)v;
        else ((double *)buf)[i] = (double)v;
    }
}

/* the tree's result against MPI_Allreduce on the same input (byte for byte:
 * integer results are exact, and the inputs make float results exact too) */
static int verify(mt_tar_t *t, const mt_dtype_t *dt, int rank, int *mismatch_at, char *err)
{
    size_t b = t->bytes ? t->bytes : 1;
    char *in = malloc(b), *x = malloc(b), *y = malloc(b);
    if (!in || !x || !y) {
        free(in);
        free(x);
        free(y);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    int bad = -1;
    for (int salt = 0; salt < 3 && bad < 0; salt++) {
        fill_input(dt, in, t->count, rank, salt);
        memset(x, 0, b);
        memset(y, 0x55, b);
        mt_check_mpi(mt_tar_call(t, in, x, 0), "tree allreduce");
        mt_check_mpi(MPI_Allreduce(in, y, t->count, t->type, t->op, t->comm), "MPI_Allreduce");
        for (size_t i = 0; i < t->bytes && bad < 0; i++)
            if (x[i] != y[i]) bad = (int)(i / (size_t)dt->size);
    }
    free(in);
    free(x);
    free(y);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, t->comm);
    *mismatch_at = all;
    return MT_OK;
}

typedef struct sor {
    int rows, cols, row0, nglob;
    double *u;                /* (rows + 2) x cols */
    double omega;
    double compute_s, halo_s, allreduce_s, imbalance_s;
    int64_t converged_at;     /* first iteration with residual < 1e-8, or -1 */
    double last_residual;
} sor_t;

/* Floating-point operations per grid point, charged to the simulated host under SMPI (mt_sim_flops):
 * an update is 3 additions and a multiplication for the neighbours' mean, then a subtraction, a
 * multiplication and an addition; the residual a subtraction, a multiplication and an addition. */
#define SOR_FLOPS_UPDATE 7.0
#define SOR_FLOPS_RESIDUAL 3.0

static void sor_sweep(sor_t *s, int color)
{
    int c = s->cols;
    double points = 0;
    for (int i = 1; i <= s->rows; i++) {
        int gi = s->row0 + i - 1;
        if (gi == 0 || gi == s->nglob - 1) continue; /* fixed boundary rows */
        double *u = s->u + (size_t)i * (size_t)c;
        for (int j = 1 + ((gi + 1 + color) & 1); j < c - 1; j += 2) {
            double nu = 0.25 * (u[j - c] + u[j + c] + u[j - 1] + u[j + 1]);
            u[j] += s->omega * (nu - u[j]);
            points += 1;
        }
    }
    mt_sim_flops(SOR_FLOPS_UPDATE * points);
}

static void sor_halo(sor_t *s, MPI_Comm comm, int rank, int size)
{
    int c = s->cols, up = rank > 0 ? rank - 1 : MPI_PROC_NULL, dn = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    mt_check_mpi(MPI_Sendrecv(s->u + c, c, MPI_DOUBLE, up, 11, s->u + (size_t)(s->rows + 1) * (size_t)c, c,
                              MPI_DOUBLE, dn, 11, comm, MPI_STATUS_IGNORE), "MPI_Sendrecv");
    mt_check_mpi(MPI_Sendrecv(s->u + (size_t)s->rows * (size_t)c, c, MPI_DOUBLE, dn, 12, s->u, c, MPI_DOUBLE, up, 12,
                              comm, MPI_STATUS_IGNORE), "MPI_Sendrecv");
}

/* -- output ------------------------------------------------------------------------------------ */

/* this rank's events of instance t as doubles on the global clock:
 * per call enter, up, down, exit, arr[n], dep[n], aord[n], dord[n] */
static double *pack_events(const mt_tar_t *t, const mt_clock_t *gc, int *len)
{
    int n = t->nkids, w = MT_TAR_NFIX + 4 * n;
    double *v = malloc(sizeof(double) * (size_t)(t->ncalls ? t->ncalls : 1) * (size_t)w);
    if (!v) return NULL;
    for (int64_t c = 0; c < t->ncalls; c++) {
        const int64_t *e = t->ev + c * t->stride;
        double *o = v + c * w;
        for (int k = 0; k < MT_TAR_NFIX + 2 * n; k++) o[k] = mt_clock_apply(gc, mt_base_from_ticks(gc->base, e[k]));
        for (int k = 0; k < n; k++) {
            o[MT_TAR_NFIX + 2 * n + k] = t->aord[c * n + k];
            o[MT_TAR_NFIX + 3 * n + k] = t->dord[c * n + k];
        }
    }
    *len = (int)(t->ncalls * w);
    return v;
}

static int write_events(mt_run_t *r, mt_tar_t *inst, int ninst, const job_t *jb, const mt_clock_t *gc, char *err)
{
    MPI_Comm comm = r->ctx.comm;
    int n = jb->n, me = r->ctx.rank, writer = r->writer;
    FILE *ev = mt_run_file(r, "events.csv"), *ln = mt_run_file(r, "links.csv");
    if (ev) fprintf(ev, "call,inst,rank,enter_s,up_s,down_s,exit_s\n");
    if (ln) fprintf(ln, "call,inst,parent,child,arrive_s,depart_s,arrival_order,departure_order\n");
    int *lens = me == writer ? malloc(sizeof(int) * (size_t)n) : NULL, *displs = me == writer ? malloc(sizeof(int) * (size_t)n) : NULL;
    int *kids = malloc(sizeof(int) * (size_t)n * (size_t)(n > 1 ? n : 1)), *nk = calloc((size_t)n, sizeof(int));
    if (!kids || !nk || (me == writer && (!lens || !displs))) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int c = 0; c < n; c++) /* children of every rank, ascending, as mt_tar_init ordered them */
        if (jb->parent[c] >= 0 && !inst[0].use_mpi) kids[jb->parent[c] * n + nk[jb->parent[c]]++] = c;
    for (int q = 0; q < ninst; q++) {
        int len = 0;
        double *mine = pack_events(&inst[q], gc, &len), *all = NULL;
        if (!mine) return mt_fail(err, MT_ENOMEM, "out of memory");
        mt_check_mpi(MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, writer, comm), "MPI_Gather");
        if (me == writer) {
            long long tot = 0;
            for (int i = 0; i < n; i++) {
                displs[i] = (int)tot;
                tot += lens[i];
            }
            if (tot > INT_MAX || !(all = malloc(sizeof(double) * (size_t)(tot ? tot : 1))))
                return mt_fail(err, MT_ENOMEM, "out of memory gathering %lld event values", tot);
        }
        mt_check_mpi(MPI_Gatherv(mine, len, MPI_DOUBLE, all, lens, displs, MPI_DOUBLE, writer, comm), "MPI_Gatherv");
        free(mine);
        if (me == writer && ev) {
            int64_t ncalls = inst[q].ncalls; /* every rank recorded the same number */
            int64_t sample = ((const treeapp_t *)r->state)->sample;
            for (int64_t c = 0; c < ncalls; c++) {
                long long call = ninst > 1 ? c * sample * ninst + q : c * sample; /* the call's index in the run */
                for (int rk = 0; rk < n; rk++) {
                    int k = nk[rk], w = MT_TAR_NFIX + 4 * k;
                    const double *o = all + displs[rk] + c * w;
                    fprintf(ev, "%lld,%d,%d,%.9f,%.9f,%.9f,%.9f\n", call, q, rk, o[0], o[1], o[2], o[3]);
                    for (int i = 0; i < k; i++)
                        fprintf(ln, "%lld,%d,%d,%d,%.9f,%.9f,%d,%d\n", call, q, rk, kids[rk * n + i], o[MT_TAR_NFIX + i],
                                o[MT_TAR_NFIX + k + i], (int)o[MT_TAR_NFIX + 2 * k + i], (int)o[MT_TAR_NFIX + 3 * k + i]);
                }
            }
        }
        free(all);
    }
    free(lens);
    free(displs);
    free(kids);
    free(nk);
    return MT_OK;
}

static volatile double work_sink;

/* --work: `flops` floating-point operations, as multiply-adds (2 flops each) on hardware; under SMPI
 * charged to the simulated host at its speed (mt_sim_flops), which the simulation does not otherwise
 * time (smpi/simulate-computation:no) */
static void do_work(double flops)
{
    if (!(flops > 0)) return;
#ifdef MT_SMPI
    mt_sim_flops(flops);
#else
    double x = work_sink + 1.0;
    for (int64_t i = 0; i < (int64_t)(flops / 2); i++) x = x * 0.999999 + 1e-9;
    work_sink = x;
#endif
}

/* one Gsum block: calls allreduces alternating the two trees; max over ranks of the local elapsed time */
static double gsum_block(mt_run_t *r, treeapp_t *a, mt_tar_t *inst, int64_t calls, int record, const void *in,
                         void *out)
{
    const mt_timer_inst_t *ti = &r->ctx.timer;
    mt_check_mpi(MPI_Barrier(r->ctx.comm), "MPI_Barrier");
    int64_t t0 = ti->t->now();
    int imb = a->imb_rank == r->ctx.rank;
    for (int64_t k = 0; k < calls; k++) {
        do_work(a->work_flops);
        if (imb) imbalance_wait(ti, a->imb_s, r->ctx.lazy);
        /* the calls alternate the two trees: call k is call k/2 of its tree */
        mt_tar_call(&inst[k & 1], in, out, record && (k >> 1) % a->sample == 0);
    }
    double el = mt_ticks_to_s(ti, ti->t->now() - t0), mx;
    MPI_Allreduce(&el, &mx, 1, MPI_DOUBLE, MPI_MAX, r->ctx.comm);
    return mx;
}

static int run(mt_run_t *r, char *err)
{
    treeapp_t *a = r->state;
    mt_ctx_t *ctx = &r->ctx;
    const mt_params_t *p = &r->cli.p;
    const mt_timer_inst_t *ti = &ctx->timer;
    int n = ctx->size, me = ctx->rank, rc;
    job_t jb = {.n = n};
    rc = job_hosts(&jb, ctx->comm) == MT_OK ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) rc = job_tree(a, &jb, err);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) {
        job_free(&jb);
        return rc;
    }
    /* the global clock */
    mt_gclock_t gc;
    rc = mt_gclock_init(&gc, ctx->comm, ti, NULL, NULL, NULL, ctx->lazy, err);
    if (rc == MT_OK) rc = mt_gclock_sync(&gc, &a->sync, err);
    if (rc != MT_OK) {
        job_free(&jb);
        return rc;
    }
    mt_clock_t base_only, gclk;
    mt_clock_init(&base_only, &gc.base);
    gclk = mt_gclock_clock(&gc) ? *mt_gclock_clock(&gc) : base_only;

    /* the trees: two identical instances (Gsum alternates them), one for SOR */
    int count = a->sor ? 1 : mt_p_set(p, MTP_msize) ? (int)(mt_p_size(p, MTP_msize) / a->dtype->size) : n;
    MPI_Datatype type = a->sor ? MPI_DOUBLE : a->dtype->reduce;
    MPI_Op op = a->sor ? MPI_SUM : a->redop->op;
    const mt_dtype_t *vdt = a->sor ? mt_dtype_find("double") : a->dtype;
    int64_t ncalls = mt_p_int(p, MTP_ncalls), warm = mt_p_int(p, MTP_warmup);
    int64_t oreps = mt_p_int(p, MTP_overhead_reps); /* measured on Gsum blocks for both workloads */
    int64_t ocalls = mt_p_int(p, MTP_overhead_calls);
    int ninst = a->sor ? 1 : 2;
    a->sample = mt_p_int(p, MTP_sample);
    int64_t per_tree = (ncalls + ninst - 1) / ninst, cap = (per_tree + a->sample - 1) / a->sample;
    int64_t ocap = ((ocalls + 1) / 2 + a->sample - 1) / a->sample;
    if (oreps > 0 && ocap > cap) cap = ocap;
    mt_tar_t inst[2];
    memset(inst, 0, sizeof inst);
    int use_mpi = a->spec.shape == MT_SHAPE_MPI;
    for (int q = 0; q < 2 && rc == MT_OK; q++) /* two for the overhead's Gsum blocks even with SOR */
        rc = mt_tar_init(&inst[q], ctx->comm, jb.parent, use_mpi, a->down_order, type, op, count, cap, ti, err);
    if ((rc = mt_agree(ctx->comm, rc, err)) != MT_OK) goto out;

    /* the result against MPI_Allreduce */
    int bad = -1;
    if ((rc = mt_agree(ctx->comm, verify(&inst[0], vdt, me, &bad, err), err)) != MT_OK) goto out;
    if (bad >= 0) {
        rc = mt_fail(err, MT_EMPI, "the tree's allreduce differs from MPI_Allreduce at element %d (%s, %s)", bad,
                     vdt->name, a->sor ? "sum" : a->redop->name);
        goto out;
    }
    size_t bytes = inst[0].bytes ? inst[0].bytes : 1;
    char *in = malloc(bytes), *res = malloc(bytes);
    if (!in || !res) {
        free(in);
        free(res);
        rc = mt_fail(err, MT_ENOMEM, "out of memory");
        goto out;
    }
    fill_input(vdt, in, count, me, 0);

    /* the event collectors' overhead: Gsum blocks without and with collection, in alternating order */
    double *off = calloc((size_t)(oreps ? oreps : 1), sizeof(double)), *on = calloc((size_t)(oreps ? oreps : 1), sizeof(double));
    for (int64_t k = 0; k < warm; k++) mt_tar_call(&inst[k & 1], in, res, 0);
    for (int64_t k = 0; k < oreps; k++) {
        int first_on = (int)(k & 1);
        for (int h = 0; h < 2; h++) {
            int rec = h == 0 ? first_on : !first_on;
            double t = gsum_block(r, a, inst, ocalls, rec, in, res) / (double)ocalls;
            (rec ? on : off)[k] = t;
            inst[0].ncalls = inst[1].ncalls = 0;
        }
        if (me == 0 && mt_run_progress(r) && (k + 1) % 5 == 0)
            fprintf(stderr, "%s: overhead blocks %lld/%lld\n", r->app->prog, (long long)k + 1, (long long)oreps);
    }
    double ov_on = 0, ov_off = 0, ov_pct = NAN;
    double *onc = malloc(sizeof(double) * (size_t)(oreps ? oreps : 1)), *offc = malloc(sizeof(double) * (size_t)(oreps ? oreps : 1));
    double ov_unpaired = NAN;
    if (oreps > 0 && onc && offc) {
        memcpy(onc, on, sizeof(double) * (size_t)oreps);
        memcpy(offc, off, sizeof(double) * (size_t)oreps);
        ov_on = mt_median_inplace(onc, (int)oreps);
        ov_off = mt_median_inplace(offc, (int)oreps);
        ov_unpaired = 100.0 * (ov_on - ov_off) / ov_off;
        /* paired: each block with collection against the block without it next to it in time,
         * which cancels the machine's slow changes of state (median of the relative differences) */
        for (int64_t k = 0; k < oreps; k++) onc[k] = (on[k] - off[k]) / off[k];
        ov_pct = 100.0 * mt_median_inplace(onc, (int)oreps);
    }
    free(onc);
    free(offc);

    /* the recorded run */
    double runtime = 0;
    sor_t s;
    memset(&s, 0, sizeof s);
    if (me == 0 && mt_run_progress(r))
        fprintf(stderr, "%s: %s, %lld allreduce calls on %d ranks, %s\n", r->app->prog, a->sor ? "sor" : "gsum",
                (long long)ncalls, n, a->sample > 1 ? "every N-th recorded (--sample)" : "every one recorded");
    if (!a->sor) {
        runtime = gsum_block(r, a, inst, ncalls, 1, in, res);
    } else {
        s.rows = (int)mt_p_int(p, MTP_sor_rows);
        s.cols = (int)mt_p_int(p, MTP_sor_cols);
        s.row0 = me * s.rows;
        s.nglob = n * s.rows;
        s.omega = 1.5;
        s.converged_at = -1;
        s.u = calloc((size_t)(s.rows + 2) * (size_t)s.cols, sizeof(double));
        if (!s.u) {
            rc = mt_fail(err, MT_ENOMEM, "out of memory for the SOR grid");
        } else {
            if (me == 0)
                for (int j = 0; j < s.cols; j++) s.u[(size_t)s.cols + j] = 1.0; /* hot top edge */
            mt_check_mpi(MPI_Barrier(ctx->comm), "MPI_Barrier");
            int64_t t0 = ti->t->now();
            double *old = malloc(sizeof(double) * (size_t)(s.rows + 2) * (size_t)s.cols);
            for (int64_t it = 0; it < ncalls && old; it++) {
                int64_t c0 = ti->t->now();
                memcpy(old, s.u, sizeof(double) * (size_t)(s.rows + 2) * (size_t)s.cols);
                sor_sweep(&s, 0);
                int64_t c1 = ti->t->now();
                sor_halo(&s, ctx->comm, me, n);
                int64_t c2 = ti->t->now();
                sor_sweep(&s, 1);
                double loc = 0;
                for (size_t i = (size_t)s.cols; i < (size_t)(s.rows + 1) * (size_t)s.cols; i++) {
                    double d = s.u[i] - old[i];
                    loc += d * d;
                }
                mt_sim_flops(SOR_FLOPS_RESIDUAL * (double)s.rows * (double)s.cols);
                int64_t c3 = ti->t->now();
                sor_halo(&s, ctx->comm, me, n);
                int64_t c4 = ti->t->now();
                if (a->imb_rank == me) imbalance_wait(ti, a->imb_s, ctx->lazy);
                int64_t c5 = ti->t->now();
                double glob = 0;
                mt_tar_call(&inst[0], &loc, &glob, it % a->sample == 0);
                int64_t c6 = ti->t->now();
                s.compute_s += mt_ticks_to_s(ti, (c1 - c0) + (c3 - c2));
                s.halo_s += mt_ticks_to_s(ti, (c2 - c1) + (c4 - c3));
                s.imbalance_s += mt_ticks_to_s(ti, c5 - c4);
                s.allreduce_s += mt_ticks_to_s(ti, c6 - c5);
                s.last_residual = sqrt(glob);
                if (s.converged_at < 0 && s.last_residual < 1e-8) s.converged_at = it;
            }
            free(old);
            double el = mt_ticks_to_s(ti, ti->t->now() - t0);
            MPI_Allreduce(&el, &runtime, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
            double loc4[4] = {s.compute_s, s.halo_s, s.allreduce_s, s.imbalance_s}, sum4[4];
            MPI_Reduce(loc4, sum4, 4, MPI_DOUBLE, MPI_SUM, 0, ctx->comm);
            if (me == 0)
                for (int k = 0; k < 4; k++) loc4[k] = sum4[k] / n;
            s.compute_s = loc4[0];
            s.halo_s = loc4[1];
            s.allreduce_s = loc4[2];
            s.imbalance_s = loc4[3];
        }
    }
    if ((rc = mt_agree(ctx->comm, rc, err)) == MT_OK) rc = mt_gclock_finish(&gc, err);
    if (rc == MT_OK) rc = write_events(r, inst, a->sor ? 1 : 2, &jb, &gclk, err);
    if ((rc = mt_agree(ctx->comm, rc, err)) == MT_OK) {
        mt_json_t *j = mt_run_meta_begin(r, 1);
        if (j) {
            mt_json_key(j, "timer");
            mt_run_write_timer(r, j);
            mt_json_key(j, "clock");
            mt_json_obj_begin(j);
            mt_gclock_write_meta(&gc, j, 0, 0);
            mt_json_obj_end(j);
            mt_json_kbool(j, "oversubscribed", ctx->oversubscribed);
            mt_json_key(j, "tree");
            mt_json_obj_begin(j);
            mt_json_kstr(j, "spec", mt_p_str(p, MTP_tree));
            mt_json_kbool(j, "mpi_allreduce", use_mpi);
            mt_json_kstr(j, "down_order", mt_p_str(p, MTP_down_order));
            mt_json_key(j, "parent");
            mt_json_arr_begin(j);
            for (int i = 0; i < n; i++) mt_json_int(j, jb.parent[i]);
            mt_json_arr_end(j);
            mt_json_key(j, "node_rank");
            mt_json_arr_begin(j);
            for (int i = 0; i < n; i++) mt_json_int(j, jb.map[i]);
            mt_json_arr_end(j);
            mt_json_key(j, "depth");
            mt_json_arr_begin(j);
            for (int i = 0; i < n; i++) mt_json_int(j, jb.depth[i]);
            mt_json_arr_end(j);
            mt_json_key(j, "host");
            mt_json_arr_begin(j);
            for (int i = 0; i < n; i++) mt_json_str(j, jb.host[i]);
            mt_json_arr_end(j);
            mt_json_kint(j, "nhosts", jb.nh);
            mt_json_kint(j, "instances", a->sor ? 1 : 2);
            mt_json_obj_end(j);
            mt_json_key(j, "workload");
            mt_json_obj_begin(j);
            mt_json_kstr(j, "name", a->sor ? "sor" : "gsum");
            mt_json_kint(j, "ncalls", ncalls);
            mt_json_kint(j, "sample", a->sample);
            mt_json_kint(j, "recorded_calls", inst[0].ncalls + (a->sor ? 0 : inst[1].ncalls));
            mt_json_kint(j, "warmup", warm);
            mt_json_kstr(j, "datatype", vdt->name);
            mt_json_kstr(j, "redop", a->sor ? "sum" : a->redop->name);
            mt_json_kint(j, "count", count);
            mt_json_kint(j, "msize", (long long)count * vdt->size);
            mt_json_knum(j, "runtime_s", runtime);
            mt_json_knum(j, "per_call_s", runtime / (double)ncalls);
            mt_json_key(j, "imbalance");
            if (a->imb_rank >= 0) {
                mt_json_obj_begin(j);
                mt_json_kint(j, "rank", a->imb_rank);
                mt_json_knum(j, "delay_s", a->imb_s);
                mt_json_kstr(j, "wait", ctx->lazy ? "sleep" : "busy-wait");
                mt_json_obj_end(j);
            } else {
                mt_json_null(j);
            }
            mt_json_knum(j, "work_flops", a->work_flops);
            if (a->sor) {
                mt_json_kint(j, "rows_per_rank", s.rows);
                mt_json_kint(j, "cols", s.cols);
                mt_json_knum(j, "omega", s.omega);
                mt_json_knum(j, "compute_s", s.compute_s);
                /* under SMPI the sweeps cost their flops at the simulated host's speed */
                if (MT_SIMULATED) mt_json_kstr(j, "compute_model", "flops at the simulated host's speed: 7 per "
                                                                    "update, 3 per residual point");
                mt_json_knum(j, "halo_s", s.halo_s);
                mt_json_knum(j, "allreduce_s", s.allreduce_s);
                mt_json_knum(j, "imbalance_s", s.imbalance_s);
                double comm_s = s.halo_s + s.allreduce_s;
                mt_json_knum(j, "comm_fraction", comm_s / (comm_s + s.compute_s + s.imbalance_s));
                mt_json_knum(j, "residual", s.last_residual);
                mt_json_key(j, "converged_at");
                if (s.converged_at >= 0) mt_json_int(j, s.converged_at);
                else mt_json_null(j);
            }
            mt_json_obj_end(j);
            mt_json_key(j, "verify");
            mt_json_obj_begin(j);
            mt_json_kstr(j, "against", "MPI_Allreduce");
            mt_json_kint(j, "inputs", 3);
            mt_json_kbool(j, "equal", 1);
            mt_json_obj_end(j);
            mt_json_key(j, "overhead");
            mt_json_obj_begin(j);
            mt_json_kint(j, "reps", oreps);
            mt_json_kint(j, "calls_per_block", ocalls);
            mt_json_kint(j, "sample", a->sample);
            mt_json_kstr(j, "workload", "gsum");
            if (oreps > 0) {
                mt_json_knum(j, "per_call_off_s", ov_off);
                mt_json_knum(j, "per_call_on_s", ov_on);
                mt_json_knum(j, "overhead_pct", ov_pct);
                mt_json_knum(j, "overhead_unpaired_pct", ov_unpaired);
                mt_json_key(j, "blocks_off_s");
                mt_json_arr_begin(j);
                for (int64_t k = 0; k < oreps; k++) mt_json_num(j, off[k]);
                mt_json_arr_end(j);
                mt_json_key(j, "blocks_on_s");
                mt_json_arr_begin(j);
                for (int64_t k = 0; k < oreps; k++) mt_json_num(j, on[k]);
                mt_json_arr_end(j);
            } else {
                mt_json_key(j, "overhead_pct");
                mt_json_null(j);
            }
            mt_json_obj_end(j);
        }
    }
    free(off);
    free(on);
    free(s.u);
    free(in);
    free(res);
out:
    for (int q = 0; q < 2; q++)
        if (inst[q].kids) mt_tar_free(&inst[q]);
    mt_gclock_free(&gc);
    job_free(&jb);
    return rc;
}

static void done(mt_run_t *r)
{
    treeapp_t *a = r->state;
    if (!a) return;
    mt_tree_spec_free(&a->spec);
    free(a->map);
    if (a->hosts) mt_free_list(a->hosts, a->nhosts_given);
    free(a);
    r->state = NULL;
}

static const mt_choices_t choices[] = {
    {MTP_tree, NULL, NULL, "SPEC"}, /* its help lists the shapes */
    {MTP_datatype, mt_dtype_names, NULL, NULL},
    {MTP_redop, mt_redop_names, NULL, NULL},
    {MTP_sync, mt_sync_names, "algorithms", "SPEC"},
    {-1, NULL, NULL, NULL},
};

static const mt_result_file_t files[] = {{"events.csv", 0}, {"links.csv", 0}, {"meta.json", 0}, {NULL, 0}};

static const mt_app_t tree_app = {
    .prog = "mpitempo-tree",
    .id = MT_APP_TREE,
    .kind = "tree",
    .about = "Allreduce as an explicit spanning tree with global-clock event collectors (Bongo, Anshus and "
             "Bjorndalen 2004): Gsum or red-black SOR, result checked against MPI_Allreduce, collector overhead "
             "measured. Example: mpirun -n 4 mpitempo-tree --tree kary:2 --ncalls 5000 --outdir DIR",
    .output = "write DIR/events.csv, DIR/links.csv and DIR/meta.json (atomically) instead of meta.json on stdout",
    .choices = choices,
    .files = files,
    .timer_study = 1,
    .meta_on_stdout = 1,
    .list = list,
    .check = check,
    .check_json = check_json,
    .run = run,
    .done = done,
};

int main(int argc, char **argv) { return mt_run_main(&tree_app, argc, argv); }
