/* mpitempo: the PMPI tracer (libmpitempo-trace.so). Loaded with LD_PRELOAD (or
 * linked), it synchronises a global clock at MPI_Init and again at
 * MPI_Finalize (Hunold and Carpen-Amarie 2018, section V.C), records enter and
 * exit of the selected MPI calls with their arguments into a preallocated
 * per-rank buffer, and at MPI_Finalize writes the trace on the global clock
 * (events.csv, Chrome/Perfetto JSON, OTF2). Configuration comes from the
 * environment (MPITEMPO_TRACE_*; docs/trace.md). Its own errors never stop the
 * application: it warns and the application runs untraced. */
#ifndef MT_TRACE_H
#define MT_TRACE_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "clock/session.h"

enum { TR_G_COLL = 1, TR_G_P2P = 2, TR_G_WAIT = 4, TR_G_COMM = 8 };
enum { TR_K_A2A = 1, TR_K_12A, TR_K_A21, TR_K_COLL, TR_K_SEND, TR_K_RECV, TR_K_SENDRECV, TR_K_ISEND,
       TR_K_IRECV, TR_K_WAIT, TR_K_MSGRECV, TR_K_ICOLL, TR_K_PROBE, TR_K_INIT, TR_K_START, TR_K_REQ,
       TR_K_COMMC, TR_K_SENDDONE, TR_K_COLLDONE, TR_K_STARTSEND, TR_K_STARTRECV, TR_K_REGION };
/* the OTF2 collective op of a table entry (trace_otf2.c maps them; NONE: no collective record) */
enum { TR_OP_NONE = -1, TR_OP_BARRIER, TR_OP_BCAST, TR_OP_GATHER, TR_OP_GATHERV, TR_OP_SCATTER, TR_OP_SCATTERV,
       TR_OP_ALLGATHER, TR_OP_ALLGATHERV, TR_OP_ALLTOALL, TR_OP_ALLTOALLV, TR_OP_ALLTOALLW, TR_OP_ALLREDUCE,
       TR_OP_REDUCE, TR_OP_REDUCE_SCATTER, TR_OP_SCAN, TR_OP_EXSCAN, TR_OP_REDUCE_SCATTER_BLOCK };

enum tr_call_id {
#define TR_CALL(id, name, group, kind, op) TR_##id,
#include "trace_calls.def"
#undef TR_CALL
    TR_NCALLS,
    /* pseudo calls (records the wrappers add; not selectable) */
    TR_irecv_done = TR_NCALLS, /* a receive request (MPI_Irecv, MPI_Imrecv, MPI_Recv_init) completed */
    TR_isend_done,             /* a send request (MPI_Isend..., MPI_Send_init...) completed or was freed */
    TR_icoll_done,             /* a non-blocking collective completed */
    TR_start_send,             /* MPI_Start(all) activated a persistent send: its message */
    TR_start_recv,             /* MPI_Start(all) activated a persistent receive */
    TR_init_region,            /* MPI_Init (or MPI_Init_thread) */
    TR_finalize_region,        /* MPI_Finalize (up to the tracer's own work) */
    TR_user_region,            /* mpitempo_region_begin/end (the name index is in `tag`) */
    TR_NALL
};

typedef struct tr_call_info {
    const char *id;     /* "allreduce" */
    const char *name;   /* "MPI_Allreduce" */
    int group, kind, op;
} tr_call_info_t;
extern const tr_call_info_t tr_calls[TR_NALL];

/* the calls that are only counted (trace_count.def) */
enum tr_count_id {
#define TR_COUNT(ret, name, params, args) TRC_##name,
#include "trace_count.def"
#if MPI_VERSION >= 4
#include "trace_count4.def"
#endif
#include "trace_count_auto.def" /* generated at build time from mpi.h (src/trace/gen_count.py) */
#undef TR_COUNT
    TRC_Pcontrol,
    TRC_N
};
extern const char *const tr_count_names[TRC_N];
extern int64_t tr_cnt[TRC_N];

/* event flags */
enum { TR_F_CANCELLED = 1, TR_F_FREED = 2, TR_F_ATTACHED = 4, TR_F_BEGIN = 8, TR_F_END = 16 };

/* user region names of every rank, merged by rank 0 at MPI_Finalize (user_region events: the index in `tag`) */
#define TR_MAX_REGION_NAMES 512
extern char **tr_region_gnames;
extern int tr_region_ngnames;

/* One recorded event (72 bytes). Ticks of the tracer's timer. */
typedef struct tr_ev {
    int64_t t0, t1;       /* enter, exit (*_done: initiation, exit of the completing call) */
    int64_t bytes;        /* point-to-point: the payload (count x type size); collectives: the bytes
                           * this rank sends (trace_bytes.c) */
    int64_t rbytes;       /* collectives: the bytes this rank receives; 0 otherwise */
    uint32_t comm;        /* the tracer's local index of the communicator + 1 (0: none) */
    int32_t peer;         /* world rank: destination (send), source (recv, as matched); -1 none, -2 MPI_PROC_NULL */
    int32_t peer2;        /* sendrecv: the source; -1 otherwise */
    int32_t root;         /* world rank of the root of rooted collectives, else -1 */
    int32_t tag;          /* point-to-point tag (sendrecv: the send tag), else -1 */
    int16_t call;         /* tr_call_id */
    int16_t rtag15;       /* sendrecv: the received tag (low 15 bits) */
    uint32_t req;         /* request id (per rank, from 1) of non-blocking and persistent operations, else 0 */
    int16_t orig;         /* pseudo calls: the call that created the request; else -1 */
    int16_t flags;        /* TR_F_* */
    uint64_t site;        /* call site: the return address of the wrapper (in the caller); 0 unknown */
} tr_ev_t;

/* What the tracer knows; one per process (the PMPI library is a singleton). */
typedef struct tr_state {
    int on;               /* recording (0 during sync and when disabled) */
    int enabled;          /* the tracer is active for this run */
    int rank, size;
    MPI_Comm comm;        /* private duplicate of MPI_COMM_WORLD */
    unsigned char sel[TR_NCALLS];
    /* buffer */
    tr_ev_t *ev;
    int64_t cap, n;       /* capacity, events recorded (wrap: total, the buffer keeps the last cap) */
    int wrap;
    int64_t dropped;      /* stop mode: events not recorded after the buffer was full */
    /* configuration */
    char dir[4096];
    char sync_str[256];
    char timer_name[64];
    char calls_str[1024];
    int defaulted_sync;
    /* clock */
    mt_timer_inst_t timer;
    mt_gclock_t g;
    int synced;           /* 1: the init sync succeeded */
    char sync_note[512];  /* why the sync fell back, if it did */
    int64_t tk_start, tk_end; /* ticks: end of init sync, start of finalize */
    double init_sync_s, fin_sync_s;
    int fin_synced;
    double corr_end_s;    /* the correction applied at tk_end on this rank (tr_global) */
    double corr_ref_s;    /* global(finalize model) - global(init model) at r_fin */
    const char *end_how;  /* how the end correction was found: "measured", "resync" or "none" */
    int end_mode;         /* MPITEMPO_TRACE_END_CORRECTION: 0 auto, 1 measured, 2 resync, 3 none */
    double r_fin;         /* raw base-clock time the finalize model refers to: the middle of that sync */
    double walltime0;     /* CLOCK_REALTIME at start (for OTF2) */
    int finalized;
    int oversubscribed;   /* more ranks on a host than it has CPUs online (any host) */
} tr_state_t;

extern tr_state_t tr;

/* the events of one rank after finalize, converted to seconds */
typedef struct tr_out_ev {
    double t0_raw, t1_raw, t0, t1;  /* raw local (base clock) and global seconds */
    int64_t bytes, rbytes;          /* tr_ev_t's */
    uint64_t comm;                  /* global communicator id (tr_comm_gid; 0 none) */
    int32_t peer, peer2, root, tag, rtag;
    int32_t call, rank;
    int32_t orig, flags;
    uint32_t req, pad_;
    int64_t seq;
    uint64_t site;                  /* call site address on this rank (tr_ev_t.site); resolved by trace_sites.c */
} tr_out_ev_t;

/* a communicator as every member agreed on it (rank 0 merges the ranks' tables at MPI_Finalize) */
typedef struct tr_gcomm {
    uint64_t gid, parent;     /* global ids: MPI_COMM_WORLD 1, MPI_COMM_SELF of rank r (2<<60)|r,
                               * created ((leader world rank + 1) << 32) | leader's count,
                               * seen without its creation (1<<62) | hash of the members */
    int inter, n, nr;         /* intercommunicator; sizes of the (local) group and the remote group */
    int *members, *rmembers;  /* world ranks in communicator rank order (inter: the two groups) */
    char how[32];             /* creating call ("MPI_Comm_split", ...), "predefined" or "untracked" */
    int freed;                /* MPI_Comm_free seen on some rank */
} tr_gcomm_t;

/* trace_next.c: the next tool. Every wrapper forwards to the MPI_ symbol that follows the tracer
 * in the search order (dlsym(RTLD_NEXT, "MPI_X"), resolved once; the library's PMPI_X when there
 * is none), so that a PMPI tool preloaded after the tracer sees every call the application makes.
 * tr_self is set while the tracer makes MPI calls of its own (the set-up and clock sync after
 * MPI_Init, the work at MPI_Finalize): those go to PMPI_X, unseen by the next tool. The PMPI_X
 * symbol is only called, never taken by address (a call binds lazily: an MPI library that declares
 * a function it does not export, as MPICH 4.0's PMPI_Status_f082f, still loads the tracer). */
extern int tr_self;
void (*tr_next_sym(const char *name, const char *pname))(void);
#define TR_FWD(N, args)                                                                                    \
    (tr_self ? PMPI_##N args                                                                               \
             : ({                                                                                          \
                   __typeof__(&PMPI_##N) f_ = tr_nx_##N;                                                   \
                   if (__builtin_expect(!f_, 0))                                                           \
                       f_ = tr_nx_##N = (__typeof__(&PMPI_##N))tr_next_sym("MPI_" #N, "PMPI_" #N);          \
                   f_;                                                                                     \
               }) args)

/* trace_core.c */
void tr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tr_parse_calls(const char *s, unsigned char *sel, char *err);
/* MPI_Init from C or Fortran (trace_fort_rt.c): the clock at the application's call, the set-up
 * after the library's init (once, whichever wrapper comes first), and whether the C MPI_Init or
 * MPI_Init_thread wrapper ran */
double tr_init_clock(void);
void tr_init_done(double m0);
extern int tr_c_init_seen;
extern int tr_fort_mode;   /* 0 (no Fortran MPI_INIT), 1 forward, 2 convert: trace_fort.h */
uint32_t tr_comm_idx(MPI_Comm comm);          /* local index + 1 (0: none/unknown) */
int tr_world_rank(MPI_Comm comm, int r);      /* world rank of rank r (the remote group for intercomms) */
int tr_root_world(MPI_Comm comm, int root);   /* world rank of a collective's root (MPI_ROOT: mine) */
int tr_comm_peers(MPI_Comm comm);              /* ranks a collective sends to: the size (inter: the remote size) */
uint64_t tr_comm_gid(uint32_t idx);
/* a communicator was created by `call` on this member (collective over newcomm: agrees on its id) */
void tr_comm_created(MPI_Comm newcomm, MPI_Comm parent, int call);
void tr_comm_freed(MPI_Comm comm);
int tr_comm_gather(tr_gcomm_t **out, int *nout);   /* collective over tr.comm; rank 0 gets the union */
void tr_gcomms_free(tr_gcomm_t *c, int n);
/* requests: tracked from initiation to completion */
uint32_t tr_req_post(MPI_Request req, int call, int64_t t0, MPI_Comm comm, int peer, int tag, int64_t bytes,
                     int root, int persistent);
/* the received bytes of the collective request `id` just posted (tr_req_post) */
void tr_req_set_rbytes(uint32_t id, int64_t rbytes);
int tr_req_pending(void);
/* MPI_Start of a tracked persistent request: a start_send/start_recv record; returns 0 if untracked */
void tr_req_start(MPI_Request req, int64_t t0, int64_t t1, int attached);
/* after a completion call: `before` (the handle before the call) completed with status st at t1 */
void tr_req_done_one(MPI_Request before, const MPI_Status *st, int64_t t1, int attached);
/* MPI_Request_free of a tracked request */
void tr_req_freed(MPI_Request req, int64_t t1, int attached);
/* counts of the calls seen but not recorded (not selected, or in trace_count.def) */
extern int64_t tr_unsel[TR_NCALLS];
/* trace_wrap.c: the next record, or NULL when the buffer is full in stop mode */
tr_ev_t *tr_slot_ext(void);

/* trace_bytes.c: the bytes a rank sends (s) and receives (r) in one collective, by Score-P's rules */
typedef struct tr_sr { int64_t s, r; } tr_sr_t;
tr_sr_t tr_cb_gather(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, int root, MPI_Comm comm);
tr_sr_t tr_cb_gatherv(const void *sb, int sc, MPI_Datatype st, const int *rcs, MPI_Datatype rt, int root,
                      MPI_Comm comm);
tr_sr_t tr_cb_reduce(const void *sb, int count, MPI_Datatype dt, int root, MPI_Comm comm);
tr_sr_t tr_cb_bcast(int count, MPI_Datatype dt, int root, MPI_Comm comm);
tr_sr_t tr_cb_scatter(int sc, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm);
tr_sr_t tr_cb_scatterv(const int *scs, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, int root,
                       MPI_Comm comm);
tr_sr_t tr_cb_alltoall(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, MPI_Comm comm);
tr_sr_t tr_cb_allreduce(const void *sb, int count, MPI_Datatype dt, MPI_Comm comm);
tr_sr_t tr_cb_allgatherv(const void *sb, int sc, MPI_Datatype st, const int *rcs, MPI_Datatype rt, MPI_Comm comm);
tr_sr_t tr_cb_alltoallv(const void *sb, const int *scs, MPI_Datatype st, const int *rcs, MPI_Datatype rt,
                        MPI_Comm comm);
tr_sr_t tr_cb_alltoallw(const void *sb, const int *scs, const MPI_Datatype *sts, const int *rcs,
                        const MPI_Datatype *rts, MPI_Comm comm);
tr_sr_t tr_cb_reduce_scatter_block(const void *sb, int rc, MPI_Datatype dt, MPI_Comm comm);
tr_sr_t tr_cb_reduce_scatter(const void *sb, const int *rcs, MPI_Datatype dt, MPI_Comm comm);
tr_sr_t tr_cb_scan(const void *sb, int count, MPI_Datatype dt, MPI_Comm comm, int exclusive);
/* neighbourhood collectives: a count (sc) or counts (scs), one type (st) or types (sts); the same for receive */
tr_sr_t tr_cb_neighbor(int sc, const int *scs, const MPI_Datatype *sts, MPI_Datatype st, int rc, const int *rcs,
                       const MPI_Datatype *rts, MPI_Datatype rt, MPI_Comm comm);

/* trace_sites.c: this rank's distinct call-site addresses of ev[0..n) resolved with dladdr, as lines
 * "rank<TAB>address<TAB>object<TAB>object base<TAB>symbol<TAB>symbol address" (malloc'd; NULL when none) */
char *tr_sites_text(const tr_out_ev_t *ev, int64_t n, int rank, int64_t *len);

/* trace_out.c: rank 0 writes the files (each rank's events arrive in turn) */
typedef struct tr_writer tr_writer_t;
tr_writer_t *tr_writer_open(const char *dir, int nranks, char *err);
int tr_writer_rank(tr_writer_t *w, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, char *err);
int tr_writer_close(tr_writer_t *w, FILE *meta_extra, char *err);
const char *tr_kind_name(int kind);
void tr_csv_header(FILE *f);
void tr_csv_rows(FILE *f, const tr_out_ev_t *ev, int64_t n);

/* trace_otf2.c (stubbed out when OTF2 is not built in) */
typedef struct tr_otf2 tr_otf2_t;
extern const int tr_have_otf2;
tr_otf2_t *tr_otf2_open(const char *dir, int nranks, const tr_gcomm_t *comms, int ncomms, char *err);
int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err);
int tr_otf2_close(tr_otf2_t *o, double t_origin, double t_last, char *err);
/* an archive property (anchor file) MPITEMPO::NAME = value, written at tr_otf2_close */
void tr_otf2_property(tr_otf2_t *o, const char *name, const char *value);

#endif
