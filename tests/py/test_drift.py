"""The drift study (stats/drift.py) on hand-made offsets, and `mpitempo drift`'s bad input."""
from __future__ import annotations

import numpy as np
import pytest

from mpitempo.stats.drift import drift_study, linear_fit, window_fits


def test_linear_fit_by_hand():
    f = linear_fit([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])           # y = 2t + 1 exactly
    assert f["slope"] == pytest.approx(2) and f["intercept_s"] == pytest.approx(1) and f["r2"] == pytest.approx(1)
    f = linear_fit([0, 1, 2, 3], [0.0, 1.0, 0.0, 1.0])            # slope 0.2, R² = 0.2
    assert f["slope"] == pytest.approx(0.2) and f["r2"] == pytest.approx(0.2)
    assert linear_fit([0, 1, 2], [5e-6, 5e-6, 5e-6])["r2"] is None  # no variance: nothing to explain


def test_windows_and_when_linear_stops_holding():
    t = np.arange(0, 100.0, 0.5)
    linear = 3e-6 * t                                             # 3 ppm, exactly linear
    curved = 1e-9 * (t - 50) ** 2                                 # drift that changes sign at 50 s
    assert len(window_fits(t, linear, 10)) == 10
    res = drift_study(t, {1: linear, 2: curved}, [10, 100])
    w10, w100 = res["windows"]
    assert w10["fits"] == 20 and w100["fits"] == 2
    assert res["whole"][1]["drift_ppm"] == pytest.approx(3) and res["whole"][2]["r2"] < 0.1
    assert res["linear_holds_s"] == 10                            # median R² over 10 s windows >= 0.9
    assert drift_study(t, {1: np.zeros_like(t)}, [10])["linear_holds_s"] is None


def test_a_window_of_the_whole_duration_holds_every_sample():
    """Samples at 0, 0.5, ..., 10 s; a 10 s window ('all') is [0, 10], not [0, 10): its fit is the
    whole-run fit (the last sample was left out); a 5 s window splits them 10 + 11."""
    t = np.arange(0, 10.25, 0.5)
    y = 1e-6 * t + 1e-9 * np.sin(t)
    (f,) = window_fits(t, y, 10)
    assert f["points"] == t.size and f["r2"] == pytest.approx(linear_fit(t, y)["r2"])
    assert [f["points"] for f in window_fits(t, y, 5)] == [10, 11]


def test_default_windows_fit_the_duration():
    """The default list keeps the lengths between 3 sample intervals and the duration, and 'all' once."""
    from mpitempo.cmd_drift import _windows

    assert _windows(None, 60.0, 0.6, "60s") == [10.0, 20.0, 60.0]     # 1 s < 3 x 0.6 s; 60 s is 'all'
    assert _windows(None, 5.0, 0.05, "5s") == [1.0, 5.0]
    assert _windows("1s,all", 5.0, 0.05, "5s") == [1.0, 5.0]


def test_bad_input(cli):
    code, out, err = cli("drift", "--duration", "900s")
    assert code != 0 and "does not fit in --timeout 600 s" in err
    code, out, err = cli("drift", "--duration", "10s", "--interval", "20s")
    assert code != 0 and "longer than --duration" in err
    code, out, err = cli("drift", "--duration", "ten")
    assert code != 0 and "invalid --duration 'ten'" in err
    code, out, err = cli("drift", "--duration", "100s", "--interval", "1ms")
    assert code != 0 and "too many" in err
