/* mpitempo: the tracer's plain output files, written by rank 0 one rank at a
 * time: events.csv (every event, raw and global times) and perfetto.json
 * (Chrome trace-event format: opens in ui.perfetto.dev and chrome://tracing).
 * Written under temporary names and renamed by tr_writer_close. */
#include "trace/trace.h"

#include "base/mt_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tr_writer {
    char dir[4096];
    FILE *csv, *pf;
    int first_pf;
    int nranks;
};

const char *tr_kind_name(int kind)
{
    switch (kind) {
    case TR_K_A2A: return "coll_all2all";
    case TR_K_12A: return "coll_one2all";
    case TR_K_A21: return "coll_all2one";
    case TR_K_COLL: return "coll";
    case TR_K_SEND: return "send";
    case TR_K_RECV: return "recv";
    case TR_K_SENDRECV: return "sendrecv";
    case TR_K_ISEND: return "isend";
    case TR_K_IRECV: return "irecv";
    case TR_K_WAIT: return "wait";
    case TR_K_MSGRECV: return "irecv_done";
    case TR_K_ICOLL: return "icoll";
    case TR_K_PROBE: return "probe";
    case TR_K_INIT: return "init";
    case TR_K_START: return "start";
    case TR_K_REQ: return "request";
    case TR_K_COMMC: return "comm";
    case TR_K_SENDDONE: return "isend_done";
    case TR_K_COLLDONE: return "icoll_done";
    case TR_K_STARTSEND: return "start_send";
    case TR_K_STARTRECV: return "start_recv";
    case TR_K_REGION: return "region";
    }
    return "?";
}

void tr_csv_header(FILE *f)
{
    fputs("rank,seq,call,kind,t_enter_raw_s,t_exit_raw_s,t_enter_s,t_exit_s,bytes,recv_bytes,peer,peer2,root,tag,recv_tag,comm,"
          "req,of,flags,site\n", f);
}

/* a user region's name (rank 0, after the merge), or its rank-local index in partial files */
static const char *tr_region_name(const tr_out_ev_t *e)
{
    static char buf[32];
    if (tr_region_gnames && e->tag >= 0 && e->tag < tr_region_ngnames) return tr_region_gnames[e->tag];
    snprintf(buf, sizeof buf, "region-%d", e->tag);
    return buf;
}

void tr_csv_rows(FILE *f, const tr_out_ev_t *ev, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const tr_out_ev_t *e = &ev[i];
        const tr_call_info_t *c = &tr_calls[e->call];
        fprintf(f, "%d,%lld,%s,%s,%.9f,%.9f,%.9f,%.9f,%lld,%lld,%d,%d,%d,%d,%d,%llx,%u,%s,%d,%llx\n", e->rank, (long long)e->seq,
                c->id, tr_kind_name(c->kind), e->t0_raw, e->t1_raw, e->t0, e->t1, (long long)e->bytes, (long long)e->rbytes, e->peer,
                e->peer2, e->root, e->tag, e->rtag, (unsigned long long)e->comm, e->req,
                e->call == TR_user_region ? tr_region_name(e) : e->orig >= 0 && e->orig < TR_NCALLS ? tr_calls[e->orig].id : "",
                e->flags, (unsigned long long)e->site);
    }
}

static FILE *tr_open_tmp(const char *dir, const char *name, char *err)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/%s.tmp", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) mt_fail(err, MT_EIO, "cannot write '%s': %s", p, strerror(errno));
    return f;
}

tr_writer_t *tr_writer_open(const char *dir, int nranks, char *err)
{
    tr_writer_t *w = calloc(1, sizeof *w);
    if (!w) {
        mt_fail(err, MT_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->nranks = nranks;
    w->csv = tr_open_tmp(dir, "events.csv", err);
    w->pf = w->csv ? tr_open_tmp(dir, "perfetto.json", err) : NULL;
    if (!w->csv || !w->pf) {
        if (w->csv) fclose(w->csv);
        free(w);
        return NULL;
    }
    tr_csv_header(w->csv);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", w->pf);
    fprintf(w->pf, "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"global clock\"}},\n"
                   "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":0}},\n"
                   "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"raw local clocks\"}},\n"
                   "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":1}}");
    return w;
}

static void tr_pf_event(FILE *f, const tr_out_ev_t *e, int pid, double t0, double t1)
{
    const tr_call_info_t *c = &tr_calls[e->call];
    double dur = (t1 - t0) * 1e6;
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{\"bytes\":%lld",
            tr_kind_name(c->kind), c->name, pid, e->rank, t0 * 1e6, dur < 0 ? 0 : dur, (long long)e->bytes);
    if (e->rbytes) fprintf(f, ",\"recv_bytes\":%lld", (long long)e->rbytes);
    if (e->peer != -1) fprintf(f, ",\"peer\":%d", e->peer);
    if (e->peer2 != -1) fprintf(f, ",\"source\":%d", e->peer2);
    if (e->root >= 0) fprintf(f, ",\"root\":%d", e->root);
    if (e->tag >= 0) fprintf(f, ",\"tag\":%d", e->tag);
    if (e->rtag >= 0) fprintf(f, ",\"recv_tag\":%d", e->rtag);
    if (e->comm) fprintf(f, ",\"comm\":\"%llx\"", (unsigned long long)e->comm);
    if (e->req) fprintf(f, ",\"req\":%u", e->req);
    if (e->orig >= 0 && e->orig < TR_NCALLS) fprintf(f, ",\"of\":\"%s\"", tr_calls[e->orig].id);
    fprintf(f, ",\"seq\":%lld}}", (long long)e->seq);
}

int tr_writer_rank(tr_writer_t *w, int rank, const char *host, const tr_out_ev_t *ev, int64_t n, char *err)
{
    tr_csv_rows(w->csv, ev, n);
    for (int pid = 0; pid < 2; pid++) {
        fprintf(w->pf, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"rank %d (%s)\"}}",
                pid, rank, rank, host);
        fprintf(w->pf, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
                pid, rank, rank);
    }
    for (int64_t i = 0; i < n; i++) {
        tr_pf_event(w->pf, &ev[i], 0, ev[i].t0, ev[i].t1);
        tr_pf_event(w->pf, &ev[i], 1, ev[i].t0_raw, ev[i].t1_raw);
    }
    if (ferror(w->csv) || ferror(w->pf)) return mt_fail(err, MT_EIO, "write error in '%s' (disk full?)", w->dir);
    return MT_OK;
}

static int tr_finish_file(const char *dir, const char *name, FILE *f, int ok, char *err)
{
    char tmp[4300], path[4300];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int bad = fclose(f) != 0 || !ok;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return mt_fail(err, MT_EIO, "cannot write '%s'", path);
    }
    return MT_OK;
}

int tr_writer_close(tr_writer_t *w, FILE *meta_extra, char *err)
{
    (void)meta_extra;
    fputs("\n],\"otherData\":{\"tool\":\"mpitempo-trace\",\"clock\":\"pid 0: global clock (s since the sync epoch); "
          "pid 1: raw local clocks\"}}\n", w->pf);
    int rc = tr_finish_file(w->dir, "events.csv", w->csv, !ferror(w->csv), err);
    int rc2 = tr_finish_file(w->dir, "perfetto.json", w->pf, !ferror(w->pf), rc == MT_OK ? err : (char[MT_ERRLEN]){0});
    free(w);
    return rc != MT_OK ? rc : rc2;
}
