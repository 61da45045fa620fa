/* Unit tests of allreduce tree shapes, mappings and checks (src/core/tree/tree.c). */
#include <stdlib.h>

#include "base/mt_common.h"
#include "mt_test.h"
#include "tree/tree.h"

static int same(const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int build(const char *spec, int n, int *parent, char *err)
{
    mt_tree_spec_t t;
    int rc = mt_tree_spec_parse(spec, &t, err);
    if (rc == MT_OK) rc = mt_tree_build_shape(&t, n, parent, err);
    mt_tree_spec_free(&t);
    return rc;
}

int main(void)
{
    char err[MT_ERRLEN];
    int p[16];

    /* shapes */
    CHECK(build("binomial", 8, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 2, 0, 4, 4, 6}, 8));
    CHECK(build("flat", 4, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 0}, 4));
    CHECK(build("kary:2", 7, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 1, 1, 2, 2}, 7));
    CHECK(build("kary:1", 3, p, err) == MT_OK); /* a chain */
    CHECK(same(p, (int[]){-1, 0, 1}, 3));
    /* per level: the root has 2 children, each of them 3 (the last fan-out repeats) */
    CHECK(build("fanout:2/3", 9, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 1, 1, 1, 2, 2, 2}, 9));
    CHECK(build("fanout:1/2", 6, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 1, 1, 2, 2}, 6));
    CHECK(build("parents:1/-1/1/2", 4, p, err) == MT_OK);
    CHECK(same(p, (int[]){1, -1, 1, 2}, 4));
    for (int n = 1; n <= 16; n++) { /* every preset is a tree at every size */
        const char *specs[] = {"binomial", "flat", "kary:3", "fanout:3/2", "kary:1"};
        for (int s = 0; s < 5; s++) {
            CHECK(build(specs[s], n, p, err) == MT_OK);
            CHECK(mt_tree_check(p, n, err) == MT_OK);
        }
    }

    /* bad trees and specs: one line naming the node */
    CHECK(build("parents:-1/2/1", 3, p, err) == MT_EINVAL);
    CHECK(strstr(err, "node 1 is on a cycle") != NULL);
    CHECK(build("parents:-1/0/-1", 3, p, err) == MT_EINVAL);
    CHECK(strstr(err, "nodes 0 and 2 both have no parent") != NULL);
    CHECK(build("parents:-1/0/7", 3, p, err) == MT_EINVAL);
    CHECK(strstr(err, "node 2 has parent 7") != NULL);
    CHECK(build("parents:-1/1", 2, p, err) == MT_EINVAL);
    CHECK(strstr(err, "node 1 is its own parent") != NULL);
    CHECK(build("parents:-1/0", 3, p, err) == MT_EINVAL);
    CHECK(strstr(err, "2 nodes but the job has 3 ranks") != NULL);
    CHECK(build("fanout:2/0", 4, p, err) == MT_EINVAL);
    CHECK(strstr(err, "fan-out 0") != NULL);
    CHECK(build("kary:0", 4, p, err) == MT_EINVAL);
    CHECK(build("ring", 4, p, err) == MT_EINVAL);
    CHECK(strstr(err, "unknown --tree 'ring'") != NULL);
    CHECK(build("flat:3", 4, p, err) == MT_EINVAL);

    /* mapping node -> rank */
    int par[4] = {-1, 0, 0, 1}, pr[4];
    CHECK(mt_tree_map(par, (int[]){2, 0, 1, 3}, 4, pr, err) == MT_OK);
    /* node 0 on rank 2 is the root; node 1 on rank 0 under rank 2; node 3 on rank 3 under rank 0 */
    CHECK(same(pr, (int[]){2, 2, -1, 0}, 4));
    CHECK(mt_tree_map(par, (int[]){0, 1, 1, 3}, 4, pr, err) == MT_EINVAL);
    CHECK(strstr(err, "node 2 is mapped to rank 1") != NULL);
    CHECK(mt_tree_map(par, (int[]){0, 1, 2, 9}, 4, pr, err) == MT_EINVAL);

    /* node-aware: hosts A A B B C C C (ranks 0-6): leaders 0, 2, 4; binomial over the hosts, flat inside */
    mt_tree_spec_t t;
    int host[7] = {0, 0, 1, 1, 2, 2, 2};
    CHECK(mt_tree_spec_parse("node", &t, err) == MT_OK);
    CHECK(mt_tree_build_node(&t, 7, host, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 2, 0, 4, 4}, 7));
    CHECK(mt_tree_spec_parse("node:flat:k1", &t, err) == MT_OK); /* chains inside the hosts */
    CHECK(mt_tree_build_node(&t, 7, host, p, err) == MT_OK);
    CHECK(same(p, (int[]){-1, 0, 0, 2, 0, 4, 5}, 7));
    int host2[4] = {1, 0, 1, 0}; /* ranks interleaved over two hosts */
    CHECK(mt_tree_spec_parse("node:binomial:flat", &t, err) == MT_OK);
    CHECK(mt_tree_build_node(&t, 4, host2, p, err) == MT_OK);
    CHECK(same(p, (int[]){1, -1, 0, 1}, 4)); /* host 0 (ranks 1, 3) leads: it comes first */
    CHECK(mt_tree_spec_parse("node:ring", &t, err) == MT_EINVAL);

    /* children, depths */
    mt_tree_kids_t k;
    int bin[8] = {-1, 0, 0, 2, 0, 4, 4, 6}, d[8];
    CHECK(mt_tree_kids(bin, 8, &k) == MT_OK);
    CHECK(k.first[1] - k.first[0] == 3 && k.child[k.first[0]] == 1 && k.child[k.first[0] + 2] == 4);
    mt_tree_kids_free(&k);
    mt_tree_depths(bin, 8, d);
    CHECK(same(d, (int[]){0, 1, 1, 2, 1, 2, 2, 3}, 8));

    if (mt_test_failures) fprintf(stderr, "%d failures\n", mt_test_failures);
    return mt_test_failures ? 1 : 0;
}
