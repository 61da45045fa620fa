/* A test application for the tracer's coverage (tests/mpi/test_trace_coverage.py): sub-communicators
 * of every kind, intercommunicators, topologies, persistent requests, probes, non-blocking
 * collectives, cancelled and freed requests, one-sided calls, and calls the tracer only counts. Every MPI call it
 * makes goes through C(name, call), which counts it per name; at the end each rank writes
 * DIR/manifest-RANK.txt ("MPI_Name count" per line), so that the test can check that every call
 * is either in the trace or counted as not recorded. User regions: "communicators" around the
 * creations, "traffic" with "persistent" nested in it. Runs on any number of ranks >= 2.
 * Usage: coverage_app DIR [nointer]   (nointer: no intercommunicator, for readers without InterComm) */
#include <mpi.h>
#include <mpitempo_region.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 128
static const char *names[MAXN];
static long counts[MAXN];
static int nnames;

static void tally(const char *name)
{
    for (int i = 0; i < nnames; i++)
        if (!strcmp(names[i], name)) {
            counts[i]++;
            return;
        }
    names[nnames] = name;
    counts[nnames++] = 1;
}

static void check(int rc, const char *name)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "coverage_app: %s failed (%d)\n", name, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

#define C(name, call) (tally(#name), check(call, #name))

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && !strcmp(argv[2], "nointer"))) {
        fprintf(stderr, "usage: coverage_app DIR [nointer]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    C(MPI_Comm_rank, MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    C(MPI_Comm_size, MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int x = rank + 1, y = 0;

    /* ---- communicators ---- */
    mpitempo_region_begin("communicators");
    MPI_Comm half, dup, created, cgroup, inter, merged, cart, cartsub, graph, dist, shared;
    int color = rank % 2;
    C(MPI_Comm_split, MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
    C(MPI_Comm_dup, MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Group wg, lowg;
    C(MPI_Comm_group, MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int nlow = (size + 1) / 2, lows[MAXN];
    for (int i = 0; i < nlow; i++) lows[i] = i;
    C(MPI_Group_incl, MPI_Group_incl(wg, nlow, lows, &lowg));
    C(MPI_Comm_create, MPI_Comm_create(MPI_COMM_WORLD, lowg, &created));
    cgroup = MPI_COMM_NULL;
    if (rank < nlow) C(MPI_Comm_create_group, MPI_Comm_create_group(MPI_COMM_WORLD, lowg, 5, &cgroup));
    /* the even and the odd ranks: local leader 0 of each half, remote leader world rank 1 - color */
    int use_inter = argc == 2;
    inter = merged = MPI_COMM_NULL;
    if (use_inter) {
        C(MPI_Intercomm_create, MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 7, &inter));
        C(MPI_Intercomm_merge, MPI_Intercomm_merge(inter, color, &merged));
    }
    int dims[1] = {size}, periods[1] = {1}, remain[1] = {1};
    C(MPI_Cart_create, MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart));
    C(MPI_Cart_sub, MPI_Cart_sub(cart, remain, &cartsub));
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        index[i] = i + 1;
        edges[i] = (i + 1) % size;
    }
    C(MPI_Graph_create, MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph));
    int src[1] = {left}, dst[1] = {right}, wts[1] = {1};   /* weights given: Open MPI's MPI_UNWEIGHTED upsets gcc */
    C(MPI_Dist_graph_create_adjacent, MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, wts, 1, dst, wts,
                                                                     MPI_INFO_NULL, 0, &dist));
    C(MPI_Comm_split_type, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));

    mpitempo_region_end("communicators");

    /* ---- traffic on them ---- */
    mpitempo_region_begin("traffic");
    C(MPI_Allreduce, MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, half));
    C(MPI_Bcast, MPI_Bcast(&x, 1, MPI_INT, 1, dup));
    if (created != MPI_COMM_NULL) C(MPI_Reduce, MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, created));
    if (cgroup != MPI_COMM_NULL) {
        MPI_Request r;
        C(MPI_Ibcast, MPI_Ibcast(&x, 1, MPI_INT, 0, cgroup, &r));
        C(MPI_Wait, MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    int irank = 0, isize = 0, rsize = 0;
    if (use_inter) {
    C(MPI_Comm_rank, MPI_Comm_rank(inter, &irank));
    C(MPI_Comm_size, MPI_Comm_size(inter, &isize));
    C(MPI_Comm_remote_size, MPI_Comm_remote_size(inter, &rsize));
    if (irank < rsize && irank < isize) { /* rank i of the even ranks <-> rank i of the odd ranks */
        if (color == 0) {
            C(MPI_Send, MPI_Send(&x, 1, MPI_INT, irank, 11, inter));
            C(MPI_Recv, MPI_Recv(&y, 1, MPI_INT, irank, 12, inter, MPI_STATUS_IGNORE));
        } else {
            C(MPI_Recv, MPI_Recv(&y, 1, MPI_INT, irank, 11, inter, MPI_STATUS_IGNORE));
            C(MPI_Send, MPI_Send(&x, 1, MPI_INT, irank, 12, inter));
        }
    }
    /* an intercommunicator bcast: root world rank 0 (rank 0 of the even group) */
    int ibroot = color == 0 ? (irank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    C(MPI_Bcast, MPI_Bcast(&x, 1, MPI_INT, ibroot, inter));
    C(MPI_Barrier, MPI_Barrier(merged));
    }
    int cl, cr;
    C(MPI_Cart_shift, MPI_Cart_shift(cart, 0, 1, &cl, &cr));
    C(MPI_Sendrecv, MPI_Sendrecv(&x, 1, MPI_INT, cr, 21, &y, 1, MPI_INT, cl, 21, cart, MPI_STATUS_IGNORE));
    int nb2[2] = {x, x}, nbr[2];
    C(MPI_Neighbor_alltoall, MPI_Neighbor_alltoall(nb2, 1, MPI_INT, nbr, 1, MPI_INT, cart));
    C(MPI_Allgather, MPI_Allgather(&x, 1, MPI_INT, index, 1, MPI_INT, cartsub));
    C(MPI_Neighbor_allgather, MPI_Neighbor_allgather(&x, 1, MPI_INT, nbr, 1, MPI_INT, dist));
    MPI_Request nreq;
    C(MPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall(&x, 1, MPI_INT, nbr, 1, MPI_INT, dist, &nreq));
    C(MPI_Wait, MPI_Wait(&nreq, MPI_STATUS_IGNORE));
    C(MPI_Barrier, MPI_Barrier(graph));
    C(MPI_Allreduce, MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, shared));
    /* a communicator whose creation the tracer does not wrap (counted only): keyed by its members */
    MPI_Comm idup;
    MPI_Request ir;
    C(MPI_Comm_idup, MPI_Comm_idup(MPI_COMM_WORLD, &idup, &ir));
    C(MPI_Wait, MPI_Wait(&ir, MPI_STATUS_IGNORE));
    C(MPI_Allreduce, MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MIN, idup));

    /* ---- persistent requests: a ring on MPI_COMM_WORLD ---- */
    mpitempo_region_begin("persistent");
    MPI_Request pr[2];
    int pin = 0, pout = rank;
    C(MPI_Recv_init, MPI_Recv_init(&pin, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &pr[0]));
    C(MPI_Send_init, MPI_Send_init(&pout, 1, MPI_INT, right, 31, MPI_COMM_WORLD, &pr[1]));
    for (int it = 0; it < 3; it++) {
        C(MPI_Startall, MPI_Startall(2, pr));
        C(MPI_Waitall, MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
    }
    C(MPI_Start, MPI_Start(&pr[0]));
    C(MPI_Start, MPI_Start(&pr[1]));
    C(MPI_Wait, MPI_Wait(&pr[1], MPI_STATUS_IGNORE));
    C(MPI_Wait, MPI_Wait(&pr[0], MPI_STATUS_IGNORE));
    C(MPI_Request_free, MPI_Request_free(&pr[0]));
    C(MPI_Request_free, MPI_Request_free(&pr[1]));
    mpitempo_region_end("persistent");
    mpitempo_region_end("traffic");

    /* ---- probes (on the split communicator when it has a partner, else on world) ---- */
    C(MPI_Send, MPI_Send(&x, 1, MPI_INT, right, 41, MPI_COMM_WORLD));
    MPI_Status st;
    C(MPI_Probe, MPI_Probe(left, 41, MPI_COMM_WORLD, &st));
    C(MPI_Recv, MPI_Recv(&y, 1, MPI_INT, st.MPI_SOURCE, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    C(MPI_Send, MPI_Send(&x, 1, MPI_INT, right, 42, dup));
    int flag = 0;
    while (!flag) C(MPI_Iprobe, MPI_Iprobe(MPI_ANY_SOURCE, 42, dup, &flag, &st));
    C(MPI_Recv, MPI_Recv(&y, 1, MPI_INT, st.MPI_SOURCE, 42, dup, MPI_STATUS_IGNORE));
    MPI_Message msg;
    C(MPI_Send, MPI_Send(&x, 1, MPI_INT, right, 43, MPI_COMM_WORLD));
    C(MPI_Mprobe, MPI_Mprobe(left, 43, MPI_COMM_WORLD, &msg, &st));
    C(MPI_Mrecv, MPI_Mrecv(&y, 1, MPI_INT, &msg, MPI_STATUS_IGNORE));
    C(MPI_Send, MPI_Send(&x, 1, MPI_INT, right, 44, MPI_COMM_WORLD));
    flag = 0;
    while (!flag) C(MPI_Improbe, MPI_Improbe(left, 44, MPI_COMM_WORLD, &flag, &msg, &st));
    MPI_Request mr;
    C(MPI_Imrecv, MPI_Imrecv(&y, 1, MPI_INT, &msg, &mr));
    C(MPI_Wait, MPI_Wait(&mr, MPI_STATUS_IGNORE));

    /* ---- non-blocking collectives ---- */
    int *sb = calloc((size_t)size * 4, sizeof(int)), *rb = calloc((size_t)size * 4, sizeof(int));
    int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int i = 0; i < size; i++) {
        cnt[i] = 1;
        dsp[i] = (int)(i * sizeof(int));
        types[i] = MPI_INT;
    }
    MPI_Request q[10];
    C(MPI_Ibarrier, MPI_Ibarrier(MPI_COMM_WORLD, &q[0]));
    C(MPI_Iallreduce, MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]));
    C(MPI_Ialltoall, MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &q[2]));
    C(MPI_Iallgather, MPI_Iallgather(&x, 1, MPI_INT, rb + size, 1, MPI_INT, MPI_COMM_WORLD, &q[3]));
    C(MPI_Igather, MPI_Igather(&x, 1, MPI_INT, rb + 2 * size, 1, MPI_INT, 0, dup, &q[4]));
    C(MPI_Waitall, MPI_Waitall(5, q, MPI_STATUSES_IGNORE));
    int z1 = 0, z2 = 0, z3 = 0;
    C(MPI_Iscatter, MPI_Iscatter(sb, 1, MPI_INT, &z1, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &q[0]));
    C(MPI_Iscan, MPI_Iscan(&x, &z2, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]));
    C(MPI_Iexscan, MPI_Iexscan(&x, &z3, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[2]));
    C(MPI_Ireduce_scatter_block, MPI_Ireduce_scatter_block(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[3]));
    C(MPI_Ialltoallw, MPI_Ialltoallw(sb, cnt, dsp, types, rb + 3 * size, cnt, dsp, types, MPI_COMM_WORLD, &q[4]));
    int done = 0;
    while (!done) C(MPI_Testall, MPI_Testall(5, q, &done, MPI_STATUSES_IGNORE));
    C(MPI_Alltoallw, MPI_Alltoallw(sb, cnt, dsp, types, rb, cnt, dsp, types, MPI_COMM_WORLD));

    /* ---- isend/irecv, a cancelled receive, a freed send ---- */
    MPI_Request a[3];
    C(MPI_Irecv, MPI_Irecv(&y, 1, MPI_INT, left, 51, MPI_COMM_WORLD, &a[0]));
    C(MPI_Isend, MPI_Isend(&x, 1, MPI_INT, right, 51, MPI_COMM_WORLD, &a[1]));
    int idx;
    C(MPI_Waitany, MPI_Waitany(2, a, &idx, MPI_STATUS_IGNORE));
    C(MPI_Waitany, MPI_Waitany(2, a, &idx, MPI_STATUS_IGNORE));
    C(MPI_Irecv, MPI_Irecv(&y, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &a[2]));   /* never sent */
    C(MPI_Cancel, MPI_Cancel(&a[2]));
    C(MPI_Wait, MPI_Wait(&a[2], &st));
    int cancelled = 0;
    C(MPI_Test_cancelled, MPI_Test_cancelled(&st, &cancelled));
    C(MPI_Isend, MPI_Isend(&x, 1, MPI_INT, right, 52, MPI_COMM_WORLD, &a[0]));
    C(MPI_Request_free, MPI_Request_free(&a[0]));
    C(MPI_Recv, MPI_Recv(&y, 1, MPI_INT, left, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE));

    /* ---- one-sided (counted only): fence epochs with put, get and accumulate, a passive-target
     * lock epoch; the results checked ---- */
    int winbuf[2] = {0, 0}, got = -1, mine = rank + 1;
    MPI_Win win;
    C(MPI_Win_create, MPI_Win_create(winbuf, (MPI_Aint)sizeof winbuf, (int)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    C(MPI_Win_fence, MPI_Win_fence(0, win));
    C(MPI_Put, MPI_Put(&mine, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    C(MPI_Accumulate, MPI_Accumulate(&mine, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_SUM, win));
    C(MPI_Win_fence, MPI_Win_fence(0, win));
    C(MPI_Get, MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win));
    C(MPI_Win_fence, MPI_Win_fence(0, win));
    if (winbuf[0] != left + 1 || winbuf[1] != left + 1 || got != ((left + size - 1) % size) + 1) {
        fprintf(stderr, "coverage_app: one-sided results wrong (%d %d %d)\n", winbuf[0], winbuf[1], got);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    C(MPI_Win_lock, MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    C(MPI_Get, MPI_Get(&got, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    C(MPI_Win_unlock, MPI_Win_unlock(right, win));
    C(MPI_Barrier, MPI_Barrier(MPI_COMM_WORLD));
    C(MPI_Win_free, MPI_Win_free(&win));

    /* ---- counted only ---- */
#if MPI_VERSION >= 4
    C(MPI_Allreduce_c, MPI_Allreduce_c(&x, &y, (MPI_Count)1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
#endif
    MPI_Datatype pair;
    C(MPI_Type_contiguous, MPI_Type_contiguous(2, MPI_INT, &pair));
    C(MPI_Type_commit, MPI_Type_commit(&pair));
    C(MPI_Type_free, MPI_Type_free(&pair));
    tally("MPI_Wtime");
    volatile double t = MPI_Wtime();
    (void)t;
    C(MPI_Group_free, MPI_Group_free(&lowg));
    C(MPI_Group_free, MPI_Group_free(&wg));

    C(MPI_Barrier, MPI_Barrier(MPI_COMM_WORLD));
    MPI_Comm *all[] = {&half, &dup, &created, &cgroup, &inter, &merged, &cart, &cartsub, &graph, &dist, &shared, &idup};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (*all[i] != MPI_COMM_NULL) C(MPI_Comm_free, MPI_Comm_free(all[i]));

    char path[4096];
    snprintf(path, sizeof path, "%s/manifest-%d.txt", argv[1], rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int i = 0; i < nnames; i++) fprintf(f, "%s %ld\n", names[i], counts[i]);
    fclose(f);
    free(index), free(edges), free(sb), free(rb), free(cnt), free(dsp), free(types);
    MPI_Finalize();
    return cancelled ? 0 : 0;
}
