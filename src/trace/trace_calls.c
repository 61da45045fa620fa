/* mpitempo: the table of MPI calls the tracer can intercept and the parser of
 * a selection ("default", "collectives", "allreduce,MPI_Send", ...). Pure: no
 * MPI calls (tests/c/test_trace_calls.c). */
#include "trace/trace.h"

#include "base/mt_common.h"

#include <string.h>
#include <strings.h>

const tr_call_info_t tr_calls[TR_NALL] = {
#define TR_CALL(id, name, group, kind, op) {#id, name, group, kind, TR_OP_##op},
#include "trace_calls.def"
#undef TR_CALL
    {"irecv_done", "MPI receive request completed", TR_G_P2P, TR_K_MSGRECV, TR_OP_NONE},
    {"isend_done", "MPI send request completed", TR_G_P2P, TR_K_SENDDONE, TR_OP_NONE},
    {"icoll_done", "MPI non-blocking collective completed", TR_G_COLL, TR_K_COLLDONE, TR_OP_NONE},
    {"start_send", "MPI persistent send started", TR_G_P2P, TR_K_STARTSEND, TR_OP_NONE},
    {"start_recv", "MPI persistent receive started", TR_G_P2P, TR_K_STARTRECV, TR_OP_NONE},
    {"init", "MPI_Init", 0, TR_K_REGION, TR_OP_NONE},
    {"finalize", "MPI_Finalize", 0, TR_K_REGION, TR_OP_NONE},
    {"user", "user region", 0, TR_K_REGION, TR_OP_NONE},
};

/* ---- call selection ---- */
int tr_parse_calls(const char *s, unsigned char *sel, char *err)
{
    memset(sel, 0, TR_NCALLS);
    char **items = NULL;
    int n = 0;
    if (!s || !*s) s = "default";
    if (mt_split_list(s, &items, &n, err) != MT_OK) return MT_EINVAL;
    int rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        const char *it = items[i];
        if (strncasecmp(it, "MPI_", 4) == 0) it += 4;
        int group = 0;
        if (!strcasecmp(it, "default") || !strcasecmp(it, "all")) group = TR_G_COLL | TR_G_P2P | TR_G_WAIT | TR_G_COMM;
        else if (!strcasecmp(it, "collectives")) group = TR_G_COLL;
        else if (!strcasecmp(it, "p2p")) group = TR_G_P2P | TR_G_WAIT;
        else if (!strcasecmp(it, "comm")) group = TR_G_COMM;
        if (group) {
            for (int c = 0; c < TR_NCALLS; c++)
                if (tr_calls[c].group & group) sel[c] = 1;
            continue;
        }
        int found = 0;
        for (int c = 0; c < TR_NCALLS; c++)
            if (!strcasecmp(it, tr_calls[c].id)) sel[c] = found = 1;
        if (!found) {
            char names[4096] = "";
            for (int c = 0; c < TR_NCALLS; c++) mt_names_add(names, sizeof names, tr_calls[c].id);
            rc = mt_fail(err, MT_EINVAL,
                         "unknown MPI call '%s' in MPITEMPO_TRACE_CALLS (allowed: default, all, collectives, p2p, comm, %s)",
                         items[i], names);
        }
    }
    mt_free_list(items, n);
    return rc;
}

