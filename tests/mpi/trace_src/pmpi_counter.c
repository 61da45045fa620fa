/* A second PMPI tool for tests/mpi/test_trace_stack.py: counts, per rank, the calls of the MPI
 * functions below that reach it (preloaded after the tracer, it must see every call the program
 * makes) and writes them to $MT_COUNTER_DIR/rank-R.txt at MPI_Finalize ("name count" lines). It
 * calls the library's PMPI_ functions, as most PMPI tools do. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { C_Init, C_Comm_rank, C_Comm_size, C_Allreduce, C_Bcast, C_Barrier, C_Send, C_Recv, C_Isend, C_Irecv,
       C_Waitall, C_Sendrecv, C_Comm_dup, C_Comm_free, C_Send_init, C_Recv_init, C_Start, C_Wait,
       C_Request_free, C_Win_create, C_Win_fence, C_Put, C_Win_free, C_Type_size, C_Finalize, C_N };
static const char *names[C_N] = {"MPI_Init", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Allreduce", "MPI_Bcast",
    "MPI_Barrier", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Sendrecv",
    "MPI_Comm_dup", "MPI_Comm_free", "MPI_Send_init", "MPI_Recv_init", "MPI_Start", "MPI_Wait",
    "MPI_Request_free", "MPI_Win_create", "MPI_Win_fence", "MPI_Put", "MPI_Win_free", "MPI_Type_size",
    "MPI_Finalize"};
static long cnt[C_N];

int MPI_Init(int *argc, char ***argv) { cnt[C_Init]++; return PMPI_Init(argc, argv); }
int MPI_Comm_rank(MPI_Comm c, int *r) { cnt[C_Comm_rank]++; return PMPI_Comm_rank(c, r); }
int MPI_Comm_size(MPI_Comm c, int *s) { cnt[C_Comm_size]++; return PMPI_Comm_size(c, s); }
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{ cnt[C_Allreduce]++; return PMPI_Allreduce(sb, rb, n, t, op, c); }
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) { cnt[C_Bcast]++; return PMPI_Bcast(b, n, t, root, c); }
int MPI_Barrier(MPI_Comm c) { cnt[C_Barrier]++; return PMPI_Barrier(c); }
int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ cnt[C_Send]++; return PMPI_Send(b, n, t, d, tag, c); }
int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st)
{ cnt[C_Recv]++; return PMPI_Recv(b, n, t, s, tag, c, st); }
int MPI_Isend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ cnt[C_Isend]++; return PMPI_Isend(b, n, t, d, tag, c, r); }
int MPI_Irecv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{ cnt[C_Irecv]++; return PMPI_Irecv(b, n, t, s, tag, c, r); }
int MPI_Waitall(int n, MPI_Request r[], MPI_Status s[]) { cnt[C_Waitall]++; return PMPI_Waitall(n, r, s); }
int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int d, int stag, void *rb, int rn, MPI_Datatype rt,
                 int s, int rtag, MPI_Comm c, MPI_Status *status)
{ cnt[C_Sendrecv]++; return PMPI_Sendrecv(sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status); }
int MPI_Comm_dup(MPI_Comm c, MPI_Comm *n) { cnt[C_Comm_dup]++; return PMPI_Comm_dup(c, n); }
int MPI_Comm_free(MPI_Comm *c) { cnt[C_Comm_free]++; return PMPI_Comm_free(c); }
int MPI_Send_init(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ cnt[C_Send_init]++; return PMPI_Send_init(b, n, t, d, tag, c, r); }
int MPI_Recv_init(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{ cnt[C_Recv_init]++; return PMPI_Recv_init(b, n, t, s, tag, c, r); }
int MPI_Start(MPI_Request *r) { cnt[C_Start]++; return PMPI_Start(r); }
int MPI_Wait(MPI_Request *r, MPI_Status *s) { cnt[C_Wait]++; return PMPI_Wait(r, s); }
int MPI_Request_free(MPI_Request *r) { cnt[C_Request_free]++; return PMPI_Request_free(r); }
int MPI_Win_create(void *b, MPI_Aint sz, int du, MPI_Info i, MPI_Comm c, MPI_Win *w)
{ cnt[C_Win_create]++; return PMPI_Win_create(b, sz, du, i, c, w); }
int MPI_Win_fence(int a, MPI_Win w) { cnt[C_Win_fence]++; return PMPI_Win_fence(a, w); }
int MPI_Put(const void *o, int on, MPI_Datatype ot, int tr, MPI_Aint td, int tn, MPI_Datatype tt, MPI_Win w)
{ cnt[C_Put]++; return PMPI_Put(o, on, ot, tr, td, tn, tt, w); }
int MPI_Win_free(MPI_Win *w) { cnt[C_Win_free]++; return PMPI_Win_free(w); }
int MPI_Type_size(MPI_Datatype t, int *s) { cnt[C_Type_size]++; return PMPI_Type_size(t, s); }

int MPI_Finalize(void)
{
    cnt[C_Finalize]++;
    int r = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    const char *d = getenv("MT_COUNTER_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.txt", d ? d : ".", r);
    FILE *f = fopen(path, "w");
    if (f) {
        for (int i = 0; i < C_N; i++) fprintf(f, "%s %ld\n", names[i], cnt[i]);
        fclose(f);
    }
    return PMPI_Finalize();
}
