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

enum { TR_G_COLL = 1, TR_G_P2P = 2, TR_G_WAIT = 4 };
enum { TR_K_A2A = 1, TR_K_12A, TR_K_A21, TR_K_COLL, TR_K_SEND, TR_K_RECV, TR_K_SENDRECV, TR_K_ISEND,
       TR_K_IRECV, TR_K_WAIT, TR_K_MSGRECV };

enum tr_call_id {
#define TR_CALL(id, name, group, kind) TR_##id,
#include "trace_calls.def"
#undef TR_CALL
    TR_NCALLS,
    TR_irecv_done = TR_NCALLS   /* pseudo call: an MPI_Irecv completed in a wait or test */
};

typedef struct tr_call_info {
    const char *id;     /* "allreduce" */
    const char *name;   /* "MPI_Allreduce" */
    int group, kind;
} tr_call_info_t;
extern const tr_call_info_t tr_calls[TR_NCALLS + 1];

/* One recorded event (48 bytes). Ticks of the tracer's timer. */
typedef struct tr_ev {
    int64_t t0, t1;       /* enter, exit (irecv_done: post of the MPI_Irecv, exit of the completing call) */
    int64_t bytes;        /* payload of this rank (count x type size; v-variants summed) */
    uint32_t commkey;     /* hash of the communicator's members (world ranks) */
    int32_t peer;         /* world rank: destination (send), source (recv, as matched); -1 none, -2 MPI_PROC_NULL */
    int32_t peer2;        /* sendrecv: the source; -1 otherwise */
    int32_t root;         /* world rank of the root of rooted collectives, else -1 */
    int32_t tag;          /* point-to-point tag (sendrecv: the send tag), else -1 */
    int16_t call;         /* tr_call_id */
    int16_t rtag15;       /* sendrecv: the received tag (low 15 bits; keeps the record at 48 bytes) */
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
    double corr_end_s;    /* global(init model) - global(finalize model) at tk_end on this rank */
    double walltime0;     /* CLOCK_REALTIME at start (for OTF2) */
    int finalized;
    int oversubscribed;   /* more ranks on a host than it has CPUs online (any host) */
} tr_state_t;

extern tr_state_t tr;

/* the events of one rank after finalize, converted to seconds */
typedef struct tr_out_ev {
    double t0_raw, t1_raw, t0, t1;  /* raw local (base clock) and global seconds */
    int64_t bytes;
    uint32_t commkey;
    int32_t peer, peer2, root, tag, rtag;
    int32_t call, rank;
    int64_t seq;
} tr_out_ev_t;

/* trace_core.c */
void tr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tr_parse_calls(const char *s, unsigned char *sel, char *err);
uint32_t tr_commkey(MPI_Comm comm);
int tr_world_rank(MPI_Comm comm, int r);
void tr_req_post(MPI_Request req, int64_t t0, uint32_t commkey, MPI_Comm comm);
int tr_req_pending(void);
/* after a completion call: `before` (the handle before the call) completed with status st at t1;
 * when it was a tracked MPI_Irecv, an irecv_done event is recorded */
void tr_req_done_one(MPI_Request before, const MPI_Status *st, int64_t t1);
/* trace_wrap.c: the next record, or NULL when the buffer is full in stop mode */
tr_ev_t *tr_slot_ext(void);

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
tr_otf2_t *tr_otf2_open(const char *dir, int nranks, char *err);
int tr_otf2_rank(tr_otf2_t *o, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, double t_origin,
                 char *err);
int tr_otf2_close(tr_otf2_t *o, double t_origin, double t_last, char *err);

#endif
