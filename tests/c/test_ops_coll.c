/* mpitempo: the truth of the collective ops (blocking, vector, in-place,
 * persistent, neighbourhood): what each call does, counted and recorded by
 * MPI itself (op_count.h: the interposers of the "coll" section), compared
 * with answers derived by hand from the MPI standard. Runs on 2 and 4 ranks. */
#include "mt_test.h"
#include "op_count.h"

#include "base/mt_common.h"

#include <stdlib.h>

static int rank, size;
static const int CALLS = 10;

#define CHECK_OP(name, cond)                                                                             \
    do {                                                                                                 \
        if (!(cond)) {                                                                                   \
            fprintf(stderr, "%s:%d: rank %d op %s: CHECK failed: %s\n", __FILE__, __LINE__, rank, (name), \
                    #cond);                                                                              \
            mt_test_failures++;                                                                          \
        }                                                                                                \
    } while (0)

/* the skewed blocks of --vcounts at count 8, by hand: block i = round((2i+1) x 8 / p)
 * p = 2: 4, 12 (sum 16); p = 4: 2, 6, 10, 14 (sum 32) */
static const int SKEW2[2] = {4, 12}, SKEW4[4] = {2, 6, 10, 14};
static int block(int skewed, int i) { return !skewed ? 8 : size == 2 ? SKEW2[i] : SKEW4[i]; }

static int arr_is(const int *got, int n, int nwant, const int *want)
{
    if (n != nwant) return 0;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

/* every blocking collective: one call of its MPI function per call, no
 * point-to-point message of ours, no bandwidth declared */
static void blocking(void)
{
    static const char *ops[][2] = {
        {"barrier", "MPI_Barrier"}, {"bcast", "MPI_Bcast"}, {"reduce", "MPI_Reduce"},
        {"allreduce", "MPI_Allreduce"}, {"gather", "MPI_Gather"}, {"gatherv", "MPI_Gatherv"},
        {"scatter", "MPI_Scatter"}, {"scatterv", "MPI_Scatterv"}, {"allgather", "MPI_Allgather"},
        {"allgatherv", "MPI_Allgatherv"}, {"alltoall", "MPI_Alltoall"}, {"alltoallv", "MPI_Alltoallv"},
        {"alltoallw", "MPI_Alltoallw"},
        {"reduce_scatter", "MPI_Reduce_scatter"}, {"reduce_scatter_block", "MPI_Reduce_scatter_block"},
        {"scan", "MPI_Scan"}, {"exscan", "MPI_Exscan"},
    };
    char err[MT_ERRLEN];
    mt_op_opts_t o = mt_cnt_default_opts();
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        mt_cnt_t c;
        mt_op_info_t info;
        int rc = mt_cnt_run(ops[k][0], 64, &o, 2, CALLS, &c, &info, err);
        CHECK_OP(ops[k][0], rc == MT_OK);
        if (rc != MT_OK) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        CHECK_OP(ops[k][0], c.colls == CALLS && c.nb_colls == 0 && c.neighbor == 0 && c.persist_starts == 0);
        CHECK_OP(ops[k][0], mt_coll_last.fn && strcmp(mt_coll_last.fn, ops[k][1]) == 0);
        CHECK_OP(ops[k][0], c.sent_msgs == 0 && c.recv_msgs == 0 && c.rma_ops == 0);
        CHECK_OP(ops[k][0], !mt_coll_last.send_in_place && !mt_coll_last.recv_in_place);
        CHECK_OP(ops[k][0], info.bytes == 0 && info.msgs == 0 && !info.overlap);
    }
}

/* the counts each rank passes to the vector collectives (count 8: msize 8 B of byte) */
static void check_vcounts(const char *name, int skewed)
{
    const mt_coll_rec_t *r = &mt_coll_last;
    int want[4], mine = block(skewed, rank), all_mine[4];
    for (int i = 0; i < size; i++) want[i] = block(skewed, i), all_mine[i] = mine;
    const char *b = strncmp(name, "MPI_", 4) == 0 ? name + 4 : name;
    if (strncmp(b, "Gatherv", 7) == 0) {
        CHECK_OP(name, r->scount == mine);
        if (rank == 0) CHECK_OP(name, arr_is(r->rcounts, r->nrcounts, size, want)); /* root 0 */
    } else if (strncmp(b, "Scatterv", 8) == 0) {
        CHECK_OP(name, r->rcount == mine);
        if (rank == 0) CHECK_OP(name, arr_is(r->scounts, r->nscounts, size, want));
    } else if (strncmp(b, "Allgatherv", 10) == 0) {
        CHECK_OP(name, r->scount == mine && arr_is(r->rcounts, r->nrcounts, size, want));
    } else if (strncmp(b, "Alltoallv", 9) == 0 || strncmp(b, "Alltoallw", 9) == 0) {
        /* sends block j (counts[j]) to rank j; receives its own block size from every rank */
        CHECK_OP(name, arr_is(r->scounts, r->nscounts, size, want));
        CHECK_OP(name, arr_is(r->rcounts, r->nrcounts, size, all_mine));
    } else if (strncmp(b, "Reduce_scatter", 14) == 0) {
        CHECK_OP(name, arr_is(r->rcounts, r->nrcounts, size, want));
    } else {
        CHECK_OP(name, 0);
    }
    if (rank == 0 && strncmp(b, "Gatherv", 7) == 0) { /* the root's total: 16 (p = 2) or 32 (p = 4) at count 8 */
        int sum = 0;
        for (int i = 0; i < r->nrcounts; i++) sum += r->rcounts[i];
        CHECK_OP(name, sum == (skewed ? (size == 2 ? 16 : 32) : 8 * size));
    }
}

static void vcounts(void)
{
    static const char *ops[][2] = {
        {"gatherv", "MPI_Gatherv"}, {"scatterv", "MPI_Scatterv"}, {"allgatherv", "MPI_Allgatherv"},
        {"alltoallv", "MPI_Alltoallv"}, {"alltoallw", "MPI_Alltoallw"}, {"reduce_scatter", "MPI_Reduce_scatter"},
    };
    char err[MT_ERRLEN];
    for (int skewed = 0; skewed <= 1; skewed++) {
        mt_op_opts_t o = mt_cnt_default_opts();
        o.vcounts = skewed ? MT_VCOUNTS_SKEWED : MT_VCOUNTS_UNIFORM;
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            const mt_op_t *op = mt_op_find(ops[k][0]);
            CHECK_OP(ops[k][0], op && (op->opts & MT_OPT_VCOUNTS));
            mt_cnt_t c;
            mt_op_info_t info;
            int rc = mt_cnt_run(ops[k][0], 8, &o, 2, CALLS, &c, &info, err);
            CHECK_OP(ops[k][0], rc == MT_OK);
            if (rc != MT_OK) continue;
            CHECK_OP(ops[k][0], c.colls == CALLS && strcmp(mt_coll_last.fn, ops[k][1]) == 0);
            check_vcounts(ops[k][1], skewed);
            /* a larger size, skewed: the buffers hold the largest block (no crash, MPI accepts) */
            rc = mt_cnt_run(ops[k][0], 4096, &o, 1, 2, &c, &info, err);
            CHECK_OP(ops[k][0], rc == MT_OK && c.colls == 2);
        }
    }
}

/* --in-place: where the standard puts MPI_IN_PLACE (root 0) */
static void in_place(void)
{
    enum { ALL_SEND, ROOT_SEND, ROOT_RECV, NONE };
    static const struct {
        const char *name;
        int rule;
    } ops[] = {
        {"reduce", ROOT_SEND}, {"allreduce", ALL_SEND}, {"gather", ROOT_SEND}, {"gatherv", ROOT_SEND},
        {"scatter", ROOT_RECV}, {"scatterv", ROOT_RECV}, {"allgather", ALL_SEND}, {"allgatherv", ALL_SEND},
        {"alltoall", ALL_SEND}, {"alltoallv", ALL_SEND}, {"alltoallw", ALL_SEND}, {"reduce_scatter", ALL_SEND},
        {"reduce_scatter_block", ALL_SEND}, {"scan", ALL_SEND}, {"exscan", ALL_SEND},
        {"bcast", NONE}, {"barrier", NONE},
    };
    char err[MT_ERRLEN];
    mt_op_opts_t o = mt_cnt_default_opts();
    o.in_place = 1;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const mt_op_t *op = mt_op_find(ops[k].name);
        CHECK_OP(ops[k].name, op && ((op->opts & MT_OPT_IN_PLACE) != 0) == (ops[k].rule != NONE));
        mt_cnt_t c;
        mt_op_info_t info;
        int rc = mt_cnt_run(ops[k].name, 64, &o, 2, CALLS, &c, &info, err);
        CHECK_OP(ops[k].name, rc == MT_OK);
        if (rc != MT_OK) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        CHECK_OP(ops[k].name, c.colls == CALLS && c.sent_msgs == 0);
        int ws = ops[k].rule == ALL_SEND || (ops[k].rule == ROOT_SEND && rank == 0);
        int wr = ops[k].rule == ROOT_RECV && rank == 0;
        CHECK_OP(ops[k].name, mt_coll_last.send_in_place == ws && mt_coll_last.recv_in_place == wr);
    }
    /* in-place alltoallv sends the receive counts: skewed counts are not symmetric, refused by setup */
    o.vcounts = MT_VCOUNTS_SKEWED;
    mt_cnt_t c;
    mt_op_info_t info;
    int rc = mt_cnt_run("alltoallv", 64, &o, 0, 1, &c, &info, err);
    CHECK(rc == MT_EINVAL && strstr(err, "--in-place") && strstr(err, "skewed") && !strchr(err, '\n'));
    rc = mt_cnt_run("alltoallw", 64, &o, 0, 1, &c, &info, err);
    CHECK(rc == MT_EINVAL && strstr(err, "--in-place") && strstr(err, "skewed") && !strchr(err, '\n'));
    /* in-place allgatherv with skewed counts: MPI_IN_PLACE, its own block count still passed */
    o.vcounts = MT_VCOUNTS_SKEWED;
    rc = mt_cnt_run("allgatherv", 8, &o, 1, CALLS, &c, &info, err);
    CHECK(rc == MT_OK && mt_coll_last.send_in_place && mt_coll_last.scount == block(1, rank));
}

/* persistent: the *_init once in setup, then one MPI_Start and one wait per call */
static void persistent(void)
{
    static const char *names[] = {"barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
                                  "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
                                  "reduce_scatter", "reduce_scatter_block", "scan", "exscan"};
    char err[MT_ERRLEN], why[MT_ERRLEN];
    const mt_op_t *probe = mt_op_find("allreduce_init");
    CHECK(probe && probe->available && strcmp(probe->family, "persistent") == 0);
    if (!probe || !probe->available) return;
    if (!probe->available(why, sizeof why)) {
        /* built without them: every *_init op is refused, in one line naming the library */
        CHECK(strstr(why, "has no MPI-4 persistent collectives (MPI_Allreduce_init)") && !strchr(why, '\n'));
        CHECK(strncmp(why, " has", 4) != 0); /* something names the library */
        mt_exp_t *e = NULL;
        int ne = 0;
        CHECK(mt_exp_build("allreduce_init", "8", size, &e, &ne, err) == MT_EUNSUP && strstr(err, why));
        free(e);
        if (rank == 0) printf("persistent collectives unavailable: %s\n", why);
        return;
    }
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char nm[64], fn[64];
        snprintf(nm, sizeof nm, "%s_init", names[k]);
        const mt_op_t *op = mt_op_find(nm), *blk = mt_op_find(names[k]);
        CHECK_OP(nm, op && blk);
        if (!op || !blk) continue;
        /* as the blocking op */
        CHECK_OP(nm, op->flags == blk->flags && op->min_procs == blk->min_procs &&
                         op->blocks(size) == blk->blocks(size) && (op->opts & MT_OPT_VCOUNTS) == (blk->opts & MT_OPT_VCOUNTS));
        snprintf(fn, sizeof fn, "%s", blk->mpi_name);
        strcat(fn, "_init");
        CHECK_OP(nm, strcmp(op->mpi_name, fn) == 0);
        for (int skewed = 0; skewed <= ((op->opts & MT_OPT_VCOUNTS) ? 1 : 0); skewed++) {
            mt_op_opts_t o = mt_cnt_default_opts();
            o.vcounts = skewed ? MT_VCOUNTS_SKEWED : MT_VCOUNTS_UNIFORM;
            mt_cnt_t c;
            mt_op_info_t info;
            int rc = mt_cnt_run(nm, 8, &o, 2, CALLS, &c, &info, err);
            CHECK_OP(nm, rc == MT_OK);
            if (rc != MT_OK) {
                fprintf(stderr, "%s\n", err);
                continue;
            }
            CHECK_OP(nm, mt_cnt_setup.colls == 1 && mt_cnt_setup.persist_starts == 0); /* the *_init in setup */
            CHECK_OP(nm, mt_coll_last.fn && strcmp(mt_coll_last.fn, fn) == 0);
            CHECK_OP(nm, c.persist_starts == CALLS && c.waits == CALLS && c.colls == 0 && c.sent_msgs == 0);
            CHECK_OP(nm, info.bytes == 0 && info.msgs == 0);
            if (op->opts & MT_OPT_VCOUNTS) check_vcounts(fn, skewed);
        }
    }
}

/* neighbourhood: the topology MPI reports equals the one derived by hand */
static void neighbor(void)
{
    static const char *ops[][2] = {
        {"neighbor_allgather", "MPI_Neighbor_allgather"}, {"neighbor_allgatherv", "MPI_Neighbor_allgatherv"},
        {"neighbor_alltoall", "MPI_Neighbor_alltoall"}, {"neighbor_alltoallv", "MPI_Neighbor_alltoallv"},
        {"neighbor_alltoallw", "MPI_Neighbor_alltoallw"},
        {"ineighbor_allgather", "MPI_Ineighbor_allgather"}, {"ineighbor_allgatherv", "MPI_Ineighbor_allgatherv"},
        {"ineighbor_alltoall", "MPI_Ineighbor_alltoall"}, {"ineighbor_alltoallv", "MPI_Ineighbor_alltoallv"},
        {"ineighbor_alltoallw", "MPI_Ineighbor_alltoallw"},
    };
    char err[MT_ERRLEN];
    for (int topo = MT_TOPO_CART; topo <= MT_TOPO_RING; topo++) {
        mt_op_opts_t o = mt_cnt_default_opts();
        o.topo = topo;
        /* by hand. cart: MPI_Dims_create(2, 2) = 2 x 1, (4, 2) = 2 x 2; neighbours per dimension the
         * -1 and +1 shift, periodic: p = 2: dim 0 the other rank twice, dim 1 (size 1) itself twice;
         * p = 4 (rank = 2 x row + col): dim 0 rank+2 mod 4 twice, dim 1 rank xor 1 twice.
         * graph: p = 2: out (r+1) = in (r-1) = the other rank, once (r + p/2 is the same rank);
         * p = 4: out r+1, r+2; in r-1, r-2 (mod 4).
         * ring: out = in = r-1, r+1 (mod p), in that order: p = 2 the other rank twice. */
        int deg, src[4], dst[4], dims[2];
        if (topo == MT_TOPO_CART) {
            deg = 4;
            if (size == 2) {
                dims[0] = 2, dims[1] = 1;
                src[0] = src[1] = 1 - rank, src[2] = src[3] = rank;
            } else {
                dims[0] = 2, dims[1] = 2;
                src[0] = src[1] = (rank + 2) % 4, src[2] = src[3] = rank ^ 1;
            }
            memcpy(dst, src, sizeof src);
        } else if (topo == MT_TOPO_RING) {
            deg = 2;
            src[0] = dst[0] = (rank + size - 1) % size, src[1] = dst[1] = (rank + 1) % size;
        } else if (size == 2) {
            deg = 1;
            src[0] = dst[0] = 1 - rank;
        } else {
            deg = 2;
            dst[0] = (rank + 1) % 4, dst[1] = (rank + 2) % 4;
            src[0] = (rank + 3) % 4, src[1] = (rank + 2) % 4;
        }
        int eight[4] = {8, 8, 8, 8};
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            const char *nm = ops[k][0];
            mt_cnt_t c;
            mt_op_info_t info;
            int rc = mt_cnt_run(nm, 8, &o, 2, CALLS, &c, &info, err);
            CHECK_OP(nm, rc == MT_OK);
            if (rc != MT_OK) {
                fprintf(stderr, "%s\n", err);
                continue;
            }
            const mt_coll_rec_t *r = &mt_coll_last;
            CHECK_OP(nm, c.neighbor == CALLS && c.colls == 0 && c.sent_msgs == 0);
            CHECK_OP(nm, c.waits == (nm[0] == 'i' ? CALLS : 0)); /* the non-blocking forms: one wait per call */
            CHECK_OP(nm, r->fn && strcmp(r->fn, ops[k][1]) == 0);
            CHECK_OP(nm, info.bytes == 0 && info.msgs == 0);
            if (topo == MT_TOPO_CART) {
                CHECK_OP(nm, r->topo == MPI_CART && r->dims[0] == dims[0] && r->dims[1] == dims[1]);
            } else {
                CHECK_OP(nm, r->topo == MPI_DIST_GRAPH);
            }
            CHECK_OP(nm, r->indeg == deg && r->outdeg == deg);
            CHECK_OP(nm, arr_is(r->sources, deg, deg, src) && arr_is(r->dests, deg, deg, dst));
            /* msize is the block per neighbour */
            if (strstr(nm, "allgatherv")) {
                CHECK_OP(nm, r->scount == 8 && arr_is(r->rcounts, r->nrcounts, deg, eight));
            } else if (strstr(nm, "alltoallv") || strstr(nm, "alltoallw")) {
                CHECK_OP(nm, arr_is(r->scounts, r->nscounts, deg, eight) && arr_is(r->rcounts, r->nrcounts, deg, eight));
            } else {
                CHECK_OP(nm, r->scount == 8 && r->rcount == 8);
            }
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 && size != 4) {
        if (rank == 0) fprintf(stderr, "test_ops_coll runs on 2 or 4 ranks (the answers are derived for those)\n");
        MPI_Finalize();
        return 1;
    }
    blocking();
    vcounts();
    in_place();
    persistent();
    neighbor();
    MPI_Finalize();
    if (rank == 0) TEST_DONE();
    return mt_test_failures ? 1 : 0;
}
