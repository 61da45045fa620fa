/* mpitempo: offset-algorithm registry and the checked point-to-point helpers. */
#include "clock/offset.h"
#include "base/mt_mpi.h"
#include "base/mt_common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const mt_offset_alg_t *const mt_offset_algs[] = {&mt_offset_skampi, &mt_offset_meanrtt};
const int mt_noffset_algs = (int)(sizeof(mt_offset_algs) / sizeof(mt_offset_algs[0]));

const mt_offset_alg_t *mt_offset_find(const char *name)
{
    for (int i = 0; i < mt_noffset_algs; i++)
        if (strcmp(mt_offset_algs[i]->name, name) == 0) return mt_offset_algs[i];
    return NULL;
}

void mt_offset_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < mt_noffset_algs; i++) {
        if (i) strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, mt_offset_algs[i]->name, len - strlen(buf) - 1);
    }
}

int mt_pp_open(mt_pp_t *pp, MPI_Comm comm, int lazy, char *err)
{
    memset(pp, 0, sizeof *pp);
    if (MPI_Comm_dup(comm, &pp->comm) != MPI_SUCCESS) return mt_fail(err, MT_EMPI, "MPI_Comm_dup failed");
    mt_check_mpi(MPI_Comm_rank(pp->comm, &pp->rank), "MPI_Comm_rank");
    mt_check_mpi(MPI_Comm_size(pp->comm, &pp->size), "MPI_Comm_size");
    pp->rtt = malloc(sizeof(double) * 2 * (size_t)pp->size); /* RTT estimate, then the fastest round trip */
    if (!pp->rtt) {
        MPI_Comm_free(&pp->comm);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < pp->size; i++) {
        pp->rtt[i] = -1.0;
        pp->rtt[pp->size + i] = 1e300;
    }
    pp->lazy = lazy;
    return MT_OK;
}

void mt_pp_close(mt_pp_t *pp)
{
    if (pp->comm != MPI_COMM_NULL) mt_check_mpi(MPI_Comm_free(&pp->comm), "MPI_Comm_free");
    free(pp->rtt);
    pp->rtt = NULL;
}

void mt_pp_send(mt_pp_t *pp, const double *v, int n, int dest, int tag)
{
    mt_check_mpi(MPI_Send(v, n, MPI_DOUBLE, dest, tag, pp->comm), "MPI_Send");
    pp->msgs_sent++;
}

void mt_pp_ssend(mt_pp_t *pp, const double *v, int n, int dest, int tag)
{
    mt_check_mpi(MPI_Ssend(v, n, MPI_DOUBLE, dest, tag, pp->comm), "MPI_Ssend");
    pp->msgs_sent++;
}

void mt_pp_recv(mt_pp_t *pp, double *v, int n, int src, int tag)
{
    mt_check_mpi(MPI_Recv(v, n, MPI_DOUBLE, src, tag, pp->comm, MPI_STATUS_IGNORE), "MPI_Recv");
}

static void wait_lazy(MPI_Request *rq)
{
    int done = 0;
    if (MT_SIMULATED) { /* SMPI: a blocked rank costs the simulation nothing; polling naps cost a step each */
        mt_check_mpi(MPI_Wait(rq, MPI_STATUS_IGNORE), "MPI_Wait");
        return;
    }
    for (;;) {
        mt_check_mpi(MPI_Test(rq, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) break;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

void mt_pp_recv_lazy(mt_pp_t *pp, double *v, int n, int src, int tag)
{
    if (!pp->lazy) {
        mt_pp_recv(pp, v, n, src, tag);
        return;
    }
    MPI_Request rq;
    mt_check_mpi(MPI_Irecv(v, n, MPI_DOUBLE, src, tag, pp->comm, &rq), "MPI_Irecv");
    wait_lazy(&rq);
}

void mt_pp_lazy_barrier(mt_pp_t *pp)
{
    if (!pp->lazy) return;
    MPI_Request rq;
    mt_check_mpi(MPI_Ibarrier(pp->comm, &rq), "MPI_Ibarrier");
    wait_lazy(&rq);
}

void mt_lazy_barrier(MPI_Comm comm, int lazy)
{
    if (!lazy) return;
    MPI_Request rq;
    mt_check_mpi(MPI_Ibarrier(comm, &rq), "MPI_Ibarrier");
    wait_lazy(&rq);
}
