"""Statistics against textbook values, scipy, and simulation with fixed seeds."""
import math

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from mpitempo.stats.compare import compare_samples, holm, mann_whitney, min_p, min_runs_for, stars
from mpitempo.analysis.filtering import filtered_view
from mpitempo.stats.outliers import (Filter, cutcoef_keep, outlier_line, tukey_classify, tukey_fences, tukey_keep)
from mpitempo.stats.describe import describe, mean_ci, median_ci, median_ci_ranks, runs_needed
from mpitempo.io.synthetic import sample_runtimes

X = [1.0, 2.0, 3.0, 4.0, 100.0]


def test_describe_textbook():
    d = describe(X)
    assert d["n"] == 5 and d["min_s"] == 1 and d["max_s"] == 100
    assert (d["q1_s"], d["median_s"], d["q3_s"]) == (2.0, 3.0, 4.0)
    assert d["mean_s"] == 22.0
    assert d["std_s"] == pytest.approx(math.sqrt(7610 / 4))          # sum of squared deviations / (n - 1)
    assert d["se_s"] == pytest.approx(math.sqrt(7610 / 4) / math.sqrt(5))
    assert d["cv"] == pytest.approx(d["std_s"] / 22) and d["rse"] == pytest.approx(d["se_s"] / 22)
    assert describe([])["n"] == 0 and describe([5.0])["std_s"] is None


def test_tukey_textbook():
    assert tukey_fences(X) == (-1.0, 7.0)                  # Q1 - 1.5 IQR, Q3 + 1.5 IQR with IQR = 2
    assert tukey_keep(X).tolist() == [True] * 4 + [False]
    assert tukey_classify(X).tolist() == [0, 0, 0, 0, 2]   # 100 > Q3 + 3 IQR = 10: severe
    assert tukey_classify([1, 2, 3, 4, 8.5]).tolist() == [0, 0, 0, 0, 1]   # 7 < 8.5 <= 10: mild
    assert tukey_keep(X, k=50).all()


def test_cutcoef_textbook():
    assert cutcoef_keep([1, 1, 1, 1, 2, 3]).tolist() == [True] * 5 + [False]   # x <= 2 x median
    assert cutcoef_keep([1, 1, 1, 1, 2, 3], 3.0).all()
    with pytest.raises(Exception, match="cut.coef"):
        Filter("cutcoef", cut_coef=1.0)


@given(st.lists(st.floats(0.1, 1e3, allow_nan=False), min_size=1, max_size=200),
       st.floats(0.1, 5.0))
@settings(max_examples=200, deadline=None)
def test_tukey_keeps_everything_inside_the_fences(xs, k):
    x = np.array(xs)
    lo, hi = tukey_fences(x, k)
    keep = tukey_keep(x, k)
    assert keep[(x >= lo) & (x <= hi)].all()
    assert not keep[(x < lo) | (x > hi)].any()
    q1, q3 = np.quantile(x, [0.25, 0.75])
    assert keep[(x >= q1) & (x <= q3)].all()              # the middle half is never removed
    cls = tukey_classify(x, k)
    assert ((cls != 0) == ~keep).all()


@given(st.lists(st.floats(0.1, 1e3, allow_nan=False), min_size=1, max_size=200), st.floats(1.01, 10))
@settings(max_examples=200, deadline=None)
def test_cutcoef_properties(xs, c):
    x = np.array(xs)
    keep = cutcoef_keep(x, c)
    assert keep[x <= np.median(x)].all()                  # the lower half always stays
    assert (x[keep] <= c * np.median(x)).all()


@pytest.mark.parametrize("filt", [Filter("tukey"), Filter("tukey", k=3.0), Filter("cutcoef"),
                                  Filter("cutcoef", cut_coef=1.5), Filter("none")])
def test_sql_filter_equals_numpy(filt):
    rng = np.random.default_rng(7)
    con = duckdb.connect()
    con.execute("CREATE TABLE meas (run_no INT, op VARCHAR, msize BIGINT, nprocs INT, "
                "runtime_s DOUBLE, valid BOOLEAN)")
    ref = {}
    for run in range(3):
        for msize in (8, 64):
            x = sample_runtimes(rng, 97, 1e-6 * (1 + msize / 64), p_outlier=0.05)
            valid = rng.random(97) > 0.05
            con.executemany("INSERT INTO meas VALUES (?, 'op', ?, 2, ?, ?)",
                            [(run, msize, float(v), bool(ok)) for v, ok in zip(x, valid)])
            xv = x[valid]
            from mpitempo.stats.outliers import keep_mask
            ref[(run, msize)] = np.sort(xv[keep_mask(xv, filt)])
    src = filtered_view(con, filt)
    for (run, msize), want in ref.items():
        got = con.execute(f"SELECT runtime_s FROM {src} WHERE keep AND run_no = ? AND msize = ? ORDER BY 1",
                          [run, msize]).fetchnumpy()["runtime_s"]
        np.testing.assert_array_equal(got, want)


def test_outlier_line():
    assert outlier_line(3, 100, 2, 1) == "Found 3 outliers among 100 measurements (3.00%): 2 mild, 1 severe"


def test_median_ci_order_statistics():
    assert median_ci_ranks(5) is None and runs_needed() == 6        # 1 - 2/2^5 = 93.75% < 95%
    assert median_ci_ranks(6) == (1, 6)
    assert median_ci_ranks(10) == (2, 9)                            # 1 - 2 x 11/1024 = 97.9%
    assert median_ci_ranks(30) == (10, 21)
    ci = median_ci(np.arange(10.0))
    assert (ci["lo_s"], ci["hi_s"]) == (1.0, 8.0) and ci["coverage"] == pytest.approx(1 - 22 / 1024)
    assert median_ci([1.0, 2, 3])["need_runs"] == 6 and median_ci([1.0, 2, 3])["lo_s"] is None
    # coverage by simulation: the true median (1) lies inside in >= 95% of samples
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(2000):
        c = median_ci(rng.lognormal(0, 1, 12))
        hits += c["lo_s"] <= 1.0 <= c["hi_s"]
    assert hits / 2000 >= 0.94


def test_mean_ci_against_scipy():
    x = np.array(X)
    lo, hi = mean_ci(x)
    want = sps.t.interval(0.95, 4, loc=22, scale=sps.sem(x))
    assert (lo, hi) == pytest.approx(want)


def test_mann_whitney_equals_scipy():
    a = [1.1, 2.3, 0.7, 4.5, 3.3, 2.2, 1.9]
    b = [3.1, 4.4, 5.0, 2.8, 6.1, 3.9]
    for alt in ("two-sided", "less", "greater"):
        u, p = mann_whitney(a, b, alt)
        ref = sps.mannwhitneyu(a, b, alternative=alt)
        assert (u, p) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    # textbook: 3 vs 3 with complete separation, exact: U = 0 and p = 2/20 two-sided, 1/20 one-sided
    assert mann_whitney([1, 2, 3], [4, 5, 6]) == (0.0, pytest.approx(0.1))
    assert mann_whitney([1, 2, 3], [4, 5, 6], "less")[1] == pytest.approx(0.05)
    assert mann_whitney([1, 1], [1, 1]) == (2.0, 1.0)
    assert mann_whitney([], [1.0]) == (None, None)


def test_min_p_and_runs():
    assert min_p(3, 3) == pytest.approx(0.1) and min_p(3, 3, "less") == pytest.approx(0.05)
    assert min_p(5, 5) == pytest.approx(2 / 252)
    assert min_runs_for(0.05) == 4 and min_runs_for(0.01) == 5


def test_holm_and_stars():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, None]) == [0.5, None]
    assert [stars(p) for p in (0.0005, 0.001, 0.005, 0.05, 0.051, None)] == ["***", "***", "**", "*", "", ""]


def test_compare_samples_delta():
    r = compare_samples([1.0, 1.0, 1.0], [1.1, 1.1, 1.1])
    assert r["delta_pct"] == pytest.approx(10.0) and r["runs_a"] == 3 and r["min_p"] == pytest.approx(0.1)
    assert not r["significant"] and r["stars"] == ""


def _run_medians(rng, nruns, factor, nrep=100):
    """Per-mpirun medians of synthetic runs with a per-run effect (realistic shape)."""
    return np.array([np.median(sample_runtimes(rng, nrep, 1e-6 * factor * np.exp(rng.normal(0, 0.01))))
                     for _ in range(nruns)])


def test_simulation_detects_three_percent():
    rng = np.random.default_rng(2024)
    detected = sum(compare_samples(_run_medians(rng, 30, 1.0), _run_medians(rng, 30, 1.03))["significant"]
                   for _ in range(20))
    assert detected == 20


def test_simulation_false_positive_rate():
    rng = np.random.default_rng(11)
    trials = 200
    fp = sum(compare_samples(_run_medians(rng, 30, 1.0, 50), _run_medians(rng, 30, 1.0, 50))["significant"]
             for _ in range(trials))
    assert fp / trials <= 0.08, fp
