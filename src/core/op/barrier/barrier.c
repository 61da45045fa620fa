/* mpitempo: state and message helpers of our barrier algorithms (barrier.h). */
#include "op/barrier/barrier.h"

#include <stdlib.h>

#include "base/mt_common.h"

int mt_bar_setup(mt_op_args_t *a, char *err)
{
    mt_bar_t *b = calloc(1, sizeof *b);
    int p = a->size > 0 ? a->size : 1;
    if (b) {
        b->rbuf = calloc((size_t)p, sizeof(int));
        b->src = calloc((size_t)p, sizeof(int));
        b->req = calloc((size_t)(2 * p), sizeof(MPI_Request));
    }
    if (!b || !b->rbuf || !b->src || !b->req) {
        if (b) {
            free(b->rbuf);
            free(b->src);
            free(b->req);
        }
        free(b);
        return mt_fail(err, MT_ENOMEM, "out of memory for the barrier's state");
    }
    int rc = MPI_Comm_dup(a->comm, &b->comm);
    if (rc != MPI_SUCCESS) {
        free(b->rbuf);
        free(b->src);
        free(b->req);
        free(b);
        return mt_fail(err, MT_EMPI, "MPI_Comm_dup failed for the barrier's communicator");
    }
    MPI_Comm_rank(b->comm, &b->rank);
    MPI_Comm_size(b->comm, &b->size);
    b->param = a->param;
    a->state = b;
    return MT_OK;
}

void mt_bar_teardown(mt_op_args_t *a)
{
    mt_bar_t *b = a->state;
    if (!b) return;
    MPI_Comm_free(&b->comm);
    free(b->rbuf);
    free(b->src);
    free(b->req);
    free(b);
    a->state = NULL;
}

mt_bar_t *mt_bar_state(const mt_op_args_t *a)
{
    return (a->op && a->op->setup == mt_bar_setup) ? a->state : NULL;
}

mt_bar_t *mt_bar_begin(mt_op_args_t *a)
{
    mt_bar_t *b = a->state;
    b->seq = (b->seq + 1) & 0x3fffffff;
    b->calls++;
    return b;
}

int mt_bar_send(mt_bar_t *b, int dest, int tag)
{
    b->sent++;
    return MPI_Send(&b->seq, 1, MPI_INT, dest, tag, b->comm);
}

static void got(mt_bar_t *b, int v)
{
    b->received++;
    if (v != b->seq) b->mismatched++;
}

int mt_bar_recv(mt_bar_t *b, int src, int tag)
{
    int v = -1;
    int rc = MPI_Recv(&v, 1, MPI_INT, src, tag, b->comm, MPI_STATUS_IGNORE);
    got(b, v);
    return rc;
}

int mt_bar_sendrecv(mt_bar_t *b, int dest, int src, int tag)
{
    int v = -1;
    b->sent++;
    int rc = MPI_Sendrecv(&b->seq, 1, MPI_INT, dest, tag, &v, 1, MPI_INT, src, tag, b->comm, MPI_STATUS_IGNORE);
    got(b, v);
    return rc;
}

int mt_bar_recv_all(mt_bar_t *b, const int *src, int n, int tag)
{
    if (n <= 0) return MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        b->rbuf[i] = -1;
        int rc = MPI_Irecv(&b->rbuf[i], 1, MPI_INT, src[i], tag, b->comm, &b->req[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    int rc = MPI_Waitall(n, b->req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < n; i++) got(b, b->rbuf[i]);
    return rc;
}

int mt_bar_bcast_binomial(mt_bar_t *b, int tag)
{
    int r = b->rank, p = b->size, mask = 1, rc = MPI_SUCCESS;
    while (mask < p) { /* the parent: r minus its lowest set bit */
        if (r & mask) {
            if ((rc = mt_bar_recv(b, r - mask, tag)) != MPI_SUCCESS) return rc;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) /* the children, the largest subtree first */
        if (r + mask < p && (rc = mt_bar_send(b, r + mask, tag)) != MPI_SUCCESS) return rc;
    return rc;
}

int mt_bar_combine_up(mt_bar_t *b, int n, int tag0, int *levels, int *parent)
{
    int r = b->rank, p = b->size, rc = MPI_SUCCESS, l = 0;
    long long stride = 1;
    *parent = -1;
    while (stride < p) {
        long long group = stride * n;
        if (r % group != 0) { /* not the first of my group at this level: report and stop */
            *parent = (int)(r - r % group);
            rc = mt_bar_send(b, *parent, tag0 + l);
            break;
        }
        int k = 0;
        for (int j = 1; j < n && r + j * stride < p; j++) b->src[k++] = (int)(r + j * stride);
        if ((rc = mt_bar_recv_all(b, b->src, k, tag0 + l)) != MPI_SUCCESS) break;
        l++;
        stride = group;
    }
    *levels = l;
    return rc;
}
