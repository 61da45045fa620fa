"""Tree descriptions, bad input and the pure analysis of allreduce trees (no MPI)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from mpitempo.errors import MtError
from mpitempo.io import tree as io
from mpitempo.stats import tree as st


def write(tmp_path, text, name="t.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("text,expect", [
    ('shape = "kary"\nk = 3\n', "kary:3"),
    ('shape = "fanout"\nfanout = [2, 4]\n', "fanout:2/4"),
    ('parents = [-1, 0, 0, 1]\n', "parents:-1/0/0/1"),
    ('children = {0 = [1, 2], 1 = [3]}\n', "parents:-1/0/0/1"),
    ('shape = "node"\ninter = "flat"\nintra = "k2"\n', "node:flat:k2"),
    ('shape = "binomial"\nranks = [3, 2, 1, 0]\n', "binomial"),
])
def test_toml_descriptions(tmp_path, text, expect):
    t = io.load_toml(write(tmp_path, text))
    assert t["tree"] == expect


def test_toml_mapping(tmp_path):
    t = io.load_toml(write(tmp_path, 'shape = "flat"\nhosts = ["a", "a", "b"]\ndown_order = "lifo"\n'))
    assert t["tree_hosts"] == ["a", "a", "b"] and t["down_order"] == "lifo"
    t = io.load_toml(write(tmp_path, 'shape = "flat"\nranks = [1, 0, 2]\n'))
    assert t["tree_map"] == [1, 0, 2]


@pytest.mark.parametrize("text,msg", [
    ('parents = [-1, 2, 1]\n', "node 1 is on a cycle (1 -> 2 -> 1)"),
    ('children = {0 = [1, 2], 1 = [2]}\n', "node 2 has two parents (0 and 1)"),
    ('children = {0 = [1, 3]}\n', "node 2 is missing"),
    ('parents = [-1, 0, -1]\n', "nodes 0 and 2 both have no parent"),
    ('parents = [-1, 5]\n', "node 1 has parent 5"),
    ('shape = "fanout"\nfanout = [2, 0]\n', "fan-out at level 1 0 must be >= 1"),
    ('shape = "kary"\nk = 0\n', "fan-out k 0 must be >= 1"),
    ('shape = "ring"\n', "invalid shape 'ring'"),
    ('shape = "flat"\nranks = [0, 1, 1]\n', "node 2 is mapped to rank 1, which already runs node 1"),
    ('shape = "node"\nhosts = ["a"]\n', "places its nodes itself"),
    ('shape = "flat"\ncolour = 1\n', "unknown key 'colour'"),
])
def test_toml_bad(tmp_path, text, msg):
    with pytest.raises(MtError) as e:
        io.load_toml(write(tmp_path, text))
    assert msg in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("spec,msg", [
    ("ring", "unknown --tree 'ring'"), ("kary:x", "kary needs a fan-out"), ("fanout:2/0", "fan-out 0 at level 1"),
    ("parents:-1/2/1", "node 1 is on a cycle"), ("node:ring", "level shape 'ring'"), ("flat:2", "takes no argument"),
])
def test_presets_bad(spec, msg):
    with pytest.raises(MtError) as e:
        io.check_preset(spec)
    assert msg in str(e.value)


def test_missing_rank_against_np():
    t = io.resolve("parents:-1/0/0")
    with pytest.raises(MtError, match="rank 3 is missing"):
        io.check_against_np(t, 4, "'x'")
    with pytest.raises(MtError, match="node 2 has no rank"):
        io.check_against_np(t, 2, "'x'")


@pytest.mark.parametrize("args,msg", [
    (["--tree", "parents:-1/2/1"], "node 1 is on a cycle"),
    (["--tree", "fanout:0"], "fan-out 0 at level 0"),
    (["-n", "4", "--tree", "parents:-1/0/0"], "rank 3 is missing"),
    (["--tree", "flat", "--tree", "flat"], "given twice"),
    (["--tree", "nofile.toml"], "tree file 'nofile.toml' not found"),
    (["--skip", "-1"], "invalid --skip -1"),
])
def test_cli_bad_input_before_anything(cli, tmp_path, args, msg):
    out = tmp_path / "camp"
    code, _, err = cli("tree", "-o", out, *args)
    assert code != 0 and msg in err and err.count("\n") == 1, err
    assert not out.exists()


def test_help_has_example(cli):
    code, out, _ = cli("tree", "--help")
    assert code == 0 and "mpitempo tree -n 4" in out and "--imbalance" in out


# -- analysis on synthetic events -----------------------------------------------------------------

def synth(parent, ncalls=50, late=None, late_s=100e-6, link=5e-6, seed=1, offsets=None):
    """Events of a tree allreduce simulated call by call: each rank enters with jitter (rank
    `late` later), reduce up, broadcast down in ascending child order; optional clock offsets per
    rank (every event of rank r is read on r's clock)."""
    rng = np.random.default_rng(seed)
    n = len(parent)
    kids = st.children(parent)
    ev = {k: np.full((ncalls, n), np.nan) for k in ("enter", "up", "down", "exit", "arr", "dep")}
    root = parent.index(-1)
    order = []
    stack = [root]
    while stack:
        v = stack.pop()
        order.append(v)
        stack += kids[v]
    t0 = 0.0
    for c in range(ncalls):
        enter = t0 + rng.uniform(0, 10e-6, n)
        if late is not None:
            enter[late] += late_s
        up = {}
        for v in reversed(order):            # children before parents
            arr = [up[k] + link for k in kids[v]]
            ready = max([enter[v]] + arr) + (1e-6 if kids[v] else 0.0)   # a leaf: up = enter
            up[v] = ready
            ev["enter"][c, v] = enter[v]
            ev["up"][c, v] = ready
            for k, a in zip(kids[v], arr):
                ev["arr"][c, k] = a
        down = {root: up[root]}
        for v in order:                       # parents before children
            ev["down"][c, v] = down[v]
            t = down[v] + (0.5e-6 if kids[v] else 0.0)                  # a leaf: exit = down
            for k in kids[v]:
                ev["dep"][c, k] = t
                down[k] = t + link
                t += 2e-6
            ev["exit"][c, v] = t
        t0 = max(ev["exit"][c]) + 20e-6
    if offsets is not None:
        off = np.asarray(offsets)
        for k in ("enter", "up", "down", "exit"):
            ev[k] = ev[k] + off[None, :]
        par = np.array([p if p >= 0 else 0 for p in parent])
        for k in ("arr", "dep"):              # read on the parent's clock
            ev[k] = ev[k] + off[par][None, :]
    return ev


BINOMIAL8 = [-1, 0, 0, 2, 0, 4, 4, 6]


@pytest.mark.parametrize("late", [1, 3, 5, 7])
def test_imbalance_names_the_late_rank(late):
    ev = synth(BINOMIAL8, late=late)
    hosts = ["h0", "h0", "h1", "h1", "h2", "h2", "h3", "h3"]
    imb = st.imbalance(BINOMIAL8, ev, hosts)
    assert imb["culprit_rank"] == late and imb["culprit_host"] == hosts[late]
    assert imb["imbalanced"] and imb["share"] == 1.0
    assert 80e-6 < imb["evidence_s"] < 110e-6


def test_stages_add_up_to_the_call():
    ev = synth(BINOMIAL8)
    for r in range(8):
        s = st.path_stages(BINOMIAL8, ev, r)
        down = sum(x["t"] for x in s if x["side"] == "down")
        up = sum(x["t"] for x in s if x["side"] == "up")
        assert np.allclose(down, ev["up"][:, 0] - ev["enter"][:, r], atol=1e-12)
        assert np.allclose(up, ev["exit"][:, r] - ev["down"][:, 0], atol=1e-12)
        row = st.path_row(BINOMIAL8, ev, r)
        assert row["total_s"] == pytest.approx(np.mean(ev["exit"][:, r] - ev["enter"][:, r]))


def test_two_way_link_latency_ignores_clock_offsets():
    a = synth(BINOMIAL8, seed=3)
    b = synth(BINOMIAL8, seed=3, offsets=[0, 1e-3, -2e-3, 5e-4, 0, 3e-3, -1e-3, 2e-3])
    for c in range(1, 8):
        la, lb = st.link_stats(a, c), st.link_stats(b, c)
        assert la["two_way_s"] == pytest.approx(10e-6, abs=1e-9)
        assert lb["two_way_s"] == pytest.approx(la["two_way_s"], abs=1e-9)


def test_node_stats_orders_and_waits():
    ev = synth([-1, 0, 0, 0], late=2)
    ns = st.node_stats([-1, 0, 0, 0], ev, 0)
    assert ns["contributors"] == ["rank 0 (own)", "child 1", "child 2", "child 3"]
    assert ns["last_arrivals"] == [0, 0, 50, 0]
    assert ns["arrival_order"][2][3] == 50                  # always the 4th to arrive
    assert ns["departure_order"][1][0] == 50                # child 1 leaves first (ascending order)
    assert ns["arrival_wait_s"][2] == 0
    assert ns["departure_wait_s"][1] == 0 and ns["departure_wait_s"][3] == pytest.approx(4e-6)
    assert ns["up_latency_s"] == pytest.approx(0.5e-6)
    ser = ns["serialization_s"]
    assert ser == sorted(ser) and ser[0] == pytest.approx(0.5e-6)


def test_groups_subtrees_and_comparison():
    ev = synth(BINOMIAL8)
    rows = [st.path_row(BINOMIAL8, ev, r, ["a"] * 4 + ["b"] * 4) for r in range(8)]
    groups = st.group_paths(rows)
    assert sorted(r for g in groups for r in g["ranks"]) == list(range(8))
    for g in groups:
        assert g["representative_rank"] in g["ranks"]
    sub = st.subtree_costs(BINOMIAL8, ev, ["a"] * 4 + ["b"] * 4)
    assert {s["root"] for s in sub} == {0, 2, 4, 6}
    assert next(s for s in sub if s["root"] == 4)["one_host"]
    cmp = st.compare_paths(rows, [dict(r, no_wait_s=2 * r["no_wait_s"]) for r in rows])
    assert all(c["delta_pct"] == pytest.approx(100.0) for c in cmp if c["a_s"])


@settings(max_examples=30, deadline=None)
@given(hs.lists(hs.integers(min_value=0, max_value=50), min_size=1, max_size=12))
def test_random_trees_are_trees(seeds):
    parents = [-1] + [s % (i + 1) for i, s in enumerate(seeds)]   # a parent among earlier nodes
    io.check_parents(parents, "")
    ev = synth(parents, ncalls=5)
    for r in range(len(parents)):
        assert st.path_of(parents, r)[-1] == 0
    imb = st.imbalance(parents, ev)
    assert 0 <= imb["culprit_rank"] < len(parents)


def test_structural_lateness_is_not_imbalance():
    """Gsum on 2 ranks: the leaf leaves each call after the root, so it is always the root's last
    arrival although both ranks work equally long (1 us) between calls: the detector names the
    latest branch but reports no application imbalance; a delayed rank is reported."""
    n = 40
    ev = {k: np.full((n, 2), np.nan) for k in ("enter", "up", "down", "exit", "arr", "dep")}
    r_in, l_in = 0.0, 0.5e-6
    for k in range(n):
        ev["enter"][k] = [r_in, l_in]
        ev["arr"][k, 1] = l_in + 5e-6
        ev["up"][k] = [l_in + 6e-6, l_in]
        ev["down"][k, 0] = ev["dep"][k, 1] = l_in + 6e-6
        ev["down"][k, 1] = ev["exit"][k, 1] = l_in + 11e-6
        ev["exit"][k, 0] = l_in + 7e-6
        r_in, l_in = ev["exit"][k, 0] + 1e-6, ev["exit"][k, 1] + 1e-6
    imb = st.imbalance([-1, 0], ev)
    assert imb["culprit_rank"] == 1 and imb["share"] == 1.0 and imb["evidence_s"] > 5e-6
    assert abs(imb["excess_work_s"]) < 1e-9 and not imb["imbalanced"]
    late = synth([-1, 0, 0], ncalls=40, late=2, late_s=200e-6)
    imb = st.imbalance([-1, 0, 0], late)
    assert imb["imbalanced"] and imb["culprit_rank"] == 2 and imb["excess_work_s"] > 150e-6
