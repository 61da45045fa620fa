/* mpitempo: the instrumented tree allreduce (tree_ar.h). */
#include "tree/tree_ar.h"

#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "base/mt_mpi.h"

#define TAG_UP 4101
#define TAG_DOWN 4102

int mt_tar_init(mt_tar_t *t, MPI_Comm comm, const int *parent_rank, int use_mpi, int down_order, MPI_Datatype type,
                MPI_Op op, int count, int64_t cap, const mt_timer_inst_t *timer, char *err)
{
    memset(t, 0, sizeof *t);
    int size, tsize;
    mt_check_mpi(MPI_Comm_dup(comm, &t->comm), "MPI_Comm_dup");
    MPI_Comm_rank(t->comm, &t->rank);
    MPI_Comm_size(t->comm, &size);
    MPI_Type_size(type, &tsize);
    t->parent = parent_rank[t->rank];
    t->use_mpi = use_mpi;
    t->down_order = down_order;
    t->type = type;
    t->op = op;
    t->count = count;
    t->bytes = (size_t)count * (size_t)tsize;
    t->now = timer->t->now;
    t->cap = cap;
    if (!use_mpi)
        for (int r = 0; r < size; r++) t->nkids += parent_rank[r] == t->rank;
    int n = t->nkids;
    t->stride = MT_TAR_NFIX + 2 * n;
    size_t b = t->bytes ? t->bytes : 1;
    t->kids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    t->acc = malloc(b);
    t->tmp = malloc(b * (size_t)(n ? n : 1));
    t->reqs = malloc(sizeof(MPI_Request) * (size_t)(n ? n : 1));
    t->seq = malloc(sizeof(int) * (size_t)(n ? n : 1));
    t->ev = malloc(sizeof(int64_t) * (size_t)(cap ? cap : 1) * (size_t)t->stride);
    t->aord = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1) * (size_t)(n ? n : 1));
    t->dord = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1) * (size_t)(n ? n : 1));
    if (!t->kids || !t->acc || !t->tmp || !t->reqs || !t->seq || !t->ev || !t->aord || !t->dord)
        return mt_fail(err, MT_ENOMEM, "out of memory for the events of %lld calls", (long long)cap);
    /* touch the event memory now: no page faults while measuring */
    memset(t->ev, 0, sizeof(int64_t) * (size_t)(cap ? cap : 1) * (size_t)t->stride);
    memset(t->aord, 0, sizeof(int32_t) * (size_t)(cap ? cap : 1) * (size_t)(n ? n : 1));
    memset(t->dord, 0, sizeof(int32_t) * (size_t)(cap ? cap : 1) * (size_t)(n ? n : 1));
    int k = 0;
    if (!use_mpi)
        for (int r = 0; r < size; r++)
            if (parent_rank[r] == t->rank) t->kids[k++] = r;
    for (int i = 0; i < n; i++)
        mt_check_mpi(MPI_Recv_init(t->tmp + (size_t)i * t->bytes, count, type, t->kids[i], TAG_UP, t->comm,
                                   &t->reqs[i]),
                     "MPI_Recv_init");
    return MT_OK;
}

int mt_tar_call(mt_tar_t *t, const void *sbuf, void *rbuf, int record)
{
    int64_t *e = NULL;
    int32_t *ao = NULL, *dd = NULL;
    int n = t->nkids;
    if (record && t->ncalls < t->cap) {
        e = t->ev + t->ncalls * t->stride;
        ao = t->aord + t->ncalls * n;
        dd = t->dord + t->ncalls * n;
        t->ncalls++;
        e[MT_TAR_ENTER] = t->now();
    }
    if (t->use_mpi) {
        int rc = MPI_Allreduce(sbuf, rbuf, t->count, t->type, t->op, t->comm);
        if (e) {
            e[MT_TAR_EXIT] = t->now();
            e[MT_TAR_UP] = e[MT_TAR_ENTER];
            e[MT_TAR_DOWN] = e[MT_TAR_EXIT];
        }
        return rc;
    }
    const void *up = sbuf;
    if (n) {
        mt_check_mpi(MPI_Startall(n, t->reqs), "MPI_Startall");
        memcpy(t->acc, sbuf, t->bytes);
        for (int k = 0; k < n; k++) {
            int idx;
            mt_check_mpi(MPI_Waitany(n, t->reqs, &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
            if (e) {
                e[MT_TAR_NFIX + idx] = t->now();
                ao[idx] = k;
            }
            t->seq[k] = idx;
            mt_check_mpi(MPI_Reduce_local(t->tmp + (size_t)idx * t->bytes, t->acc, t->count, t->type, t->op),
                         "MPI_Reduce_local");
        }
        up = t->acc;
        if (e && t->parent >= 0) e[MT_TAR_UP] = t->now();
    } else if (e) {
        e[MT_TAR_UP] = e[MT_TAR_ENTER];
    }
    if (t->parent >= 0) {
        mt_check_mpi(MPI_Send(up, t->count, t->type, t->parent, TAG_UP, t->comm), "MPI_Send");
        mt_check_mpi(MPI_Recv(rbuf, t->count, t->type, t->parent, TAG_DOWN, t->comm, MPI_STATUS_IGNORE), "MPI_Recv");
        if (e) e[MT_TAR_DOWN] = t->now();
    } else {
        memcpy(rbuf, up, t->bytes);
        if (e) e[MT_TAR_UP] = e[MT_TAR_DOWN] = t->now(); /* the root: t2 = t3 once the result is in place */
    }
    for (int j = 0; j < n; j++) {
        int idx = t->down_order == MT_TAR_DOWN_LIFO ? t->seq[n - 1 - j] : j;
        if (e) { /* the first departure follows t3 with nothing in between: the same reading */
            e[MT_TAR_NFIX + n + idx] = j ? t->now() : e[MT_TAR_DOWN];
            dd[idx] = j;
        }
        mt_check_mpi(MPI_Send(rbuf, t->count, t->type, t->kids[idx], TAG_DOWN, t->comm), "MPI_Send");
    }
    if (e) e[MT_TAR_EXIT] = n ? t->now() : e[MT_TAR_DOWN];
    return MPI_SUCCESS;
}

void mt_tar_free(mt_tar_t *t)
{
    for (int i = 0; i < t->nkids && t->reqs; i++) MPI_Request_free(&t->reqs[i]);
    if (t->comm != MPI_COMM_NULL && t->comm) MPI_Comm_free(&t->comm);
    free(t->kids);
    free(t->acc);
    free(t->tmp);
    free(t->reqs);
    free(t->seq);
    free(t->ev);
    free(t->aord);
    free(t->dord);
    memset(t, 0, sizeof *t);
}
