"""Cliff detection and the prediction of unmeasured sizes (mpitempo.analysis.cliffs / .predict), on
synthetic data: a known injected cliff is found where it was put, smooth data has none (hypothesis),
and the algorithm predicted at held-out sizes is the one the synthetic truth says."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpitempo.analysis import cliffs, predict


def _series(sizes, a, b, noise, rng, runs=6, jump_at=None, factor=1.0):
    pts = []
    for m in sizes:
        t = a + b * m
        if jump_at is not None and m >= jump_at:
            t *= factor
        pts.append((m, list(t * np.exp(rng.normal(0, noise, runs)))))
    return pts


SIZES = [2 ** i for i in range(3, 21)]


@settings(max_examples=150, deadline=None)
@given(a=st.floats(1e-7, 1e-5), b=st.floats(0, 1e-9), noise=st.floats(0, 0.03), lo=st.integers(0, 8),
       n=st.integers(3, 10), seed=st.integers(0, 2 ** 31))
def test_no_cliff_on_smooth_data(a, b, noise, lo, n, seed):
    pts = _series(SIZES[lo:lo + n], a, b, noise, np.random.default_rng(seed))
    assert cliffs.find(pts) == []


@settings(max_examples=150, deadline=None)
@given(a=st.floats(1e-7, 1e-5), b=st.floats(0, 1e-9), noise=st.floats(0, 0.03), lo=st.integers(0, 8),
       n=st.integers(3, 10), where=st.integers(1, 9), factor=st.floats(4, 30), seed=st.integers(0, 2 ** 31))
def test_injected_cliff_is_found_where_it_was_put(a, b, noise, lo, n, where, factor, seed):
    sizes = SIZES[lo:lo + n]
    where = min(where, len(sizes) - 1)
    pts = _series(sizes, a, b, noise, np.random.default_rng(seed), jump_at=sizes[where], factor=factor)
    found = cliffs.find(pts)
    assert [(c.x_before, c.x) for c in found] == [(sizes[where - 1], sizes[where])]
    assert found[0].factor > 2


def test_cliff_over_process_counts_and_the_algorithm_behind_it():
    rng = np.random.default_rng(1)
    samples = {}
    # over process counts: linear growth, then a 10x jump at 128 (Open MPI PR 8186's shape)
    for p in (16, 32, 64, 127, 128):
        t = 1e-6 * (1 + p / 64) * (10 if p >= 128 else 1)
        samples[("default", "bcast", 4, p)] = list(t * np.exp(rng.normal(0, 0.02, 8)))
        # two forced algorithms: the default runs "binomial" below 128 and "linear" from it on
        samples[("bcast.binomial", "bcast", 4, p)] = list(1e-6 * (1 + p / 64) * np.exp(rng.normal(0, 0.02, 8)))
        samples[("bcast.linear", "bcast", 4, p)] = list(1e-5 * (1 + p / 64) * np.exp(rng.normal(0, 0.02, 8)))
    found = [c for c in cliffs.campaign_cliffs(samples, {128: True}) if c["algorithm"] == "default"]
    assert len(found) == 1
    c = found[0]
    assert (c["axis"], c["msize"], c["before"], c["at"]) == ("nprocs", 4, 127, 128)
    assert c["default_matches_before"] == "binomial" and c["default_matches_at"] == "linear"
    assert c["oversubscribed"] is True and 8 < c["factor"] < 12
    text = cliffs.describe(c)
    assert "from 127 to 128 ranks" in text and "binomial before and linear at it" in text and "OVERSUBSCRIBED" in text
    # the forced algorithms themselves are smooth
    assert not [c for c in cliffs.campaign_cliffs(samples) if c["algorithm"] != "default"]


def test_fit_linear_is_exact_on_a_line():
    a, b, r = cliffs.fit_linear([8, 64, 512], [1e-6 + 8e-10, 1e-6 + 64e-10, 1e-6 + 512e-10])
    assert a == pytest.approx(1e-6, rel=1e-6) and b == pytest.approx(1e-10, rel=1e-6) and r < 1e-9


def _curves(sizes, rng, noise=0.01):
    # "tree": low latency, high per-byte cost; "ring": high latency, low per-byte cost; they cross at 8 KiB
    return {"tree": [(m, (1e-6 + 1e-9 * m) * np.exp(rng.normal(0, noise))) for m in sizes],
            "ring": [(m, (5e-6 + 0.5e-9 * m) * np.exp(rng.normal(0, noise))) for m in sizes]}


def test_prediction_at_unmeasured_sizes():
    cur = _curves([2 ** i for i in range(3, 21, 2)], np.random.default_rng(2))   # 8, 32, 128, ...
    assert predict.best(cur, 2 ** 6)[0] == "tree"         # 64 B: not measured
    assert predict.best(cur, 2 ** 18)[0] == "ring"        # 256 KiB: not measured
    t = predict.predict(cur, 2 ** 12)["tree"]
    assert t == pytest.approx(1e-6 + 1e-9 * 4096, rel=0.05)


def test_leave_one_out_error():
    recs = predict.leave_one_out(_curves([2 ** i for i in range(3, 21)], np.random.default_rng(3)))
    s = predict.summarize(recs)
    assert s["points"] == 18
    # the crossing point is where a held-out size can be mispredicted; elsewhere it is right
    assert s["hit_rate"] >= 0.85 and s["regret_max_pct"] < 20 and s["abs_time_err_median_pct"] < 5
    wrong = [r for r in recs if not r["hit"]]
    assert all(2 ** 11 <= r["msize"] <= 2 ** 14 for r in wrong)
    assert predict.summarize([]) == {"points": 0}
