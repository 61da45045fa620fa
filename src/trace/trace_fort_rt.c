/* mpitempo: the run-time part of the Fortran wrappers (trace_fort.c is generated): how a Fortran
 * call reaches the C wrappers, the library's Fortran sentinels, MPI_INIT and MPI_FINALIZE.
 *
 * MPI_INIT decides the mode (docs/trace.md, Fortran): the wrapper calls the library's own Fortran
 * MPI_INIT (pmpi_init_). If that reaches the tracer's C MPI_Init, the library's Fortran binding
 * calls the C MPI_ functions (MPICH 4: its mpif.h binding calls MPI_Send, not PMPI_Send), so
 * every later Fortran call is forwarded to the library's Fortran entry and recorded by the C
 * wrapper it calls. Otherwise (Open MPI: its binding calls PMPI_Send) the wrappers convert the
 * arguments and call the C wrappers themselves. Either way the library's Fortran code and the
 * tracer's conversion never both run for one call: each call is recorded once. */
#define _GNU_SOURCE
#include "trace/trace_fort.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

int tr_fort_mode;

/* the library's Fortran entry of mpi_<name>: its PMPI name in the four manglings, then the MPI
 * name itself, in the objects loaded after the tracer */
void *tr_f_next(const char *lower)
{
    char n[128], up[128];
    size_t len = strlen(lower);
    if (len + 4 > sizeof n) return NULL;
    for (size_t i = 0; i <= len; i++) up[i] = (char)(lower[i] >= 'a' && lower[i] <= 'z' ? lower[i] - 32 : lower[i]);
    const char *fmt[] = {"p%s_", "p%s__", "p%s", "P%s", "%s_", "%s__"};
    for (int k = 0; k < 6; k++) {
        snprintf(n, sizeof n, fmt[k], k == 3 ? up : lower);
        void *f = dlsym(RTLD_NEXT, n);
        if (f) return f;
    }
    return NULL;
}

/* the addresses of the Fortran sentinels: Open MPI's common blocks (mpi_fortran_in_place_ ...),
 * else MPICH's pointers to its own (MPIR_F_MPI_IN_PLACE ...) */
static void *f_in_place, *f_bottom, *f_unweighted, *f_weights_empty;
static int f_looked;

static void *f_sym(const char *ompi, const char *mpich)
{
    char n[80];
    const char *fmt[] = {"%s_", "%s", "%s__"};
    for (int k = 0; k < 3; k++) {
        snprintf(n, sizeof n, fmt[k], ompi);
        void *p = dlsym(RTLD_DEFAULT, n);
        if (p) return p;
    }
    void **pp = dlsym(RTLD_DEFAULT, mpich);
    return pp ? *pp : NULL;
}

static void f_lookup(void)
{
    if (f_looked) return;
    f_looked = 1;
    f_in_place = f_sym("mpi_fortran_in_place", "MPIR_F_MPI_IN_PLACE");
    f_bottom = f_sym("mpi_fortran_bottom", "MPIR_F_MPI_BOTTOM");
    f_unweighted = f_sym("mpi_fortran_unweighted", "MPIR_F_MPI_UNWEIGHTED");
    f_weights_empty = f_sym("mpi_fortran_weights_empty", "MPIR_F_MPI_WEIGHTS_EMPTY");
}

void *tr_f_buf(void *p)
{
    f_lookup();
    if (p && p == f_in_place) return MPI_IN_PLACE;
    if (p && p == f_bottom) return MPI_BOTTOM;
    return p;
}

int *tr_f_weights(MPI_Fint *p)
{
    f_lookup();
    if (p && (void *)p == f_unweighted) return MPI_UNWEIGHTED;
    if (p && (void *)p == f_weights_empty) return MPI_WEIGHTS_EMPTY;
    return (int *)p;
}

static void *scratch[6];
static size_t scap[6];

void *tr_f_scratch(int slot, size_t bytes)
{
    if (bytes <= scap[slot]) return scratch[slot];
    void *p = realloc(scratch[slot], bytes);
    if (!p) return NULL;
    scratch[slot] = p;
    scap[slot] = bytes;
    return p;
}

int tr_f_ntypes(MPI_Comm comm, int recv)
{
    (void)recv;
    int inter = 0, n = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS) return 0;
    return n;
}

int tr_f_nneigh(MPI_Comm comm, int out)
{
    int topo = MPI_UNDEFINED, n = 0, rank = 0;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) return 0;
    if (topo == MPI_CART) {
        if (PMPI_Cartdim_get(comm, &n) != MPI_SUCCESS) return 0;
        return 2 * n;
    }
    if (topo == MPI_GRAPH) {
        if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Graph_neighbors_count(comm, rank, &n) != MPI_SUCCESS)
            return 0;
        return n;
    }
    if (topo == MPI_DIST_GRAPH) {
        int in = 0, o = 0, w = 0;
        if (PMPI_Dist_graph_neighbors_count(comm, &in, &o, &w) != MPI_SUCCESS) return 0;
        return out ? o : in;
    }
    return 0;
}

/* A Fortran call in a program whose MPI_Init came from C (a C main with Fortran parts): the same
 * test as at MPI_INIT, made once, with a call that changes nothing: the library's Fortran
 * MPI_INITIALIZED, and whether it reached the tracer's C MPI_Initialized (its count is put back).
 * Before MPI_Init (MPI_INITIALIZED, MPI_WTIME): convert, and decided at the next call. */
int tr_f_decide(void)
{
    if (!tr_c_init_seen) return TR_FORT_CONVERT;   /* before MPI_Init: decided later */
    void (*fp)(MPI_Fint *, MPI_Fint *) = (void (*)(MPI_Fint *, MPI_Fint *))tr_f_next("mpi_initialized");
    if (!fp) return tr_fort_mode = TR_FORT_CONVERT;
    int64_t c0 = tr_cnt[TRC_Initialized];
    int on = tr.on;
    tr.on = 1;   /* the count wrapper counts only while on (an untraced run needs the right mode too) */
    int self = tr_self;
    tr_self = 1; /* the tracer's probe, not the application's call: not passed to the next tool */
    MPI_Fint flag = 0, ierr = 0;
    fp(&flag, &ierr);
    tr_self = self;
    tr.on = on;
    tr_fort_mode = tr_cnt[TRC_Initialized] > c0 ? TR_FORT_FORWARD : TR_FORT_CONVERT;
    tr_cnt[TRC_Initialized] = c0;
    return tr_fort_mode;
}

/* ---- MPI_INIT, MPI_INIT_THREAD, MPI_FINALIZE ---- */
static void f_init(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    double m0 = tr_init_clock();
    tr_c_init_seen = 0;
    if (required) {
        void (*fp)(MPI_Fint *, MPI_Fint *, MPI_Fint *) = (void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))tr_f_next("mpi_init_thread");
        if (fp) fp(required, provided, ierr);
        else {
            int p = 0;
            *ierr = PMPI_Init_thread(NULL, NULL, (int)*required, &p);
            *provided = p;
        }
    } else {
        void (*fp)(MPI_Fint *) = (void (*)(MPI_Fint *))tr_f_next("mpi_init");
        if (fp) fp(ierr);
        else *ierr = PMPI_Init(NULL, NULL);
    }
    if (*ierr != MPI_SUCCESS) return;
    tr_fort_mode = tr_c_init_seen ? TR_FORT_FORWARD : TR_FORT_CONVERT;
    tr_init_done(m0);   /* nothing when the C wrapper did it */
}

static void tr_f_mpi_init(MPI_Fint *ierr) { f_init(NULL, NULL, ierr); }
void mpi_init_(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_init")));
void mpi_init__(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_init")));
void mpi_init(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_init")));
void MPI_INIT(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_init")));

static void tr_f_mpi_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    f_init(required, provided, ierr);
}
void mpi_init_thread_(MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((alias("tr_f_mpi_init_thread")));
void mpi_init_thread__(MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((alias("tr_f_mpi_init_thread")));
void mpi_init_thread(MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((alias("tr_f_mpi_init_thread")));
void MPI_INIT_THREAD(MPI_Fint *, MPI_Fint *, MPI_Fint *) __attribute__((alias("tr_f_mpi_init_thread")));

static void tr_f_mpi_finalize(MPI_Fint *ierr)
{
    if (tr_f_mode() == TR_FORT_FORWARD) {
        void (*fp)(MPI_Fint *) = (void (*)(MPI_Fint *))tr_f_next("mpi_finalize");
        if (fp) {
            fp(ierr);
            return;
        }
    }
    *ierr = MPI_Finalize();
}
void mpi_finalize_(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_finalize")));
void mpi_finalize__(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_finalize")));
void mpi_finalize(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_finalize")));
void MPI_FINALIZE(MPI_Fint *ierr) __attribute__((alias("tr_f_mpi_finalize")));
