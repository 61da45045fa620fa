/* mpitempo: allreduce spanning trees (Bongo, Anshus and Bjorndalen 2004). A
 * tree is a parent array over the ranks of a job: parent[r] is the rank r sends
 * its partial result to (-1 for the root). Every rank is a tree node that
 * combines its own contribution with its children's (the paper's "gred"
 * wrapper) and passes the result up; the result comes back down the same
 * paths. Shapes (k-ary, binomial, flat, per-level fan-out, explicit parents,
 * node-aware) are built over tree nodes 0..n-1, then mapped to ranks.
 * Pure (no MPI): unit-tested in tests/c/test_tree.c. */
#ifndef MT_TREE_H
#define MT_TREE_H

#include <stddef.h>

#define MT_TREE_MAXFAN 64 /* fan-out list entries */

enum { MT_SHAPE_FLAT, MT_SHAPE_BINOMIAL, MT_SHAPE_KARY, MT_SHAPE_FANOUT, MT_SHAPE_PARENTS, MT_SHAPE_NODE,
       MT_SHAPE_MPI };

/* A parsed --tree spec. */
typedef struct mt_tree_spec {
    int shape;
    int k;                      /* kary */
    int fan[MT_TREE_MAXFAN];    /* fanout: per level, the last one repeats */
    int nfan;
    int *parents;               /* parents: node -> parent node (-1 root), nparents entries */
    int nparents;
    int inter, inter_k;         /* node: shape over the hosts (flat, binomial, kary) */
    int intra, intra_k;         /* node: shape inside a host */
} mt_tree_spec_t;

/* Parse "flat", "binomial", "kary:K", "fanout:F1/F2/..", "parents:P0/P1/..",
 * "node[:INTER[:INTRA]]" (INTER, INTRA: flat, binomial or kK, default
 * binomial and flat) or "mpi" (the library's MPI_Allreduce). */
int mt_tree_spec_parse(const char *s, mt_tree_spec_t *t, char *err);
void mt_tree_spec_free(mt_tree_spec_t *t);
/* "flat, binomial, kary:K, fanout:F1/F2, parents:P0/P1/.., node:INTER:INTRA, mpi" */
void mt_tree_shape_names(char *buf, size_t len);

/* Build the shape over n nodes into parent[n] (node ids; the root is node 0
 * except for an explicit parent list). Not for node and mpi. */
int mt_tree_build_shape(const mt_tree_spec_t *t, int n, int *parent, char *err);
/* Node-aware: host[r] is the host index of rank r (0..nhosts-1). The lowest
 * rank of each host leads it; the leaders form the inter shape (ordered by
 * host index), each host's ranks the intra shape under their leader. */
int mt_tree_build_node(const mt_tree_spec_t *t, int n, const int *host, int *parent, char *err);
/* Map a node tree to ranks: rank map[i] runs node i (map a permutation of
 * 0..n-1; NULL: identity). parent_rank[map[i]] = map[parent[i]]. */
int mt_tree_map(const int *parent, const int *map, int n, int *parent_rank, char *err);
/* A valid tree: one root, parents in range, no node its own parent, every
 * node reaches the root (no cycle). The message names the offending node. */
int mt_tree_check(const int *parent, int n, char *err);
/* Depth of every node (root 0) */
void mt_tree_depths(const int *parent, int n, int *depth);

/* Children of every node in ascending order: CSR (first[n+1], child[n-1]). */
typedef struct mt_tree_kids {
    int *first, *child;
} mt_tree_kids_t;
int mt_tree_kids(const int *parent, int n, mt_tree_kids_t *k);
void mt_tree_kids_free(mt_tree_kids_t *k);

#endif
