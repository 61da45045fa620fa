"""One describe and one cut filter: the ping-pong statistics (Luecke et al. 2009) are describe()
with the ping-pong conventions, and filter_cut is cutcoef_keep."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpitempo.stats import pingpong as pp
from mpitempo.stats.describe import STAT_KEYS, describe, median, quantile
from mpitempo.stats.outliers import cutcoef_keep

times = st.lists(st.floats(min_value=1e-9, max_value=1e-2, allow_nan=False), min_size=0, max_size=200)
SHARED = ("n", "min_s", "median_s", "mean_s", "max_s", "std_s", "cv", "se_s", "rse")


@given(times)
@settings(max_examples=300, deadline=None)
def test_pingpong_summary_is_describe(t):
    s = pp.summarize(t).to_dict()
    d = describe(t)                    # summary/compare convention: None when undefined
    if len(t) >= 2:
        for k in SHARED:
            assert s[k] == d[k], k     # the same computation: equal, not just close
        assert s["variance_s2"] == pytest.approx(d["std_s"] ** 2, rel=1e-12)
        assert math.sqrt(s["variance_s2"]) == s["std_s"]
        assert s["variance_s2"] == pytest.approx(np.var(t, ddof=1), rel=1e-9, abs=1e-30)
    elif len(t) == 1:                  # ping-pong: spread 0; summary: undefined
        assert (s["variance_s2"], s["std_s"], s["se_s"], s["cv"], s["rse"]) == (0, 0, 0, 0, 0)
        assert (d["std_s"], d["se_s"], d["cv"], d["rse"]) == (None, None, None, None)
        assert s["min_s"] == s["median_s"] == s["mean_s"] == s["max_s"] == d["median_s"] == t[0]
    else:
        assert s["n"] == d["n"] == 0
        assert all(math.isnan(s[k]) for k in s if k != "n")
        assert all(d[k] is None for k in d if k != "n")


def test_output_keys_unchanged():
    assert tuple(describe([1.0, 2.0])) == STAT_KEYS
    assert tuple(describe([])) == STAT_KEYS
    assert tuple(pp.summarize([1.0]).to_dict()) == ("n", "min_s", "median_s", "mean_s", "max_s", "variance_s2",
                                                    "std_s", "cv", "se_s", "rse")


def test_zero_mean_conventions():
    assert describe([-1.0, 1.0])["cv"] is None and describe([-1.0, 1.0])["rse"] is None
    s = pp.summarize([-1.0, 1.0])
    assert math.isnan(s.cv) and math.isnan(s.rse) and s.variance_s2 == 2.0


@given(times)
@settings(max_examples=200, deadline=None)
def test_describe_matches_numpy(t):
    d = describe(t)
    if not t:
        return
    a = np.asarray(t)
    assert d["median_s"] == np.median(a) == median(a)
    assert [d["q1_s"], d["q3_s"]] == list(np.quantile(a, [0.25, 0.75])) == quantile(a, [0.25, 0.75])
    assert d["mean_s"] == np.mean(a) and d["min_s"] == a.min() and d["max_s"] == a.max()


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 50)), min_size=1, max_size=40,
                unique_by=lambda x: x[0]))
@settings(max_examples=200, deadline=None)
def test_weighted_describe_equals_expanded(pairs):
    vals = np.array([v * 1e-9 for v, _ in pairs])
    cnts = np.array([c for _, c in pairs])
    w = describe(vals, weights=cnts)
    e = describe(np.repeat(vals, cnts))
    assert w["n"] == e["n"]
    for k in STAT_KEYS[1:]:
        if e[k] is None:
            assert w[k] is None, k
        else:
            # a constant sample: numpy's std is a few ulps of the mean, the weighted one exactly 0
            tol = 1e-12 if k in ("cv", "rse") else 1e-18
            assert w[k] == pytest.approx(e[k], rel=1e-9, abs=tol), k


@given(st.lists(st.floats(min_value=1e-9, max_value=1e-2, allow_nan=False), min_size=0, max_size=200),
       st.floats(min_value=1.0001, max_value=10))
@settings(max_examples=300, deadline=None)
def test_cut_filter_keeps_exactly_t_le_c_median(t, c):
    a = np.asarray(t, dtype=float)
    kept, removed = pp.filter_cut(t, c)
    want = a[a <= c * np.median(a)] if a.size else a
    np.testing.assert_array_equal(kept, want)           # the same values, in the same order
    assert removed == a.size - want.size
    np.testing.assert_array_equal(kept, a[cutcoef_keep(a, c)])


def test_describe_rejects_mismatched_weights():
    with pytest.raises(ValueError, match="weights"):
        describe([1.0, 2.0], weights=[1])
