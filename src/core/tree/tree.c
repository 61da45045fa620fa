/* mpitempo: allreduce spanning-tree shapes and checks (tree.h). */
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"

void mt_tree_shape_names(char *buf, size_t len)
{
    snprintf(buf, len, "flat, binomial, kary:K, fanout:F1/F2/.., parents:P0/P1/.., node:INTER:INTRA, mpi");
}

static int parse_int_item(const char *s, const char *spec, const char *what, long lo, long hi, int *out, char *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE)
        return mt_fail(err, MT_EINVAL, "invalid --tree '%s': %s '%s' is not an integer", spec, what, s);
    if (v < lo || v > hi)
        return mt_fail(err, MT_EINVAL, "invalid --tree '%s': %s %ld is out of range (allowed: %ld..%ld)", spec, what,
                       v, lo, hi);
    *out = (int)v;
    return MT_OK;
}

/* "flat", "binomial", "kK" (node-aware levels) */
static int parse_level(const char *s, const char *spec, int *shape, int *k, char *err)
{
    if (!strcmp(s, "flat")) *shape = MT_SHAPE_FLAT;
    else if (!strcmp(s, "binomial")) *shape = MT_SHAPE_BINOMIAL;
    else if (s[0] == 'k' && s[1]) {
        *shape = MT_SHAPE_KARY;
        return parse_int_item(s + 1, spec, "fan-out", 1, 1 << 20, k, err);
    } else
        return mt_fail(err, MT_EINVAL, "invalid --tree '%s': level shape '%s' (allowed: flat, binomial, kK e.g. k2)",
                       spec, s);
    return MT_OK;
}

/* items of "a/b/c" as ints; lo: smallest allowed */
static int parse_slash_ints(const char *list, const char *spec, const char *what, long lo, int **out, int *n,
                            char *err)
{
    int cap = 1;
    for (const char *c = list; *c; c++) cap += *c == '/';
    int *v = malloc(sizeof(int) * (size_t)cap);
    char *dup = strdup(list);
    if (!v || !dup) {
        free(v);
        free(dup);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    int k = 0, rc = MT_OK;
    char *save = NULL;
    if (!*list) rc = mt_fail(err, MT_EINVAL, "invalid --tree '%s': empty %s list", spec, what);
    for (char *tok = strtok_r(dup, "/", &save); tok && rc == MT_OK; tok = strtok_r(NULL, "/", &save))
        rc = parse_int_item(tok, spec, what, lo, 1L << 30, &v[k++], err);
    free(dup);
    if (rc != MT_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return MT_OK;
}

int mt_tree_spec_parse(const char *s, mt_tree_spec_t *t, char *err)
{
    memset(t, 0, sizeof *t);
    const char *colon = strchr(s, ':');
    size_t hl = colon ? (size_t)(colon - s) : strlen(s);
    const char *arg = colon ? colon + 1 : NULL;
#define HEAD(x) (hl == strlen(x) && !strncmp(s, x, hl))
    if (HEAD("flat") || HEAD("binomial") || HEAD("mpi")) {
        if (arg) return mt_fail(err, MT_EINVAL, "invalid --tree '%s': '%.*s' takes no argument", s, (int)hl, s);
        t->shape = HEAD("flat") ? MT_SHAPE_FLAT : HEAD("binomial") ? MT_SHAPE_BINOMIAL : MT_SHAPE_MPI;
        return MT_OK;
    }
    if (HEAD("kary")) {
        t->shape = MT_SHAPE_KARY;
        if (!arg) return mt_fail(err, MT_EINVAL, "invalid --tree '%s': kary needs a fan-out, e.g. kary:2", s);
        return parse_int_item(arg, s, "fan-out", 1, 1 << 20, &t->k, err);
    }
    if (HEAD("fanout")) {
        t->shape = MT_SHAPE_FANOUT;
        if (!arg) return mt_fail(err, MT_EINVAL, "invalid --tree '%s': fanout needs per-level fan-outs, e.g. fanout:2/4", s);
        int *v, n, rc = parse_slash_ints(arg, s, "fan-out", 1, &v, &n, err);
        if (rc != MT_OK) return rc;
        if (n > MT_TREE_MAXFAN) {
            free(v);
            return mt_fail(err, MT_EINVAL, "invalid --tree '%s': at most %d levels", s, MT_TREE_MAXFAN);
        }
        memcpy(t->fan, v, sizeof(int) * (size_t)n);
        t->nfan = n;
        free(v);
        return MT_OK;
    }
    if (HEAD("parents")) {
        t->shape = MT_SHAPE_PARENTS;
        if (!arg) return mt_fail(err, MT_EINVAL, "invalid --tree '%s': parents needs a list, e.g. parents:-1/0/0/1", s);
        return parse_slash_ints(arg, s, "parent", -1, &t->parents, &t->nparents, err);
    }
    if (HEAD("node")) {
        t->shape = MT_SHAPE_NODE;
        t->inter = MT_SHAPE_BINOMIAL;
        t->intra = MT_SHAPE_FLAT;
        if (!arg) return MT_OK;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", arg);
        char *second = strchr(buf, ':');
        if (second) *second++ = 0;
        int rc = parse_level(buf, s, &t->inter, &t->inter_k, err);
        if (rc == MT_OK && second) rc = parse_level(second, s, &t->intra, &t->intra_k, err);
        return rc;
    }
#undef HEAD
    char names[256];
    mt_tree_shape_names(names, sizeof names);
    return mt_fail(err, MT_EINVAL, "unknown --tree '%s' (allowed: %s)", s, names);
}

void mt_tree_spec_free(mt_tree_spec_t *t)
{
    free(t->parents);
    t->parents = NULL;
}

/* shape over n nodes numbered 0..n-1, root 0 */
static void simple_shape(int shape, int k, int n, int *parent)
{
    for (int i = 0; i < n; i++) {
        if (i == 0) parent[i] = -1;
        else if (shape == MT_SHAPE_FLAT) parent[i] = 0;
        else if (shape == MT_SHAPE_BINOMIAL) parent[i] = i & (i - 1); /* clear the lowest set bit */
        else parent[i] = (i - 1) / k;                                  /* k-ary */
    }
}

int mt_tree_build_shape(const mt_tree_spec_t *t, int n, int *parent, char *err)
{
    switch (t->shape) {
    case MT_SHAPE_FLAT:
    case MT_SHAPE_BINOMIAL:
    case MT_SHAPE_KARY:
        simple_shape(t->shape, t->k, n, parent);
        return MT_OK;
    case MT_SHAPE_FANOUT: {
        /* breadth first: the nodes of level l each get fan[l] children (the last fan-out repeats) */
        int next = 1, lo = 0, hi = 1, level = 0;
        parent[0] = -1;
        while (next < n) {
            int f = t->fan[level < t->nfan ? level : t->nfan - 1];
            for (int p = lo; p < hi && next < n; p++)
                for (int c = 0; c < f && next < n; c++) parent[next++] = p;
            lo = hi;
            hi = next;
            level++;
        }
        return MT_OK;
    }
    case MT_SHAPE_PARENTS:
        if (t->nparents != n)
            return mt_fail(err, MT_EINVAL, "invalid --tree: the parent list has %d nodes but the job has %d ranks",
                           t->nparents, n);
        memcpy(parent, t->parents, sizeof(int) * (size_t)n);
        return mt_tree_check(parent, n, err);
    default:
        return mt_fail(err, MT_EINVAL, "internal: shape %d has no node tree", t->shape);
    }
}

int mt_tree_build_node(const mt_tree_spec_t *t, int n, const int *host, int *parent, char *err)
{
    int nh = 0;
    for (int r = 0; r < n; r++)
        if (host[r] + 1 > nh) nh = host[r] + 1;
    int *leader = malloc(sizeof(int) * (size_t)nh), *members = malloc(sizeof(int) * (size_t)n);
    int *sub = malloc(sizeof(int) * (size_t)(n > nh ? n : nh));
    if (!leader || !members || !sub) {
        free(leader);
        free(members);
        free(sub);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int h = 0; h < nh; h++) leader[h] = -1;
    for (int r = 0; r < n; r++)
        if (leader[host[r]] < 0) leader[host[r]] = r;
    /* hosts that appear: compact list in host order */
    int nl = 0;
    for (int h = 0; h < nh; h++)
        if (leader[h] >= 0) leader[nl++] = leader[h];
    simple_shape(t->inter, t->inter_k, nl, sub);
    for (int i = 0; i < nl; i++) parent[leader[i]] = sub[i] < 0 ? -1 : leader[sub[i]];
    for (int i = 0; i < nl; i++) {
        int h = host[leader[i]], m = 0;
        for (int r = 0; r < n; r++)
            if (host[r] == h) members[m++] = r; /* ascending: members[0] is the leader */
        simple_shape(t->intra, t->intra_k, m, sub);
        for (int j = 1; j < m; j++) parent[members[j]] = members[sub[j]];
    }
    free(leader);
    free(members);
    free(sub);
    return mt_tree_check(parent, n, err);
}

int mt_tree_map(const int *parent, const int *map, int n, int *parent_rank, char *err)
{
    if (!map) {
        memcpy(parent_rank, parent, sizeof(int) * (size_t)n);
        return MT_OK;
    }
    int *seen = calloc((size_t)n, sizeof(int));
    if (!seen) return mt_fail(err, MT_ENOMEM, "out of memory");
    int rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        if (map[i] < 0 || map[i] >= n)
            rc = mt_fail(err, MT_EINVAL, "invalid --tree-map: node %d is mapped to rank %d, the job has ranks 0..%d",
                         i, map[i], n - 1);
        else if (seen[map[i]]++)
            rc = mt_fail(err, MT_EINVAL, "invalid --tree-map: node %d is mapped to rank %d, which already runs "
                         "another node", i, map[i]);
    }
    for (int i = 0; i < n && rc == MT_OK; i++) parent_rank[map[i]] = parent[i] < 0 ? -1 : map[parent[i]];
    free(seen);
    return rc;
}

int mt_tree_check(const int *parent, int n, char *err)
{
    int root = -1;
    for (int i = 0; i < n; i++) {
        if (parent[i] < -1 || parent[i] >= n)
            return mt_fail(err, MT_EINVAL, "invalid tree: node %d has parent %d, which is not a node (0..%d)", i,
                           parent[i], n - 1);
        if (parent[i] == i) return mt_fail(err, MT_EINVAL, "invalid tree: node %d is its own parent", i);
        if (parent[i] == -1) {
            if (root >= 0)
                return mt_fail(err, MT_EINVAL, "invalid tree: nodes %d and %d both have no parent (one root allowed)",
                               root, i);
            root = i;
        }
    }
    if (root < 0) return mt_fail(err, MT_EINVAL, "invalid tree: no root (every node has a parent: a cycle)");
    /* every node reaches the root in fewer than n steps */
    for (int i = 0; i < n; i++) {
        int v = i, steps = 0;
        while (v != root && steps <= n) {
            v = parent[v];
            steps++;
        }
        if (v != root) return mt_fail(err, MT_EINVAL, "invalid tree: node %d is on a cycle (it never reaches the root %d)",
                                      i, root);
    }
    return MT_OK;
}

void mt_tree_depths(const int *parent, int n, int *depth)
{
    for (int i = 0; i < n; i++) {
        int d = 0;
        for (int v = i; parent[v] >= 0 && d <= n; v = parent[v]) d++;
        depth[i] = d;
    }
}

int mt_tree_kids(const int *parent, int n, mt_tree_kids_t *k)
{
    k->first = calloc((size_t)n + 1, sizeof(int));
    k->child = malloc(sizeof(int) * (size_t)(n > 1 ? n : 1));
    if (!k->first || !k->child) {
        mt_tree_kids_free(k);
        return MT_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        if (parent[i] >= 0) k->first[parent[i] + 1]++;
    for (int i = 0; i < n; i++) k->first[i + 1] += k->first[i];
    int *fill = calloc((size_t)n, sizeof(int));
    if (!fill) {
        mt_tree_kids_free(k);
        return MT_ENOMEM;
    }
    for (int i = 0; i < n; i++) /* ascending child ids */
        if (parent[i] >= 0) k->child[k->first[parent[i]] + fill[parent[i]]++] = i;
    free(fill);
    return MT_OK;
}

void mt_tree_kids_free(mt_tree_kids_t *k)
{
    free(k->first);
    free(k->child);
    k->first = k->child = NULL;
}
