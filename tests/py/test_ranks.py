"""stats.ranks (Spearman, Kruskal-Wallis, chi-square tail without scipy.stats) agrees with scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from mpitempo.stats import ranks

values = st.lists(st.integers(0, 6).map(float) | st.floats(0.1, 10, allow_nan=False), min_size=2, max_size=40)


@settings(max_examples=200, deadline=None)
@given(values)
def test_rankdata_agrees_with_scipy(x):
    assert np.array_equal(ranks.rankdata(x), sps.rankdata(x))


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=200, deadline=None)
@given(st.integers(3, 40).flatmap(lambda n: st.tuples(st.lists(st.integers(0, 5).map(float), min_size=n, max_size=n),
                                                      st.lists(st.floats(0, 1e-5), min_size=n, max_size=n))))
def test_spearman_agrees_with_scipy(xy):
    x, y = xy
    want = sps.spearmanr(x, y)[0]
    got = ranks.spearman_rho(x, y)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 8).map(float) | st.floats(0, 3), min_size=1, max_size=12), min_size=2,
                max_size=5))
def test_kruskal_agrees_with_scipy(groups):
    allx = np.concatenate([np.asarray(g) for g in groups])
    if np.all(allx == allx[0]):
        assert math.isnan(ranks.kruskal(*groups)[1])
        return
    want = sps.kruskal(*groups)
    h, p = ranks.kruskal(*groups)
    assert h == pytest.approx(want.statistic, rel=1e-10, abs=1e-12)
    assert p == pytest.approx(want.pvalue, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 31])
def test_chi2_sf_agrees_with_scipy(df):
    for x in [1e-6, 0.01, 0.5, 1, 2, 5, 10, 30, 80, 200]:
        assert ranks.chi2_sf(x, df) == pytest.approx(sps.chi2.sf(x, df), rel=1e-10, abs=1e-300)
    assert ranks.chi2_sf(0, 3) == 1.0


def test_kruskal_refuses_fewer_than_two_groups():
    with pytest.raises(ValueError):
        ranks.kruskal([1.0, 2.0])


def test_summary_imports_no_scipy(tmp_path):
    """`summary` (and the flags it computes: runs needed, core-latency factor of multimodal groups)
    starts without scipy.stats, which costs about a second of start-up (bench/cli_latency.py)."""
    import subprocess
    import sys

    from mpitempo.io.synthetic import make_campaign

    camp = make_campaign(tmp_path / "c", {"A": 1.0, "B": 1.05}, runs=6, ops=("allreduce",), msizes=(8,), nrep=50)
    code = ("import sys\nfrom mpitempo.cli import main\n"
            "from mpitempo.analysis.flags import core_latency_factor\n"
            "r = core_latency_factor([1.0, 1.1, 2.0, 2.1, 2.2, 1.05], [1e-7, 1.1e-7, 4e-7, 4.2e-7, 4.1e-7, 1e-7],"
            " [0, 0, 1, 1, 1, 0])\n"
            "assert r is not None and r['rho'] > 0.5 and r['p'] < 0.1, r\n"
            f"try:\n    main(['summary', {str(camp)!r}])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "bad = sorted(m for m in sys.modules if m.startswith('scipy'))\n"
            "assert not bad, bad[:5]\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
