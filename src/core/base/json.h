/* mpitempo: a small streaming JSON writer (pretty-printed, escaped). */
#ifndef MT_JSON_H
#define MT_JSON_H

#include <stdint.h>
#include <stdio.h>

#define MT_JSON_MAXDEPTH 32

typedef struct mt_json {
    FILE *f;
    int depth;
    int count[MT_JSON_MAXDEPTH]; /* items written at each level */
    int after_key;
} mt_json_t;

void mt_json_init(mt_json_t *j, FILE *f);
void mt_json_obj_begin(mt_json_t *j);
void mt_json_obj_end(mt_json_t *j);
void mt_json_arr_begin(mt_json_t *j);
void mt_json_arr_end(mt_json_t *j);
void mt_json_key(mt_json_t *j, const char *k);
void mt_json_str(mt_json_t *j, const char *s);
void mt_json_int(mt_json_t *j, int64_t v);
void mt_json_num(mt_json_t *j, double v); /* NaN/inf become null */
void mt_json_bool(mt_json_t *j, int v);
void mt_json_null(mt_json_t *j);
/* Insert already-serialised JSON text verbatim as a value. */
void mt_json_raw(mt_json_t *j, const char *text);
/* key + value shorthands */
void mt_json_kstr(mt_json_t *j, const char *k, const char *s);
void mt_json_kint(mt_json_t *j, const char *k, int64_t v);
void mt_json_knum(mt_json_t *j, const char *k, double v);
void mt_json_kbool(mt_json_t *j, const char *k, int v);
/* escape s into out (size len), without quotes; returns out */
char *mt_json_escape(const char *s, char *out, size_t len);

#endif
