/* mpitempo: the measurement parameters of params/params.def as a C table,
 * their values after option parsing, and typed accessors. Pure (no MPI).
 *
 * Ids (MTP_<name>, one per name) come from mt_param_ids.h, which CMake
 * generates from params.def; the rows (one per (name, apps) line) come from
 * the X-macro itself. A value is looked up by id for the app being parsed. */
#ifndef MT_PARAMS_H
#define MT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "mt_param_ids.h" /* generated: enum { MTP_timer, MTP_ops, ..., MTP_COUNT } */

enum { MT_APP_BENCH = 1, MT_APP_CLOCKS = 2, MT_APP_PINGPONG = 4, MT_APP_LOGP = 8, MT_APP_TREE = 16 };

/* INT_AUTO: an INT that also takes the word "auto" (mt_p_int then returns MT_P_AUTO) */
/* PERCENT: a percentage such as 1% or 0.5% (min/max in %), or off; read as a fraction (off: 0) */
typedef enum { MT_T_INT, MT_T_FLOAT, MT_T_STR, MT_T_BOOL, MT_T_DURATION, MT_T_SIZE, MT_T_LIST, MT_T_INT_AUTO, MT_T_PERCENT } mt_ptype_t;
#define MT_P_AUTO (-1LL)

typedef struct mt_param_def {
    int id;            /* MTP_<name> */
    const char *name;  /* C identifier and campaign key; the flag is --name with '-' for '_' */
    mt_ptype_t type;
    const char *def;   /* default as typed by a user; "" = unset */
    const char *unit;  /* "s", "B", "ppm" or "" */
    double min, max;   /* INT, FLOAT, DURATION (s), SIZE (B); 0, 0 otherwise */
    unsigned apps;     /* MT_APP_* bits */
    const char *help;
} mt_param_def_t;

extern const mt_param_def_t mt_param_defs[];
extern const int mt_nparam_defs;

/* "INT", "FLOAT", ... as in params.def */
const char *mt_ptype_name(mt_ptype_t t);
/* the row of param id for app, NULL when the app does not have it */
const mt_param_def_t *mt_param_def(int id, unsigned app);
/* "--cache-size" for cache_size */
void mt_param_flag(const mt_param_def_t *d, char *buf, size_t len);

typedef struct mt_pval {
    const mt_param_def_t *def; /* NULL: not a parameter of this app */
    int set;                   /* has a value (given, or a non-empty default) */
    int given;                 /* given on the command line */
    const char *raw;           /* the text of the value (NULL when unset) */
    long long i;               /* INT, SIZE (bytes), BOOL */
    double d;                  /* FLOAT, DURATION (s) */
} mt_pval_t;

typedef struct mt_params {
    unsigned app;
    mt_pval_t v[MTP_COUNT];
} mt_params_t;

/* Every parameter of app at its default. */
void mt_params_init(mt_params_t *p, unsigned app);
/* Set id from a command-line value (NULL for BOOL). Checks the syntax of the
 * type, and the range of INT (mt_parse_int's message); the bounds of FLOAT,
 * DURATION and SIZE are checked by mt_params_check_bounds, after the owners
 * of the parameters (schemes, ops) had their say in their own words. */
int mt_params_set(mt_params_t *p, int id, const char *value, char *err);
/* The [min, max] of every FLOAT, DURATION and SIZE value that is set. */
int mt_params_check_bounds(const mt_params_t *p, char *err);

/* Typed accessors; calling one with the wrong type or for a parameter the app
 * does not have is a programming error (abort). */
int mt_p_set(const mt_params_t *p, int id);
int mt_p_given(const mt_params_t *p, int id);
long long mt_p_int(const mt_params_t *p, int id);   /* INT, INT_AUTO (MT_P_AUTO for "auto") */
double mt_p_num(const mt_params_t *p, int id);   /* FLOAT, DURATION (s) */
int64_t mt_p_size(const mt_params_t *p, int id);
int mt_p_bool(const mt_params_t *p, int id);
const char *mt_p_str(const mt_params_t *p, int id); /* STR, LIST: NULL when unset */
/* the text of any value as given or defaulted (NULL when unset), for messages */
const char *mt_p_raw(const mt_params_t *p, int id);

/* --list: the "params" array of app: name, type, default (or null), unit, min, max, help */
void mt_params_write_list(mt_json_t *j, unsigned app);
/* --check-args: {name: value} of every parameter, normalised (numbers in
 * seconds and bytes, booleans, null when unset) */
void mt_params_write_values(mt_json_t *j, const mt_params_t *p);

#endif
