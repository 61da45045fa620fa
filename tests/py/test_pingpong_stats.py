"""Statistics of the ping-pong method (Luecke et al. 2009, section 3.4), checked against
numpy/scipy, hand-computed values and the paper's own Appendix C numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from mpitempo.stats import pingpong as stats
from mpitempo.present.pingpong import fe

finite_times = st.lists(st.floats(min_value=1e-9, max_value=1e-2, allow_nan=False), min_size=1, max_size=200)


def test_summary_by_hand():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert s.n == 5 and s.min_s == 1 and s.max_s == 10 and s.median_s == 3 and s.mean_s == 4
    assert s.variance_s2 == pytest.approx(((9 + 4 + 1 + 0 + 36) / 4))  # sample variance: 12.5
    assert s.std_s == pytest.approx(math.sqrt(12.5))
    assert s.cv == pytest.approx(math.sqrt(12.5) / 4)
    assert s.se_s == pytest.approx(math.sqrt(12.5) / math.sqrt(5))
    assert s.rse == pytest.approx(math.sqrt(12.5) / math.sqrt(5) / 4)


def test_single_value_and_empty():
    s = stats.summarize([2e-6])
    assert s.variance_s2 == 0 and s.std_s == 0 and s.se_s == 0 and s.median_s == 2e-6
    e = stats.summarize([])
    assert e.n == 0 and math.isnan(e.mean_s)


@given(finite_times)
@settings(max_examples=200, deadline=None)
def test_summary_matches_numpy_scipy(t):
    s = stats.summarize(t)
    a = np.asarray(t)
    assert s.median_s == np.median(a) and s.min_s == a.min() and s.max_s == a.max()
    assert s.mean_s == pytest.approx(np.mean(a))
    if len(t) > 1:
        assert s.variance_s2 == pytest.approx(np.var(a, ddof=1), rel=1e-9, abs=1e-30)
        assert s.se_s == pytest.approx(sst.sem(a), rel=1e-9, abs=1e-30)
        assert s.cv == pytest.approx(sst.variation(a, ddof=1), rel=1e-9, abs=1e-15)


def test_appendix_c_numbers():
    """Appendix C: 8 B, min 1.2451 us -> 6.425 MB/s, max 570.8072 -> 0.01402 MB/s;
    std 0.3825, mean 1.3227, n 8388608 -> cv 28.92 %, se 0.1321E-03, rse 0.9985E-04."""
    assert stats.rate_mb_s(8, 1.2451e-6) == pytest.approx(6.425, abs=5e-4)
    assert stats.rate_mb_s(8, 1.3113e-6) == pytest.approx(6.101, abs=5e-4)
    assert stats.rate_mb_s(8, 570.8072e-6) == pytest.approx(0.01402, abs=5e-6)
    std, mean, n = 0.3825, 1.3227, 8388608
    assert fe(std / mean * 100) == "0.2892E+02"
    assert fe(std / math.sqrt(n)) == "0.1321E-03"
    assert fe(std / math.sqrt(n) / mean) == "0.9984E-04"  # the paper's 0.9985 comes from unrounded inputs


def test_rates_zero_bytes_and_bad_times():
    assert stats.rate_mb_s(0, 1e-6) == 0
    assert math.isnan(stats.rate_mb_s(8, 0.0)) and math.isnan(stats.rate_mb_s(8, float("nan")))
    r = stats.rates(1_000_000, stats.summarize([1.0, 2.0, 4.0]))
    assert r == {"rate_min_mb_s": 1.0, "rate_median_mb_s": 0.5, "rate_mean_mb_s": pytest.approx(1 / (7 / 3)),
                 "rate_max_mb_s": 0.25}


def test_filter_by_hand():
    t = [1.0, 1.0, 2.0, 2.0, 2.0, 4.0, 4.1, 100.0]  # median 2.0, limit 4.0
    kept, removed = stats.filter_cut(t, 2.0)
    assert list(kept) == [1.0, 1.0, 2.0, 2.0, 2.0, 4.0] and removed == 2
    kept, removed = stats.filter_cut(t, 1.5)
    assert removed == 3


@pytest.mark.parametrize("c", [1.0, 0.5, 0, -2, float("nan"), float("inf")])
def test_cut_coef_must_exceed_one(c):
    with pytest.raises(ValueError, match="must be > 1"):
        stats.filter_cut([1.0, 2.0], c)


@given(finite_times, st.floats(min_value=1.0001, max_value=10))
@settings(max_examples=300, deadline=None)
def test_filter_properties(t, c):
    kept, removed = stats.filter_cut(t, c)
    a = np.asarray(t)
    limit = c * np.median(a)
    # never removes a value <= cut_coef x median, always removes the others
    assert np.count_nonzero(a <= limit) == kept.size
    assert kept.size + removed == a.size
    assert np.all(kept <= limit)
    # at least half the data survives (the median and below)
    assert kept.size >= (a.size + 1) // 2


def test_histogram_counts_and_overflow():
    h = stats.histogram([0.0, 0.1, 0.2, 0.3, 0.9, 5.0], bins=4, upper=1.0)
    assert h["edges"] == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    assert h["counts"] == [3, 1, 0, 1] and h["over"] == 1 and h["upper"] == 1.0


@given(finite_times, st.integers(min_value=1, max_value=50))
@settings(max_examples=200, deadline=None)
def test_histogram_keeps_every_value(t, bins):
    h = stats.histogram(t, bins=bins)
    assert sum(h["counts"]) + h["over"] == len(t) and h["over"] == 0
    med = float(np.median(t))
    h = stats.histogram(t, bins=bins, upper=2 * med)
    assert sum(h["counts"]) + h["over"] == len(t)


def test_histogram_of_values_an_ulp_apart():
    """Found by hypothesis: two values 2 ulps apart made numpy refuse to cut the range into bins."""
    h = stats.histogram([1.0000000000000003e-09, 1e-09], bins=2)
    assert sum(h["counts"]) == 2 and h["over"] == 0


def test_weighted_histogram():
    h = stats.histogram([1.0, 2.0, 3.0], bins=2, upper=3.0, weights=[10, 5, 7])
    assert h["counts"] == [10, 5] and h["over"] == 7


def test_frequency_table_exact():
    f = stats.frequency_table([30, 20, 30, 30, 40], per_tick_s=1e-9 / 2)
    assert [c for _, c in f] == [1, 3, 1]
    assert [v for v, _ in f] == pytest.approx([10e-9, 15e-9, 20e-9])


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 50)), min_size=1, max_size=40, unique_by=lambda x: x[0]))
@settings(max_examples=200, deadline=None)
def test_weighted_summary_equals_expanded(pairs):
    vals = [v * 1e-9 for v, _ in pairs]
    cnts = [c for _, c in pairs]
    w = stats.weighted_summary(vals, cnts)
    s = stats.summarize(np.repeat(vals, cnts))
    assert w.n == s.n and w.min_s == s.min_s and w.max_s == s.max_s
    assert w.median_s == pytest.approx(s.median_s)
    assert w.mean_s == pytest.approx(s.mean_s)
    assert w.variance_s2 == pytest.approx(s.variance_s2, rel=1e-6, abs=1e-30)


@pytest.mark.parametrize("x,s", [(0.1463, "0.1463E+00"), (0.3825, "0.3825E+00"), (28.92, "0.2892E+02"),
                                 (1.321e-4, "0.1321E-03"), (6.425, "0.6425E+01"), (0.99996, "0.1000E+01"),
                                 (0.0, "0.0000E+00"), (-2.5, "-0.2500E+01")])
def test_fortran_e_format(x, s):
    assert fe(x) == s
