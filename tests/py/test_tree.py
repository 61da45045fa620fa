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
    ('shape = "mpi"\ndown_order = "lifo"\n', "shape 'mpi' is the library's own MPI_Allreduce"),
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
    (["--tree", "kary:2", "--tree", "kary:02"], "--tree 'kary:02' and 'kary:2' are the same tree (kary:2)"),
    (["--tree", "node", "--tree", "node:binomial:flat"], "are the same tree (node:binomial:flat)"),
    (["--workload", "sor", "--msize", "64"], "--msize applies to --workload gsum only (this run: --workload sor)"),
    (["--sor-rows", "8"], "--sor-rows applies to --workload sor only (this run: --workload gsum)"),
    (["--overhead-reps", "0", "--overhead-calls", "5"], "--overhead-calls is not used with --overhead-reps 0"),
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


# -- hostile pass F: a tree run directory from someone else (`tree --from`) -----------------------------

import json  # noqa: E402
import os  # noqa: E402

PARENT3 = [-1, 0, 0]


def _tree_run(run, parent=PARENT3, ncalls=6, config="a"):
    """A run directory as mpitempo-tree writes it (Gsum: two instances, call c on instance c % 2)."""
    ev = synth(parent, ncalls=ncalls)
    n = len(parent)
    kids = st.children(parent)
    run.mkdir(parents=True)
    e = ["call,inst,rank,enter_s,up_s,down_s,exit_s"]
    ln = ["call,inst,parent,child,arrive_s,depart_s,arrival_order,departure_order"]
    for c in range(ncalls):
        for r in range(n):
            e.append(f"{c},{c % 2},{r}," + ",".join(f"{ev[k][c, r]:.9f}" for k in ("enter", "up", "down", "exit")))
            ks = kids[r]
            by_arr = sorted(ks, key=lambda k: ev["arr"][c, k])
            by_dep = sorted(ks, key=lambda k: ev["dep"][c, k])
            for k in ks:
                ln.append(f"{c},{c % 2},{r},{k},{ev['arr'][c, k]:.9f},{ev['dep'][c, k]:.9f},{by_arr.index(k)},"
                          f"{by_dep.index(k)}")
    (run / "events.csv").write_text("\n".join(e) + "\n")
    (run / "links.csv").write_text("\n".join(ln) + "\n")
    meta = {"format_version": 1, "kind": "tree", "tool": "mpitempo-tree", "config": config, "run_index": 0,
            "nprocs": n, "tree": {"spec": f"parents:{'/'.join(map(str, parent))}", "mpi_allreduce": False,
                                  "down_order": "fixed", "parent": parent, "node_rank": list(range(n)),
                                  "host": ["h0"] * n, "nhosts": 1, "instances": 2},
            "workload": {"name": "gsum", "ncalls": ncalls, "sample": 1, "recorded_calls": ncalls, "msize": 8},
            "overhead": {"overhead_pct": None}, "clock": {"sync": "hca3"}}
    (run / "meta.json").write_text(json.dumps(meta))
    return run


def _tree_campaign(root):
    root.mkdir()
    (root / "campaign.toml").write_text('kind = "tree"\nname = "t"\n[[config]]\nname = "a"\ntree = "parents:-1/0/0"\n')
    return _tree_run(root / "runs" / "a-000")


def _lines(run, name, fn):
    p = run / name
    p.write_text("\n".join(fn(p.read_text().splitlines())) + "\n")


def _cell(line, col, value):
    x = line.split(",")
    x[col] = value
    return ",".join(x)


def _ev(col, value, row=2):       # events.csv line `row` (1: the header), column col set to value
    return lambda r: _lines(r, "events.csv", lambda ls: ls[:row - 1] + [_cell(ls[row - 1], col, value)] + ls[row:])


def _ln(col, value, row=2):
    return lambda r: _lines(r, "links.csv", lambda ls: ls[:row - 1] + [_cell(ls[row - 1], col, value)] + ls[row:])


def _tree_meta(**keys):
    def f(r):
        m = json.loads((r / "meta.json").read_text())
        for k, v in keys.items():
            if "." in k:
                a, b = k.split(".")
                m[a][b] = v
            else:
                m[k] = v
        (r / "meta.json").write_text(json.dumps(m))
    return f


def _to_link(p, target):
    p.unlink()
    p.symlink_to(target)


def _to_fifo(p):
    p.unlink()
    os.mkfifo(p)


HOSTILE_TREE_RUNS = {
    "events-link": (lambda r: _to_link(r / "events.csv", "/etc/passwd"), "events.csv': it is a symbolic link"),
    "events-fifo": (lambda r: _to_fifo(r / "events.csv"), "events.csv': it is a FIFO"),
    "links-fifo": (lambda r: _to_fifo(r / "links.csv"), "links.csv': it is a FIFO"),
    "links-dev-zero": (lambda r: _to_link(r / "links.csv", "/dev/zero"), "links.csv': it is a symbolic link"),
    "meta-link": (lambda r: ((r / "meta.json").rename(r.parent / "m.json"), (r / "meta.json").symlink_to(r.parent / "m.json")),
                  "meta.json': it is a symbolic link"),
    "events-empty": (lambda r: (r / "events.csv").write_text(""),
                     "events.csv' is empty: expected the header 'call,inst,rank,enter_s,up_s,down_s,exit_s'"),
    "events-header-only": (lambda r: _lines(r, "events.csv", lambda ls: ls[:1]),
                           "events.csv' holds no events (only its header)"),
    "events-cut-short": (lambda r: (r / "events.csv").write_text((r / "events.csv").read_text()[:-5]),
                         "the last line has no newline: the file is cut short (truncated)"),
    "events-row-short": (lambda r: _lines(r, "events.csv", lambda ls: ls[:3] + [ls[3][:9]] + ls[4:]),
                         "events.csv':4: the line has 4 fields, expected 7"),
    "events-word": (_ev(3, "abc"), "events.csv':2: column enter_s is 'abc', expected a number (seconds)"),
    "events-escape-in-cell": (_ev(3, "\x1b[2J"), "events.csv':2: column enter_s is '\\x1b[2J', expected a number"),
    "events-columns-swapped": (lambda r: _lines(r, "events.csv", lambda ls: [ls[0].replace("enter_s,up_s", "up_s,enter_s")] + ls[1:]),
                               "events.csv':1: header has the columns in another order"),
    "events-column-renamed": (lambda r: _lines(r, "events.csv", lambda ls: [ls[0].replace("rank", "rnk")] + ls[1:]),
                              "events.csv':1: header is 'call,inst,rnk,enter_s,up_s,down_s,exit_s', expected"),
    "events-nan": (_ev(3, "nan"), "events.csv':2: column enter_s is 'nan', expected a finite time in seconds"),
    "events-inf": (_ev(6, "inf"), "events.csv':2: column exit_s is 'inf', expected a finite time in seconds"),
    "events-1e400": (_ev(6, "1e400"), "events.csv':2: exit_s is '1e400', expected a finite time in seconds 0..1e+09"),
    "events-negative-time": (_ev(3, "-0.5"), "events.csv':2: enter_s is '-0.5', expected a finite time in seconds 0..1e+09"),
    "events-huge-time": (_ev(6, "1e300"), "events.csv':2: exit_s is '1e300', expected a finite time"),
    "events-exit-before-enter": (_ev(6, "0.000000001"), "events.csv':2: exit_s 0.000000001 is before down_s"),
    "events-rank-negative": (_ev(2, "-1", 3), "events.csv':3: rank -1 is not a rank of the run (allowed: 0..2; meta.json: 3 ranks)"),
    "events-rank-nprocs": (_ev(2, "3", 3), "events.csv':3: rank 3 is not a rank of the run (allowed: 0..2"),
    "events-rank-99999": (_ev(2, "99999", 3), "events.csv':3: rank 99999 is not a rank of the run (allowed: 0..2"),
    "events-rank-fraction": (_ev(2, "0.5", 3), "events.csv':3: column rank is '0.5', expected an integer"),
    "events-call-huge": (_ev(0, "1e30"), "events.csv':2: column call is '1e30', expected an integer"),
    "events-call-outside": (_ev(0, "99999"), "events.csv':2: call 99999 is not a call of the run (allowed: 0..5; "
                                             "meta.json workload.ncalls 6)"),
    "events-inst-wrong": (_ev(1, "1"), "events.csv':2: inst 1 for call 0 (allowed: call % 2 = 0"),
    "events-duplicated": (lambda r: _lines(r, "events.csv", lambda ls: ls + [ls[2]]),
                          "events.csv':20: a second event of call 0, rank 1 (the first is on line 3"),
    "events-rank-missing": (lambda r: _lines(r, "events.csv", lambda ls: [x for x in ls if x.split(",")[2] != "2"]),
                            "events.csv': call 0 has events of 2 of the 3 ranks (rank 2 is missing"),
    "events-fewer-calls": (lambda r: _lines(r, "events.csv", lambda ls: ls[:-3]),
                           "events.csv' holds events of 5 calls, but meta.json workload.recorded_calls is 6"),
    "events-too-large": (lambda r: (r / "events.csv").write_text((r / "events.csv").read_text() + "0" * 5000),
                         "more than the 3040 its rows can take (18 rows of meta.json's calls x ranks)"),
    "links-child-99999": (_ln(3, "99999"), "links.csv':2: child 99999 is not a rank of the run (allowed: 0..2"),
    "links-child-negative": (_ln(3, "-1"), "links.csv':2: child -1 is not a rank of the run"),
    "links-child-root": (_ln(3, "0"), "links.csv':2: parent 0 of child 0, but the tree of meta.json gives it parent "
                                      "none: it is the root"),
    "links-parent-wrong": (_ln(2, "2"), "links.csv':2: parent 2 of child 1, but the tree of meta.json gives it parent 0"),
    "links-inst-wrong": (_ln(0, "5", 2), "links.csv':2: inst 0 for call 5 (allowed: call % 2 = 1)"),
    "links-call-not-recorded": (lambda r: (_lines(r, "events.csv", lambda ls: ls[:-3]),
                                           _tree_meta(**{"workload.recorded_calls": 5})(r)),
                                "links.csv':12: call 5 has no events in events.csv"),
    "links-order-outside": (_ln(6, "2"), "links.csv':2: arrival_order 2 (allowed: 0..1, the position among the 2 "
                                         "children of rank 0)"),
    "links-duplicated": (lambda r: _lines(r, "links.csv", lambda ls: ls + [ls[1]]),
                         "links.csv':14: a second link of call 0, child 1 (the first is on line 2"),
    "links-missing": (lambda r: _lines(r, "links.csv", lambda ls: ls[:-1]),
                      "links.csv': call 5 has no link of child 2 (11 rows, expected 12"),
    "links-nan": (_ln(4, "nan"), "links.csv':2: column arrive_s is 'nan', expected a finite time in seconds"),
    "meta-parent-outside": (_tree_meta(**{"tree.parent": [-1, 0, 99999]}),
                            "rank 2 has parent 99999 (allowed: another rank 0..2, or -1 for the root)"),
    "meta-parent-cycle": (_tree_meta(**{"tree.parent": [-1, 2, 1]}), "node 1 is on a cycle (1 -> 2 -> 1)"),
    "meta-parent-string": (_tree_meta(**{"tree.parent": "x"}), "tree.parent is 'x', expected a list of 1..16777216 integers"),
    "meta-nprocs-disagrees": (_tree_meta(nprocs=99999), "'nprocs' is 99999, expected 3, the number of ranks of tree.parent"),
    "meta-hosts-short": (_tree_meta(**{"tree.host": ["h0"]}), "tree.host is ['h0'], expected a list of 3 host names"),
    "meta-tree-missing": (_tree_meta(tree=None), "'tree' is missing, expected an object (the tree of the run)"),
    "meta-workload-string": (_tree_meta(workload="x"), "'workload' is 'x', expected an object"),
    "meta-recorded-calls-absurd": (_tree_meta(**{"workload.recorded_calls": 10 ** 12}),
                                   "workload.recorded_calls is 1000000000000, expected an integer 1..6"),
    "meta-ncalls-absurd": (_tree_meta(**{"workload.ncalls": 10 ** 12}),
                           "workload.ncalls is 1000000000000, expected an integer 1..100000000"),
    "meta-overhead-string": (_tree_meta(overhead="x"), "'overhead' is 'x', expected an object"),
    "meta-kind-other": (_tree_meta(kind="bench"), "is a run of kind 'bench', not of mpitempo tree"),
}


@pytest.mark.parametrize("case", list(HOSTILE_TREE_RUNS))
def test_hostile_tree_run(cli, tmp_path, case):
    """A damaged or planted tree run (a campaign, or one run directory, given to --from): one line naming
    the file, the line and the value and what is allowed, exit 2; never a traceback, a hang on a FIFO,
    a read through a link, nor a silently wrong analysis; nothing written to -o."""
    damage, msg = HOSTILE_TREE_RUNS[case]
    camp = tmp_path / "camp"
    run = _tree_campaign(camp)
    damage(run)
    for args in (["--from", camp, "-o", tmp_path / "out"], ["--from", run, "--json"]):
        code, out, err = cli("tree", *args)
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert msg in err, err
        assert "\x1b" not in err
        assert not (tmp_path / "out").exists()


def test_sound_tree_run_is_analysed(cli, tmp_path):
    """The synthetic run of the hostile cases is sound: analysed from a campaign and from its run directory."""
    camp = tmp_path / "camp"
    run = _tree_campaign(camp)
    code, out, err = cli("tree", "--from", camp, "--json", "--skip", "1")
    assert code == 0, err
    res = json.loads(out)
    assert res["nprocs"] == 3 and [p["path"] for p in res["paths"]] == ["0", "1>0", "2>0"]
    code, out, err = cli("tree", "--from", run, "-o", tmp_path / "o", "--quiet")
    assert code == 0 and err == "", err
    assert (tmp_path / "o" / "analysis.json").is_file() and (tmp_path / "o" / "report.html").is_file()
    code, _, err = cli("tree", "--from", camp, "--skip", "6")
    assert code == 2 and "invalid --skip 6: must be smaller than the 6 recorded calls of run" in err, err


def test_tree_run_texts_are_shown_escaped(cli, tmp_path):
    """Control characters and a newline in a run's configuration name, tree spec, host names and workload:
    shown escaped in the text output and the report, on the lines they belong to."""
    run = _tree_run(tmp_path / "run", config="a\x1b[2J\nFAKE")
    _tree_meta(**{"tree.host": ["h\x1b]0;PWN\x07", "h\nX", "h0"], "tree.spec": "s\u202ex"})(run)
    code, out, err = cli("tree", "--from", run, "-o", tmp_path / "o")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\nFAKE" not in out and "\u202e" not in out
    assert "'a\\x1b[2J\\x0aFAKE' (s\\u202ex)" in out
    doc = (tmp_path / "o" / "report.html").read_text()
    assert not any(ord(c) < 32 and c not in "\n\t" for c in doc) and "\u202e" not in doc
    assert "a\\x1b[2J\\x0aFAKE" in doc


@pytest.mark.parametrize("args,flag", [
    (["-n", "4"], "--np"), (["--tree", "flat"], "--tree"), (["--mpiruns", "1"], "--mpiruns"),
    (["--ncalls", "5"], "--ncalls"), (["--timeout", "5"], "--timeout"), (["--launcher", "{mpiexec} {cmd}"], "--launcher"),
    (["--sync", "none"], "--sync"),
])
def test_from_refuses_measuring_options(cli, tmp_path, args, flag):
    """With --from nothing is measured: an option about measuring is refused, not silently ignored."""
    camp = tmp_path / "camp"
    _tree_campaign(camp)
    code, _, err = cli("tree", "--from", camp, *args)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{flag} is not used with --from (the runs are analysed as they were measured): leave it out" in err


def test_from_outputs_checked_before_reading(cli, tmp_path):
    """-o of --from: a device, a link, a directory whose report.html is a FIFO or whose analysis.json is a
    link are refused before anything is read or written; both files are written whole or not at all."""
    camp = tmp_path / "camp"
    _tree_campaign(camp)
    code, _, err = cli("tree", "--from", camp, "-o", "/dev/null")
    assert code == 2 and "cannot write into -o '/dev/null': it is a character device, not a directory" in err, err
    (tmp_path / "d").mkdir()
    (tmp_path / "lnk").symlink_to(tmp_path / "d")
    code, _, err = cli("tree", "--from", camp, "-o", tmp_path / "lnk")
    assert code == 2 and "it is a symbolic link; give the directory itself" in err, err
    os.mkfifo(tmp_path / "d" / "report.html")
    code, _, err = cli("tree", "--from", camp, "-o", tmp_path / "d")
    assert code == 2 and "report.html': it is a FIFO" in err, err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["report.html"]
    (tmp_path / "d" / "report.html").unlink()
    (tmp_path / "d" / "analysis.json").symlink_to(tmp_path / "victim")
    code, _, err = cli("tree", "--from", camp, "-o", tmp_path / "d")
    assert code == 2 and "analysis.json': it is a symbolic link" in err, err
    assert not (tmp_path / "victim").exists() and sorted(p.name for p in (tmp_path / "d").iterdir()) == ["analysis.json"]


def test_summary_of_a_tree_campaign_reads_only_sound_runs(cli, tmp_path):
    """summary (and compare, report, export: one store) reads events.csv by column position: a damaged
    or planted run is refused there as by `tree --from` (swapped columns were summarised silently wrong)."""
    camp = tmp_path / "camp"
    _tree_campaign(camp)
    code, out, err = cli("summary", camp, "--json")
    assert code == 0, err
    assert [r["op"] for r in json.loads(out)] == ["allreduce-tree"]
    for case in ("events-columns-swapped", "events-header-only", "events-rank-99999", "events-fifo", "events-nan",
                 "events-duplicated"):
        damage, msg = HOSTILE_TREE_RUNS[case]
        c = tmp_path / case
        damage(_tree_campaign(c))
        code, out, err = cli("summary", c)
        assert code == 2 and msg in err and len(err.strip().splitlines()) == 1, (case, err)
