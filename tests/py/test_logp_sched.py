"""The extended barrier model (stats/logp_sched.py) and the platform routes (analysis/routes.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpitempo.analysis import routes as rts
from mpitempo.stats.logp import LogP, predict
from mpitempo.stats.logp_sched import PROGRAMS, net_gap, simulate

M = LogP(L=2.0e-6, o_s=0.3e-6, o_r=0.4e-6, g=0.4e-6)
ALGS = ["barrier:central", "barrier:combining:2", "barrier:combining:3", "barrier:combining:4", "barrier:fway:2",
        "barrier:fway:4", "barrier:mcs", "barrier:bst", "barrier:tournament", "barrier:butterfly",
        "barrier:pairwise", "barrier:dissemination"]
US = 1e-6


def test_every_program_has_a_model():
    assert set(PROGRAMS) == {"central", "combining", "fway", "mcs", "tournament", "bst", "butterfly", "pairwise",
                             "dissemination"}
    assert simulate("barrier", 8, M) is None


@pytest.mark.parametrize("alg", ["barrier:dissemination", "barrier:butterfly", "barrier:pairwise",
                                 "barrier:tournament", "barrier:combining:2", "barrier:combining:4"])
@pytest.mark.parametrize("p", [2, 4, 16, 64, 256])
def test_agrees_with_the_formulas_where_they_are_exact(alg, p):
    """Powers of the arity, one L: the closed formulas of Hoefler et al. 2005 are exact."""
    if alg.endswith(":4") and p in (2, 8, 32, 128, 512):
        return
    assert simulate(alg, p, M) == pytest.approx(predict(alg, p, M), rel=1e-9)


def test_known_answers_by_hand():
    one = (0.3 + 2.0 + 0.4) * US
    assert simulate("barrier:dissemination", 2, M) == pytest.approx(one)
    # central on 3: two arrivals at 2.3 us, received 0.4 each; releases 0.3 apart
    assert simulate("barrier:central", 3, M) == pytest.approx((2.3 + 0.8 + 0.3 + 0.3 + 2.0 + 0.4) * US)
    # central on 64: the root receives 63 messages in a row, then sends 63 in a row
    assert simulate("barrier:central", 64, M) == pytest.approx((2.3 + 63 * 0.4 + 63 * 0.3 + 2.4) * US)
    # a tree of 3 ranks (tournament/combining:2) is one level with 2 children in sequence, not two levels
    assert simulate("barrier:tournament", 3, M) == pytest.approx((2.3 + 0.4 + 0.4 + 0.3 + 0.3 + 2.4) * US)
    # pairwise on 3: rank 2 folds into 0 first; the fold overlaps the exchange 0-1
    assert simulate("barrier:pairwise", 3, M) < predict("barrier:pairwise", 3, M)


def test_net_gap_only_when_the_overheads_do_not_explain_g():
    assert net_gap(M) == 0.0
    slow = LogP(L=2e-6, o_s=0.3e-6, o_r=0.4e-6, g=1.0e-6)
    assert net_gap(slow) == 1.0e-6
    # central's root then spaces its receives and sends by g
    assert simulate("barrier:central", 8, slow) == pytest.approx((2.3 + 6 * 1.0 + 0.4 + 6 * 1.0 + 0.3 + 2.4) * US)


def test_start_cost_is_paid_once_per_cold_message():
    c = 0.5 * US
    assert simulate("barrier:dissemination", 2, M, start_cost=c) == pytest.approx(2.7 * US + c)
    # up (cold) and down (the root has received: warm)
    assert simulate("barrier:central", 2, M, start_cost=c) == pytest.approx(5.4 * US + c)
    # dissemination: only the first round's messages are cold
    assert simulate("barrier:dissemination", 16, M, start_cost=c) == pytest.approx(4 * 2.7 * US + c)


def test_latency_per_pair_is_used():
    far = lambda i, j: 5e-6 if (i // 4) != (j // 4) else 1e-6   # noqa: E731
    # dissemination on 8 ranks: rounds 1, 2 stay inside the group of 4 for some ranks, round 4 crosses
    t = simulate("barrier:dissemination", 8, M, far)
    assert t == pytest.approx(3 * 0.7 * US + 3 * 5e-6) or t < 3 * (0.7 * US + 5e-6) + 1e-12
    assert t > simulate("barrier:dissemination", 8, M, lambda i, j: 1e-6)


@settings(max_examples=60, deadline=None)
@given(alg=st.sampled_from(ALGS), p=st.integers(2, 70),
       L=st.floats(0, 1e-5), o_s=st.floats(0, 2e-6), o_r=st.floats(0, 2e-6), g=st.floats(0, 3e-6))
def test_properties(alg, p, L, o_s, o_r, g):
    """Every program terminates (no deadlock in the model) with the message count of the algorithm's
    pattern, and the runtime is at least one message and at most the P-1-message chain bound."""
    m = LogP(L=L, o_s=o_s, o_r=o_r, g=g)
    rt, exits, msgs = simulate(alg, p, m, detail=True)
    one = o_s + L + o_r
    assert rt >= one - 1e-15
    assert len(exits) == p and max(exits) == rt
    if alg == "barrier:dissemination":
        assert msgs == p * (p - 1).bit_length()
    if alg == "barrier:central":
        assert msgs == 2 * (p - 1)
    # more cost never makes it faster
    slower = LogP(L=L * 1.5 + 1e-7, o_s=o_s, o_r=o_r, g=g)
    assert simulate(alg, p, slower) >= rt - 1e-15


def _write(tmp_path, body):
    p = tmp_path / "p.xml"
    p.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\">\n" + body + "\n</platform>\n")
    return p


def test_routes_fat_tree(tmp_path):
    p = _write(tmp_path, '<cluster id="f" prefix="n" suffix="" radical="0-255" core="4" speed="1Gf" bw="1GBps" '
                         'lat="0.5us" topology="FAT_TREE" topo_parameters="2;16,16;1,16;1,1" '
                         'loopback_bw="50GBps" loopback_lat="0.1us"/>')
    r = rts.routes(p, ppn=1)
    assert r.topology == "FAT_TREE"
    assert r.latency(0, 15) == pytest.approx(1e-6) and r.latency(0, 16) == pytest.approx(2e-6)
    r4 = rts.routes(p)   # 4 ranks per node
    assert r4.latency(0, 3) == pytest.approx(0.1e-6) and r4.latency(0, 4) == pytest.approx(1e-6)
    assert r4.latency(0, 64) == pytest.approx(2e-6)


def test_routes_torus_and_flat(tmp_path):
    p = _write(tmp_path, '<cluster id="t" prefix="t" suffix="" radical="0-1023" core="1" speed="1Gf" bw="1GBps" '
                         'lat="0.2us" topology="TORUS" topo_parameters="8,8,16"/>')
    r = rts.routes(p)
    assert r.links(0, 1) == 1 and r.links(0, 7) == 1 and r.links(0, 4) == 4
    assert r.links(0, 8) == 1 and r.links(0, 64 * 8) == 8 and r.links(0, 4 + 4 * 8 + 8 * 64) == 16
    q = _write(tmp_path, '<cluster id="c" prefix="c" suffix="" radical="0-63" core="4" speed="1Gf" bw="1GBps" '
                         'lat="1us" bb_bw="10GBps" bb_lat="0.5us"/>')
    f = rts.routes(q, ppn=1)
    assert f.latency(0, 1) == pytest.approx(2.5e-6) and f.latency(3, 3) == 0.0


def test_routes_none_for_other_platforms(tmp_path):
    p = _write(tmp_path, '<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>'
                         '<link id="l" bandwidth="1GBps" latency="1us"/>'
                         '<route src="a" dst="b"><link_ctn id="l"/></route></zone>')
    assert rts.routes(p) is None
    q = _write(tmp_path, '<cluster id="x" prefix="x" suffix="" radical="0-7" speed="1Gf" bw="1GBps" lat="1us" '
                         'topology="DRAGONFLY" topo_parameters="1,2;1,2;1,1;2"/>')
    assert rts.routes(q) is None


def test_pair_latency_keeps_the_measured_part(tmp_path):
    p = _write(tmp_path, '<cluster id="f" prefix="n" suffix="" radical="0-255" core="1" speed="1Gf" bw="1GBps" '
                         'lat="0.5us" topology="FAT_TREE" topo_parameters="2;16,16;1,16;1,1"/>')
    r = rts.routes(p)
    lat, ref = rts.pair_latency(r, 2.0015e-6, [(0, j) for j in range(1, 256)])
    assert ref == pytest.approx(2e-6)
    assert lat(0, 200) == pytest.approx(2.0015e-6) and lat(0, 1) == pytest.approx(1.0015e-6)


def test_parse_time():
    assert rts.parse_time("0.5us") == pytest.approx(5e-7) and rts.parse_time("2ms") == pytest.approx(2e-3)
    assert rts.parse_time("1e-6") == 1e-6 and rts.parse_time(None) == 0.0
    with pytest.raises(ValueError, match="invalid SimGrid time"):
        rts.parse_time("fast")


def test_shipped_platforms_routes():
    """The node-to-node latencies docs/simulation.md lists for the shipped platforms, from their files."""
    from pathlib import Path

    from mpitempo.io.platform import read_platform

    plats = Path(__file__).resolve().parents[2] / "platforms"
    fast = rts.routes(plats / "cluster64-fast.xml", ppn=1)
    assert fast.topology == "FLAT" and fast.latency(0, 63) == pytest.approx(2e-6)
    for name, leaf in (("fattree256", 16), ("fattree1024", 32)):
        ft = rts.routes(plats / f"{name}.xml", ppn=1)
        assert ft.latency(0, leaf - 1) == pytest.approx(1e-6) and ft.latency(0, leaf) == pytest.approx(2e-6)
    ft4 = rts.routes(plats / "fattree256.xml")    # 4 ranks per node: the loopback inside a node
    assert ft4.latency(0, 3) == pytest.approx(0.1e-6) and ft4.latency(0, 4) == pytest.approx(1e-6)
    tor = rts.routes(plats / "torus1024.xml")
    assert max(tor.links(0, j) for j in range(1024)) == 16 and tor.latency(0, 1) == pytest.approx(0.2e-6)
    p = read_platform(plats / "fattree1024.xml")
    assert (p.nhosts, p.ncores) == (1024, 1024) and p.config.get("smpi/lat-factor") == "0:1"
