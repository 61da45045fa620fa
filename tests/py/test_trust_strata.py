"""Runs stratified by the core-to-core latency probe (meta.json core_latency): summary flags runs
whose probe differs from the others', compare stratifies (docs/methods.md, "The core-to-core
latency probe"). Synthetic campaigns: the probe values are those measured on the VM here."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.io.synthetic import write_run
from mpitempo.stats.strata import strata, van_elteren


def _probe(rtt):
    return {"core_latency": {"before": {"ranks": [0, 1], "rounds": 2000, "rtt_median_s": rtt, "rtt_min_s": rtt * 0.9},
                             "after": {"ranks": [0, 1], "rounds": 2000, "rtt_median_s": rtt * 1.02,
                                       "rtt_min_s": rtt * 0.9}}}


def _runs(root, cfg, meds, probes, seed=0):
    rng = np.random.default_rng(seed)
    for i, (m, p) in enumerate(zip(meds, probes)):
        write_run(root, f"{cfg}-{i:03d}", cfg, i, "allreduce", 8, m * (1 + 0.01 * rng.standard_normal(200)),
                  meta=_probe(p) if p is not None else {})


def test_strata_split_at_factor_gaps():
    assert strata([110e-9, 470e-9, 120e-9, None, 480e-9]) == [[0, 2], [1, 4]]
    assert strata([110e-9, 115e-9, 130e-9]) == [[0, 1, 2]]
    # a single run on a distant core is a stratum of its own
    assert strata([100e-9] * 5 + [400e-9]) == [[0, 1, 2, 3, 4], [5]]
    # a factor below 30 ns is probe noise, not another core (SMT-sibling round trips of ~20 ns vs 40 ns)
    assert strata([20e-9, 45e-9]) == [[0, 1]]
    assert strata([None, None]) == [] and strata([]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(1e-9, 1e-5)), max_size=30))
def test_strata_partition_the_measured_runs(v):
    s = strata(v)
    flat = [i for g in s for i in g]
    assert sorted(flat) == [i for i, x in enumerate(v) if x is not None]
    for lo, hi in zip(s, s[1:]):   # strata ordered and separated by a factor
        assert v[hi[0]] >= 1.6 * v[lo[-1]] and max(v[i] for i in lo) <= min(v[i] for i in hi)


def test_summary_flags_a_run_on_a_distant_core(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    # run 4's ranks were on distant cores: probe 470 ns where the others have ~110 ns
    _runs(root, "A", [0.55e-6] * 4 + [1.3e-6] + [0.56e-6] * 3, [110e-9, 112e-9, 108e-9, 115e-9, 470e-9, 111e-9, 109e-9, 113e-9])
    _runs(root, "B", [0.55e-6] * 6, [110e-9, 112e-9, 108e-9, 115e-9, 118e-9, 105e-9], seed=1)
    code, out, err = cli("summary", root, "--json")
    assert code == 0, err
    rows = {r["config"]: r for r in json.loads(out)}
    a, b = rows["A"], rows["B"]
    assert "core_latency" in a["flags"] and "core_latency" not in b["flags"] and b["core_strata"] is None
    near, far = a["core_strata"]
    assert far["runs"] == [4] and far["core_rtt_s"] == pytest.approx(475e-9, rel=0.02)
    assert near["runs"] == [0, 1, 2, 3, 5, 6, 7] and near["share"] == pytest.approx(7 / 8)
    assert far["center_s"] == pytest.approx(1.3e-6, rel=0.01)
    code, out, err = cli("summary", root)
    assert "core-lat" in out and "the core-to-core latency probe splits the runs" in out
    assert "run 4 (median 1.3 µs)" in out


def test_runs_without_a_probe_are_not_flagged(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    _runs(root, "A", [1e-6] * 5, [None, None, 110e-9, None, None])
    code, out, err = cli("summary", root, "--json")
    r = json.loads(out)[0]
    assert "core_latency" not in r["flags"] and r["core_strata"] is None


def _near_far(tmp_path, split_a, split_b, shift_b=1.0):
    """A campaign of configurations A and B whose runs landed on near (110 ns probe, 0.55 µs) and
    distant (470 ns, 1.3 µs) cores as (near, far) counts; B's times multiplied by shift_b."""
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    near, far = 110e-9, 470e-9
    for cfg, (n, f), k, seed in (("A", split_a, 1.0, 0), ("B", split_b, shift_b, 1)):
        probes = [near] * n + [far] * f
        _runs(root, cfg, [k * (0.55e-6 if p == near else 1.3e-6) for p in probes], probes, seed=seed)
    return root


def test_compare_stratifies_by_core_latency(cli, tmp_path):
    # A and B are the same configuration; A's runs landed mostly on near cores, B's mostly on
    # distant ones: unstratified, B looks 2x slower; inside each stratum they are equal
    root = _near_far(tmp_path, (8, 2), (2, 8))
    code, out, err = cli("compare", root, "--json")
    assert code == 0, err
    r = json.loads(out)[0]
    assert "core_latency" in r["flags"] and "core_latency" in r["flags_a"]
    assert [(s["runs_a"], s["runs_b"]) for s in r["strata"]] == [(8, 2), (2, 8)]
    for s in r["strata"]:
        assert abs(s["delta_pct"]) < 3 and s["p_value"] > 0.05
    assert r["delta_pct"] > 50 and "flagged: " in r["verdict"] and "core_latency" in r["verdict"]
    assert r["p_value"] < 0.05   # unstratified: "significant", an artefact of where the ranks ran
    assert r["stratified"]["strata"] == 2 and r["stratified"]["p_value"] > 0.05 and not r["stratified"]["significant"]
    code, out, err = cli("compare", root)
    assert code == 0, err
    assert "splits the runs into 2 strata" in out + err and "different shares" in out + err
    assert "van Elteren" in out + err and "not significant" in out + err


def test_compare_stratified_test_finds_a_shift_in_every_stratum(cli, tmp_path):
    """B is 6% slower on near and on distant cores, with the runs split differently: the combined
    test over the strata finds it."""
    root = _near_far(tmp_path, (7, 3), (3, 7), shift_b=1.06)
    code, out, err = cli("compare", root, "--json")
    assert code == 0, err
    ve = json.loads(out)[0]["stratified"]
    assert ve["significant"] and ve["p_value"] < 0.01 and ve["method"] == "exact"


def test_van_elteren_one_stratum_is_the_exact_rank_sum_test():
    from scipy import stats

    rng = np.random.default_rng(3)
    for _ in range(10):
        a, b = rng.normal(size=rng.integers(2, 8)), rng.normal(size=rng.integers(2, 8)) + 0.7
        for alt in ("less", "greater", "two-sided"):
            ours = van_elteren([(a, b)], alt)["p_value"]
            ref = stats.mannwhitneyu(a, b, alternative=alt, method="exact").pvalue
            assert ours == pytest.approx(ref, abs=1e-9)


def test_van_elteren_by_hand_and_edge_cases():
    # A below B in both strata, the most extreme arrangement: 1/20 x 1/10
    r = van_elteren([([1, 2, 3], [4, 5, 6]), ([10, 11], [12, 13, 14])], "less")
    assert r["p_value"] == pytest.approx(0.005) and r["strata"] == 2 and r["method"] == "exact"
    assert van_elteren([([1, 2, 3], [4, 5, 6]), ([10, 11], [12, 13, 14])], "greater")["p_value"] == pytest.approx(1.0)
    assert van_elteren([([1.0], []), ([], [2.0])]) is None          # no stratum with both sides
    assert van_elteren([([5.0] * 3, [5.0] * 4)])["p_value"] == pytest.approx(1.0)   # all tied
    with pytest.raises(ValueError, match="unknown alternative 'up'"):
        van_elteren([([1], [2])], "up")
    # large strata: the normal approximation agrees with the exact distribution
    rng = np.random.default_rng(5)
    g = [(rng.normal(size=30), rng.normal(size=30) + 0.3), (rng.normal(size=25) + 2, rng.normal(size=35) + 2.3)]
    nz = van_elteren(g)
    assert nz["method"] == "normal"
    import mpitempo.stats.strata as mod
    old = mod.EXACT_MAX_N
    try:
        mod.EXACT_MAX_N = 60
        ex = van_elteren(g)
    finally:
        mod.EXACT_MAX_N = old
    assert ex["method"] == "exact" and nz["p_value"] == pytest.approx(ex["p_value"], rel=0.1)


def test_van_elteren_holds_its_level_under_the_null():
    """200 stratified comparisons of identical distributions (strata at different levels, sides
    split unevenly over them): at most 5% called different at alpha 0.05 (exact test: <= alpha
    by construction, plus sampling noise of 200 trials)."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(200):
        g = []
        for level, (na, nb) in ((1.0, (7, 3)), (2.5, (3, 7))):
            g.append((level + rng.standard_normal(na) * 0.1, level + rng.standard_normal(nb) * 0.1))
        hits += van_elteren(g)["p_value"] <= 0.05
    assert hits <= 10 + 3, hits


def test_compare_one_side_uniform_other_side_mixed(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    _runs(root, "A", [1e-6] * 6, [110e-9] * 6)
    _runs(root, "B", [1e-6] * 6, [110e-9] * 6, seed=1)
    code, out, err = cli("compare", root, "--json")
    r = json.loads(out)[0]
    assert r["strata"] is None and "core_latency" not in r["flags"]
