/* mpitempo: allreduce along an explicit spanning tree, instrumented with event
 * collectors (Bongo, Anshus and Bjorndalen 2004, section 3). Every rank runs
 * one tree node: it receives its children's partial results (in the order
 * they arrive, MPI_Waitany), reduces them into its own contribution
 * (MPI_Reduce_local: any MPI datatype and predefined op), sends the partial
 * result to its parent, receives the final result from it and sends that to
 * its children (fixed child order, or last-arrived first).
 *
 * Events of one call on one rank (timer ticks, preallocated, converted to the
 * global clock after the run):
 *   enter  t1 of the rank's own contribution (the call starts)
 *   up     t2: the partial result leaves for the parent (after the last arrival and the reduction)
 *   down   t3: the result is back from the parent (the root: = up)
 *   exit   t4 of the own contribution (the call returns)
 *   arr[i] t1 of child i at this node: its partial result has arrived (the link's t2)
 *   dep[i] t4 of child i: the result leaves for child i (the link's t3)
 * Readings are shared where nothing happens between two events, which keeps
 * the collectors off the critical path: a leaf reads the clock twice (enter =
 * up, down = exit); the root's up = down is read once its result is in place;
 * the first departure is the reading of down (so the up latency t4,first - t3
 * is 0 by construction and the cost of each send shows as departure wait). */
#ifndef MT_TREE_AR_H
#define MT_TREE_AR_H

#include <mpi.h>
#include <stdint.h>

#include "timer/timer.h"

enum { MT_TAR_ENTER, MT_TAR_UP, MT_TAR_DOWN, MT_TAR_EXIT, MT_TAR_NFIX };
enum { MT_TAR_DOWN_FIXED = 0, MT_TAR_DOWN_LIFO = 1 };

typedef struct mt_tar {
    MPI_Comm comm;          /* a duplicate per tree instance */
    int rank, parent, nkids;
    int *kids;              /* child ranks, ascending */
    MPI_Datatype type;
    MPI_Op op;
    int count;
    size_t bytes;
    int use_mpi;            /* the library's MPI_Allreduce instead (only enter and exit recorded) */
    int down_order;         /* MT_TAR_DOWN_* */
    char *acc, *tmp;        /* own partial result, one receive buffer per child */
    MPI_Request *reqs;      /* persistent receives from the children */
    int *seq;               /* this call's arrival sequence (child indices) */
    int64_t (*now)(void);
    int stride;             /* int64 per call: MT_TAR_NFIX + 2 nkids */
    int64_t cap, ncalls;    /* recorded calls: capacity and count */
    int64_t *ev;            /* cap x stride ticks */
    int32_t *aord, *dord;   /* cap x nkids: arrival and departure position of each child */
} mt_tar_t;

/* Collective over comm. parent_rank: the tree over comm's ranks. cap: calls to record. */
int mt_tar_init(mt_tar_t *t, MPI_Comm comm, const int *parent_rank, int use_mpi, int down_order, MPI_Datatype type,
                MPI_Op op, int count, int64_t cap, const mt_timer_inst_t *timer, char *err);
/* One allreduce of count elements: sbuf -> rbuf (distinct buffers). record: keep its events
 * (only while ncalls < cap); 0 runs the same code without reading the clock. */
int mt_tar_call(mt_tar_t *t, const void *sbuf, void *rbuf, int record);
void mt_tar_free(mt_tar_t *t);

#endif
