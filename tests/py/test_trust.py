"""Never a silent wrong number: effect sizes, equivalence, modes, outlier runs and the result flags
of summary and compare (docs/methods.md, "Results that are flagged")."""
import json

import numpy as np
import pytest
from scipy import stats as sps

from mpitempo.io.synthetic import make_campaign, write_run
from mpitempo.stats.compare import compare_samples
from mpitempo.stats.effects import hodges_lehmann, runs_needed, tost, u_crit
from mpitempo.stats.modes import modes, outlier_runs


# -- pure statistics -------------------------------------------------------------------------------

@pytest.mark.parametrize("m,n", [(3, 4), (6, 6), (10, 10), (7, 12)])
def test_u_crit_matches_scipy_exact(m, n):
    # P(U <= k - 1) <= alpha < P(U <= k): the exact one-sided p of U = k - 1 and of U = k
    a = 0.025
    k = u_crit(m, n, a)

    def p_at(u):   # exact P(U <= u): a sample arrangement giving U = u, no ties
        x = np.arange(m, dtype=float)
        y = np.arange(n, dtype=float) + 0.5
        # U of x is the number of pairs x_i > y_j; build it by moving x's above u of the y's
        xs = np.full(m, -1.0)
        left = u
        for i in range(m - 1, -1, -1):
            take = min(left, n)
            xs[i] = y[take - 1] + 0.25 if take else -1.0 - i
            left -= take
        return sps.mannwhitneyu(xs, y, alternative="less", method="exact").pvalue
    if k >= 1:
        assert p_at(k - 1) <= a + 1e-12
    assert p_at(k) > a


def test_hodges_lehmann_shift_and_ci():
    rng = np.random.default_rng(1)
    a = rng.normal(10.0, 0.1, 12)
    b = a[::-1] + 0.5 + rng.normal(0, 0.01, 12)
    hl = hodges_lehmann(a, b)
    d = np.sort((b[None, :] - a[:, None]).ravel())
    assert hl["shift_s"] == pytest.approx(np.median(d))
    assert hl["ci_lo_s"] < hl["shift_s"] < hl["ci_hi_s"] and hl["ci_lo_s"] > 0.3 and hl["ci_hi_s"] < 0.7
    # too few runs for a 95% interval: no interval, but a shift
    few = hodges_lehmann([1.0, 1.1], [1.2, 1.3])
    assert few["shift_s"] == pytest.approx(0.2) and few["ci_lo_s"] is None


def _sim(rng, n, shift, cv=0.003):
    a = 1e-6 * (1 + cv * rng.standard_normal(n))
    b = 1e-6 * (1 + shift) * (1 + cv * rng.standard_normal(n))
    return a, b


def test_200_identical_comparisons():
    # run medians of identical configurations, 10 runs per side, 0.3% run-to-run spread
    rng = np.random.default_rng(2024)
    called_diff = called_eq = 0
    for _ in range(200):
        a, b = _sim(rng, 10, 0.0)
        called_diff += compare_samples(a, b)["significant"]
        called_eq += tost(a, b, 0.01)["equivalent"]
    assert called_diff <= 10           # at most 5% called different
    assert called_eq >= 190            # at least 95% called equivalent within +-1%


def test_three_percent_shift_is_found_and_not_equivalent():
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = _sim(rng, 10, 0.03)
        assert compare_samples(a, b)["significant"]
        assert tost(a, b, 0.01)["equivalent"] is False
        hl = hodges_lehmann(a, b)
        assert hl["ci_lo_s"] > 0.01e-6 and hl["ci_lo_s"] < 0.03e-6 < hl["ci_hi_s"]


def test_tiny_significant_difference_is_not_a_finding():
    # 0.02% between two configurations measured very precisely: significant, but equivalent
    rng = np.random.default_rng(3)
    a = 1e-6 * (1 + 1e-5 * rng.standard_normal(30))
    b = 1e-6 * (1.0002 + 1e-5 * rng.standard_normal(30))
    assert compare_samples(a, b)["significant"]
    assert tost(a, b, 0.01)["equivalent"] is True
    from mpitempo.stats.effects import verdict
    v = verdict(0.02, 0.02, (0.015, 0.025), True, 1e-6, None, None)
    assert "not a finding" in v
    assert verdict(0.02, 0.02, (0.015, 0.025), True, 1e-6, True, 1.0).startswith("equivalent within ±1%")
    assert verdict(3.0, 3.1, (2.5, 3.6), True, 1e-4, False, 1.0).startswith("B is 3.10% slower")


def test_modes_two_levels_and_unimodal():
    rng = np.random.default_rng(5)
    x = np.concatenate([0.55e-6 * (1 + 0.03 * rng.standard_normal(12)), 1.3e-6 * (1 + 0.03 * rng.standard_normal(8))])
    rng.shuffle(x)
    ms = modes(x)
    assert len(ms) == 2
    assert ms[0]["center_s"] == pytest.approx(0.55e-6, rel=0.05) and ms[0]["share"] == pytest.approx(0.6)
    assert ms[1]["center_s"] == pytest.approx(1.3e-6, rel=0.05) and sorted(ms[0]["runs"] + ms[1]["runs"]) == list(range(20))
    # unimodal lognormal run medians (5% spread): no split in 200 samples of 20 runs
    false = sum(len(modes(1e-6 * rng.lognormal(0, 0.05, 20))) > 1 for _ in range(200))
    assert false <= 4


def test_outlier_runs_and_runs_needed():
    x = [60.1e-6, 60.3e-6, 59.9e-6, 1.1e-3]
    o = outlier_runs(x)
    assert [r["index"] for r in o] == [3] and o[0]["ratio"] > 15
    assert outlier_runs([0.55e-6, 1.3e-6, 0.56e-6, 1.28e-6]) == []   # levels, not outliers
    # spread 10% of the centre: (1.96 * 1.2533 * 0.1 / 0.05)^2 = 24.1 -> 25 runs
    rng = np.random.default_rng(0)
    med = 1e-6 * (1 + 0.1 * rng.standard_normal(2000))
    assert 20 <= runs_needed(med, 0.05) <= 30
    assert runs_needed([1.0, 1.0001, 0.9999]) == 6      # the distribution-free CI needs 6 runs
    assert runs_needed([1.0, 2.0]) is None


# -- summary and compare ---------------------------------------------------------------------------

def _runs(root, cfg, meds, nrep=100, metas=None, counts=None, seed=0):
    rng = np.random.default_rng(seed)
    for i, m in enumerate(meds):
        n = counts[i] if counts else nrep
        write_run(root, f"{cfg}-{i:03d}", cfg, i, "delay", 8, m * (1 + 0.01 * rng.standard_normal(n)),
                  meta=(metas or {}).get(i))


def test_summary_flags_outlier_run_with_cause(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    shared = {"shared_cpu": {"shared": True, "oversubscribed": False, "min_cpu_share": 0.3}}
    # the co-scheduled run of issue 14: 1.1 ms, 40 rounds instead of 300, while its siblings give 60 us
    _runs(root, "A", [60.1e-6, 60.2e-6, 60.0e-6, 1.1e-3], nrep=300, metas={3: shared}, counts=[300, 300, 300, 40])
    code, out, err = cli("summary", root, "--json")
    assert code == 0, err
    r = json.loads(out)[0]
    assert "outlier_runs" in r["flags"] and "shared_cpu" in r["flags"]
    assert [o["run_index"] for o in r["outlier_runs"]] == [3]
    cause = r["outlier_runs"][0]["cause"]
    assert "shared a CPU" in cause and "cut short: 40 measurements" in cause
    code, out, err = cli("summary", root)
    assert "run 3 median" in out and "18x its siblings" in out and "likely cause" in out


def test_summary_flags_multimodal_and_oversubscribed(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(9)
    meds = [0.55e-6 if rng.random() < 0.5 else 1.3e-6 for _ in range(16)]
    meds[0], meds[1] = 0.55e-6, 1.3e-6
    _runs(root, "A", meds)
    over = {i: {"scheme": {"name": "barrier", "oversubscribed": True}} for i in range(6)}
    _runs(root, "B", [1e-6] * 6, metas=over)
    code, out, err = cli("summary", root, "--json")
    rows = {r["config"]: r for r in json.loads(out)}
    a, b = rows["A"], rows["B"]
    assert a["flags"] == ["multimodal"] and len(a["modes"]) == 2
    assert sum(m["share"] for m in a["modes"]) == pytest.approx(1.0)
    assert {round(m["center_s"] * 1e6, 2) for m in a["modes"]} == {0.55, 1.3}
    assert isinstance(a["runs_needed_5pct"], int) and a["runs_needed_5pct"] > 16
    assert "oversubscribed" in b["flags"] and b["modes"] is None
    code, out, err = cli("summary", root)
    assert "OVERSUB" in out and "correctness only" in out and "fall into 2 levels" in out


def test_summary_clean_campaign_has_no_flags(cli, tmp_path):
    root = make_campaign(tmp_path / "c", {"A": 1.0}, runs=8, nrep=60, seed=2, p_outlier=0)
    code, out, err = cli("summary", root, "--json")
    for r in json.loads(out):
        assert r["flags"] == [] and r["modes"] is None and r["outlier_runs"] == []


def test_compare_effect_equivalence_and_refusal(cli, tmp_path):
    root = make_campaign(tmp_path / "c", {"A": 1.0, "B": 1.0}, runs=10, nrep=200, seed=4, run_sd=0.001, p_outlier=0,
                         ops=("allreduce",), msizes=(8,))
    code, out, err = cli("compare", root, "--json", "--equivalence", "5%")
    assert code == 0, err
    r = json.loads(out)[0]
    for k in ("effect_s", "effect_ci_lo_s", "effect_ci_hi_s", "equivalent", "verdict", "flags_a", "flags_b"):
        assert k in r
    assert r["effect_ci_lo_s"] <= r["effect_s"] <= r["effect_ci_hi_s"]
    assert r["equivalent"] is True and r["verdict"].startswith("equivalent within ±5%")
    code, out, err = cli("compare", root, "--json")
    assert json.loads(out)[0]["equivalent"] is None
    # oversubscribed runs are refused unless asked
    over = tmp_path / "o"
    (over / "runs").mkdir(parents=True)
    _runs(over, "A", [1e-6] * 5)
    _runs(over, "B", [1e-6] * 5, metas={i: {"shared_cpu": {"shared": True, "oversubscribed": True}} for i in range(5)})
    code, out, err = cli("compare", over)
    assert code != 0 and "oversubscribed" in err and "--allow-oversubscribed" in err
    code, out, err = cli("compare", over, "--allow-oversubscribed", "--json")
    assert code == 0 and "oversubscribed" in json.loads(out)[0]["flags_b"]


@pytest.mark.parametrize("val,msg", [("x%", "is not a margin"), ("150%", "between 0% and 100%"), ("0", "between")])
def test_compare_bad_equivalence(cli, tmp_path, val, msg):
    root = make_campaign(tmp_path / "c", {"A": 1.0, "B": 1.0}, runs=3, nrep=20, ops=("allreduce",), msizes=(8,))
    code, out, err = cli("compare", root, "--equivalence", val)
    assert code != 0 and msg in err and len(err.strip().splitlines()) == 1


def test_report_shows_flags_verdicts_and_headlines(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    _runs(root, "A", [1.0e-6] * 6, seed=1)
    _runs(root, "B", [1.2e-6] * 5 + [9e-6], seed=2,
          metas={i: {"scheme": {"name": "barrier", "oversubscribed": True}} for i in range(6)})
    out = tmp_path / "r.html"
    code, _, err = cli("report", root, "-o", out)
    assert code == 0, err
    doc = out.read_text()
    assert "OVERSUB" in doc and "correctness only" in doc and "likely cause" in doc
    assert "class='headline'" in doc and "delay" in doc and "slower in 1" in doc
    assert "B is " in doc and "flagged: " in doc and "Hodges-Lehmann" in doc


def test_change_points_inside_a_run():
    from mpitempo.stats.changepoints import change_points, segments

    rng = np.random.default_rng(11)
    # 1.3 us for the first 35%, then 0.46 us (the long mpirun of issue 14), lognormal noise and spikes
    x = np.concatenate([1.3e-6 * rng.lognormal(0, 0.05, 3500), 0.46e-6 * rng.lognormal(0, 0.05, 6500)])
    x[rng.integers(0, x.size, 30)] *= 20
    seg = segments(x)
    assert len(seg) == 2 and abs(seg[0]["end"] - 3500) <= 20
    assert seg[0]["center_s"] == pytest.approx(1.3e-6, rel=0.03) and seg[1]["share"] == pytest.approx(0.65, abs=0.01)
    # one level with noise and spikes: no change point (200 series)
    false = sum(bool(change_points(1e-6 * rng.lognormal(0, 0.1, 2000))) for _ in range(200))
    assert false <= 4


def test_summary_flags_regime_change(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(3)
    for i in range(3):
        x = 1e-6 * rng.lognormal(0, 0.03, 2000)
        if i == 1:
            x[700:] *= 0.4
        write_run(root, f"A-{i:03d}", "A", i, "allreduce", 8, x)
    code, out, err = cli("summary", root, "--json")
    r = json.loads(out)[0]
    assert "regime_change" in r["flags"] and [g["run_index"] for g in r["regimes"]] == [1]
    assert len(r["regimes"][0]["segments"]) == 2
    code, out, err = cli("summary", root)
    assert "run 1 changed level while measuring" in out


def test_levels_explained_by_core_latency(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(4)
    meds, metas = [], {}
    for i in range(12):
        far = i % 3 != 0
        meds.append(1.3e-6 if far else 0.55e-6)
        rtt = (470e-9 if far else 100e-9) * (1 + 0.05 * rng.standard_normal())
        metas[i] = {"core_latency": {"before": {"ranks": [0, 1], "rounds": 2000, "rtt_median_s": rtt},
                                     "after": None}}
    _runs(root, "A", meds, metas=metas)
    code, out, err = cli("summary", root, "--json")
    r = json.loads(out)[0]
    # the probes fall into two strata that are the levels: one flag for one cause (core_latency)
    assert r["flags"] == ["core_latency"] and len(r["modes"]) == 2
    f = r["mode_factor"]
    assert f["name"] == "core_latency" and f["rho"] > 0.5 and f["p"] < 0.01
    assert r["modes"][0]["core_rtt_s"] == pytest.approx(100e-9, rel=0.1)
    code, out, err = cli("summary", root)
    assert "the levels follow the core-to-core latency" in out
