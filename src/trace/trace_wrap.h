/* mpitempo: what the generated C wrappers (trace_wrap_gen.c, made by src/trace/gen_wrap.py from
 * trace_sig.def at build time) share: the record slot, the fill of one record, the byte and peer
 * helpers, and the forward to the next tool. Included only by trace_wrap_gen.c. Each wrapper reads
 * the timer, calls the next MPI_ entry point, reads the timer again and fills one preallocated
 * record; nothing else happens on the application's path (no allocation, no I/O, no MPI call but
 * PMPI_Type_size and PMPI_Get_count). When the call is not selected or the tracer is off, the
 * wrapper is a plain forward. */
#ifndef MT_TRACE_WRAP_H
#define MT_TRACE_WRAP_H

#include "trace/trace.h"

#include <stdlib.h>
#include <string.h>

static inline int64_t tr_now(void) { return tr.timer.t->now(); }

/* the next record, or NULL when the buffer is full in stop mode */
static int64_t tr_widx;
static inline tr_ev_t *tr_slot(void)
{
    if (tr.n >= tr.cap && !tr.wrap) {
        tr.dropped++;
        return NULL;
    }
    if (tr_widx == tr.cap) tr_widx = 0;
    tr.n++;
    return &tr.ev[tr_widx++];
}

tr_ev_t *tr_slot_ext(void) { return tr_slot(); }

static inline int64_t tr_bytes(int count, MPI_Datatype dt)
{
    int sz = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &sz) != MPI_SUCCESS) return 0;
    return (int64_t)count * sz;
}

#define TR_REC(id) (tr.on && tr.sel[TR_##id])
#define TR_NOROOT INT32_MIN

int64_t tr_unsel[TR_NCALLS];

static inline void tr_fill_(tr_ev_t *e, int call, int64_t t0, int64_t t1, MPI_Comm comm, int64_t bytes,
                            int peer, int peer2, int root, int tag)
{
    e->t0 = t0;
    e->t1 = t1;
    e->bytes = bytes;
    e->rbytes = 0;
    e->comm = comm == MPI_COMM_NULL ? 0 : tr_comm_idx(comm);
    e->peer = peer;
    e->peer2 = peer2;
    e->root = root;
    e->tag = tag;
    e->call = (int16_t)call;
    e->rtag15 = 0;
    e->req = 0;
    e->orig = -1;
    e->flags = 0;
}

/* every record of a wrapper carries its call site: the wrapper's return address, read where the
 * macro expands (in the exported wrapper, or in a helper always inlined into it) */
#define TR_SITE() ((uint64_t)(uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))
#define tr_fill(e, ...) (tr_fill_((e), __VA_ARGS__), (void)((e)->site = TR_SITE()))

static inline int tr_rootw(MPI_Comm comm, int root) { return root == TR_NOROOT ? -1 : tr_root_world(comm, root); }

/* the bytes a completed receive got (0 from MPI_PROC_NULL) */
static inline int64_t tr_recvd(const MPI_Status *s, int src)
{
    int nb = 0;
    if (src == MPI_PROC_NULL || PMPI_Get_count(s, MPI_BYTE, &nb) != MPI_SUCCESS || nb == MPI_UNDEFINED) return 0;
    return nb;
}

static inline int tr_peer(MPI_Comm comm, int r)
{
    if (r == MPI_PROC_NULL) return -2;
    if (r == MPI_ANY_SOURCE || r < 0) return -1;
    return tr_world_rank(comm, r);
}

/* a completed receive: the matched source, tag and size */
static inline __attribute__((always_inline)) void tr_fill_recv(tr_ev_t *e, int call, int64_t t0, int64_t t1,
                                                               MPI_Comm comm, int src, MPI_Datatype dt,
                                                               const MPI_Status *s)
{
    int n = 0;
    PMPI_Get_count(s, dt, &n);
    int peer = src == MPI_PROC_NULL || s->MPI_SOURCE == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE);
    tr_fill(e, call, t0, t1, comm, n == MPI_UNDEFINED ? 0 : tr_bytes(n, dt), peer, -1, -1, s->MPI_TAG);
}

/* matched probes and receives: the message handle carries no communicator; the probe's is kept */
static MPI_Comm tr_mcomm = MPI_COMM_NULL;

/* scratch copies of request arrays (single-threaded use; see docs/trace.md) */
static MPI_Request *tr_reqs;
static MPI_Status *tr_stats;
static int *tr_flags;
static int tr_nscratch;

static int tr_scratch(int n)
{
    if (n <= tr_nscratch) return 1;
    MPI_Request *r = realloc(tr_reqs, sizeof *r * (size_t)n);
    if (r) tr_reqs = r;
    MPI_Status *s = realloc(tr_stats, sizeof *s * (size_t)n);
    if (s) tr_stats = s;
    int *f = realloc(tr_flags, sizeof *f * (size_t)n);
    if (f) tr_flags = f;
    if (!r || !s || !f) return 0;
    tr_nscratch = n;
    return 1;
}

/* the wait or test itself; 1 when recorded (the completions that follow are attached to it) */
static inline __attribute__((always_inline)) int tr_rec_wait(int id, int64_t t0, int64_t t1)
{
    if (!tr.sel[id]) {
        tr_unsel[id]++;
        return 0;
    }
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, id, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    return e != NULL;
}

#endif
