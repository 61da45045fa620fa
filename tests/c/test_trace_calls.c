/* The tracer's call table and selection parser (src/trace/trace_calls.c). */
#include <stdlib.h>

#include "base/mt_common.h"
#include "trace/trace.h"
#include "mt_test.h"

static int count(const unsigned char *sel)
{
    int n = 0;
    for (int c = 0; c < TR_NCALLS; c++) n += sel[c];
    return n;
}

int main(void)
{
    char err[MT_ERRLEN];
    unsigned char sel[TR_NCALLS];
    /* the table: unique ids, MPI names, the pseudo call last */
    for (int c = 0; c < TR_NCALLS; c++) {
        CHECK(strncmp(tr_calls[c].name, "MPI_", 4) == 0);
        for (int d = 0; d < c; d++) CHECK(strcmp(tr_calls[c].id, tr_calls[d].id) != 0);
    }
    CHECK_STR(tr_calls[TR_allreduce].name, "MPI_Allreduce");
    CHECK(tr_calls[TR_allreduce].kind == TR_K_A2A && tr_calls[TR_bcast].kind == TR_K_12A);
    CHECK(tr_calls[TR_reduce].kind == TR_K_A21 && tr_calls[TR_irecv].kind == TR_K_IRECV);
    CHECK_STR(tr_calls[TR_irecv_done].id, "irecv_done");
    CHECK_STR(tr_calls[TR_isend_done].id, "isend_done");
    CHECK_STR(tr_calls[TR_user_region].id, "user");
    /* the OTF2 op: every non-blocking collective has its blocking twin's op */
    CHECK(tr_calls[TR_iallreduce].op == tr_calls[TR_allreduce].op && tr_calls[TR_allreduce].op == TR_OP_ALLREDUCE);
    CHECK(tr_calls[TR_ialltoallw].kind == TR_K_ICOLL && tr_calls[TR_ialltoallw].op == TR_OP_ALLTOALLW);
    CHECK(tr_calls[TR_neighbor_alltoall].op == TR_OP_NONE && tr_calls[TR_send].op == TR_OP_NONE);
    for (int c = 0; c < TR_NCALLS; c++) {
        int k = tr_calls[c].kind, coll = k == TR_K_A2A || k == TR_K_12A || k == TR_K_A21;
        if (coll) CHECK(tr_calls[c].op != TR_OP_NONE);
        if (k == TR_K_ICOLL && strncmp(tr_calls[c].name, "MPI_Ineighbor", 13) != 0) CHECK(tr_calls[c].op != TR_OP_NONE);
    }

    CHECK(tr_parse_calls("default", sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls(NULL, sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls("all", sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls("collectives", sel, err) == MT_OK && sel[TR_allreduce] && sel[TR_ibarrier] && !sel[TR_send]);
    CHECK(tr_parse_calls("p2p", sel, err) == MT_OK && sel[TR_send] && sel[TR_waitall] && !sel[TR_barrier]);
    CHECK(sel[TR_probe] && sel[TR_start] && sel[TR_cancel] && !sel[TR_comm_split]);
    CHECK(tr_parse_calls("comm", sel, err) == MT_OK && sel[TR_comm_split] && sel[TR_comm_free] && count(sel) == 14);
    CHECK(tr_parse_calls("allreduce,MPI_Send,mpi_IRECV", sel, err) == MT_OK && count(sel) == 3);
    CHECK(sel[TR_allreduce] && sel[TR_send] && sel[TR_irecv]);
    CHECK(tr_parse_calls("allreduce,bogus", sel, err) == MT_EINVAL);
    CHECK(strstr(err, "unknown MPI call 'bogus'") != NULL && strstr(err, "allowed: default") != NULL);
    CHECK(strstr(err, "allreduce") != NULL && strstr(err, "testsome") != NULL);
    CHECK(tr_parse_calls("allreduce,,send", sel, err) == MT_EINVAL);
    CHECK(tr_parse_calls("irecv_done", sel, err) == MT_EINVAL);   /* not a call one can select */
    CHECK(tr_parse_calls("user", sel, err) == MT_EINVAL);
    TEST_DONE();
}
