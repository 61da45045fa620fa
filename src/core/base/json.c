/* mpitempo: streaming JSON writer. */
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mt_json_init(mt_json_t *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->count[0] = 0;
    j->after_key = 0;
}

static void indent(mt_json_t *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* before any value: a comma and newline unless it follows a key */
static void pre_value(mt_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->count[j->depth]++) fputc(',', j->f);
        indent(j);
    }
}

static void put_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

char *mt_json_escape(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && o + 7 < len; p++) {
        if (*p == '"' || *p == '\\') { out[o++] = '\\'; out[o++] = (char)*p; }
        else if (*p == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else if (*p == '\t') { out[o++] = '\\'; out[o++] = 't'; }
        else if (*p < 0x20) o += (size_t)snprintf(out + o, len - o, "\\u%04x", *p);
        else out[o++] = (char)*p;
    }
    out[o] = '\0';
    return out;
}

static void begin(mt_json_t *j, char c)
{
    pre_value(j);
    fputc(c, j->f);
    j->depth++;
    j->count[j->depth] = 0;
}

static void end(mt_json_t *j, char c)
{
    int had = j->count[j->depth];
    j->depth--;
    if (had) indent(j);
    fputc(c, j->f);
    if (j->depth == 0) fputc('\n', j->f);
}

void mt_json_obj_begin(mt_json_t *j) { begin(j, '{'); }
void mt_json_obj_end(mt_json_t *j) { end(j, '}'); }
void mt_json_arr_begin(mt_json_t *j) { begin(j, '['); }
void mt_json_arr_end(mt_json_t *j) { end(j, ']'); }

void mt_json_key(mt_json_t *j, const char *k)
{
    pre_value(j);
    put_escaped(j->f, k);
    fputs(": ", j->f);
    j->after_key = 1;
}

void mt_json_str(mt_json_t *j, const char *s) { pre_value(j); put_escaped(j->f, s); }
void mt_json_int(mt_json_t *j, int64_t v) { pre_value(j); fprintf(j->f, "%lld", (long long)v); }
void mt_json_num(mt_json_t *j, double v)
{
    pre_value(j);
    if (!isfinite(v)) {
        fputs("null", j->f);
        return;
    }
    /* the shortest text that reads back as the same double */
    char b[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    fputs(b, j->f);
}
void mt_json_bool(mt_json_t *j, int v) { pre_value(j); fputs(v ? "true" : "false", j->f); }
void mt_json_null(mt_json_t *j) { pre_value(j); fputs("null", j->f); }
void mt_json_raw(mt_json_t *j, const char *text) { pre_value(j); fputs(text, j->f); }
void mt_json_kstr(mt_json_t *j, const char *k, const char *s) { mt_json_key(j, k); mt_json_str(j, s); }
void mt_json_kint(mt_json_t *j, const char *k, int64_t v) { mt_json_key(j, k); mt_json_int(j, v); }
void mt_json_knum(mt_json_t *j, const char *k, double v) { mt_json_key(j, k); mt_json_num(j, v); }
void mt_json_kbool(mt_json_t *j, const char *k, int v) { mt_json_key(j, k); mt_json_bool(j, v); }
