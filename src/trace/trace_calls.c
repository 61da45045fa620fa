/* mpitempo: the table of MPI calls the tracer can intercept and the parser of
 * a selection ("default", "collectives", "allreduce,MPI_Send", ...). Pure: no
 * MPI calls (tests/c/test_trace_calls.c). */
#include "trace/trace.h"

#include "base/mt_common.h"

#include <string.h>
#include <strings.h>

const tr_call_info_t tr_calls[TR_NCALLS + 1] = {
#define TR_CALL(id, name, group, kind) {#id, name, group, kind},
#include "trace_calls.def"
#undef TR_CALL
    {"irecv_done", "MPI_Irecv (completed)", TR_G_P2P, TR_K_MSGRECV},
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
        if (!strcasecmp(it, "default") || !strcasecmp(it, "all")) group = TR_G_COLL | TR_G_P2P | TR_G_WAIT;
        else if (!strcasecmp(it, "collectives")) group = TR_G_COLL;
        else if (!strcasecmp(it, "p2p")) group = TR_G_P2P | TR_G_WAIT;
        if (group) {
            for (int c = 0; c < TR_NCALLS; c++)
                if (tr_calls[c].group & group) sel[c] = 1;
            continue;
        }
        int found = 0;
        for (int c = 0; c < TR_NCALLS; c++)
            if (!strcasecmp(it, tr_calls[c].id)) sel[c] = found = 1;
        if (!found) {
            char names[2048] = "";
            for (int c = 0; c < TR_NCALLS; c++) mt_names_add(names, sizeof names, tr_calls[c].id);
            rc = mt_fail(err, MT_EINVAL,
                         "unknown MPI call '%s' in MPITEMPO_TRACE_CALLS (allowed: default, all, collectives, p2p, %s)",
                         items[i], names);
        }
    }
    mt_free_list(items, n);
    return rc;
}

