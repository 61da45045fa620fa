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

    CHECK(tr_parse_calls("default", sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls(NULL, sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls("all", sel, err) == MT_OK && count(sel) == TR_NCALLS);
    CHECK(tr_parse_calls("collectives", sel, err) == MT_OK && sel[TR_allreduce] && sel[TR_ibarrier] && !sel[TR_send]);
    CHECK(tr_parse_calls("p2p", sel, err) == MT_OK && sel[TR_send] && sel[TR_waitall] && !sel[TR_barrier]);
    CHECK(tr_parse_calls("allreduce,MPI_Send,mpi_IRECV", sel, err) == MT_OK && count(sel) == 3);
    CHECK(sel[TR_allreduce] && sel[TR_send] && sel[TR_irecv]);
    CHECK(tr_parse_calls("allreduce,bogus", sel, err) == MT_EINVAL);
    CHECK(strstr(err, "unknown MPI call 'bogus'") != NULL && strstr(err, "allowed: default") != NULL);
    CHECK(strstr(err, "allreduce") != NULL && strstr(err, "testsome") != NULL);
    CHECK(tr_parse_calls("allreduce,,send", sel, err) == MT_EINVAL);
    CHECK(tr_parse_calls("irecv_done", sel, err) == MT_EINVAL);   /* not a call one can select */
    TEST_DONE();
}
