"""The test knob of the synthetic op (MPITEMPO_TEST_DELAY_STEP=K:F, docs/methods.md "Flag rates"):
a real mpirun of `delay` whose calls from the (K+1)-th on busy-wait F times --delay shows that
level change in its measurements and is flagged regime_change; a bad value is a clear error
before anything is measured."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.mpi


def test_step_knob_changes_the_level(cli, tmp_path, monkeypatch, build):
    monkeypatch.setenv("MPITEMPO_TEST_DELAY_STEP", "410:3")   # 10 warm-up calls + 400 measurements, then 3x
    out = tmp_path / "c"
    code, _, err = cli("run", "--ops", "delay", "--delay", "50us", "--nrep", "1000", "--warmup", "10",
                       "--mpiruns", "1", "-o", out, "--quiet", "--no-summary")
    assert code == 0, err
    import csv
    rows = list(csv.DictReader(open(next(out.glob("runs/*/measurements.csv")))))
    col = "runtime_s" if "runtime_s" in rows[0] else next(k for k in rows[0] if "runtime" in k)
    t = np.array([float(r[col]) for r in rows])
    first, second = np.median(t[:400]), np.median(t[400:])
    # lower bounds and the ratio only: a busy-wait can be stretched by other load (CI saw 248 µs for the
    # 150 µs level at load 10), never shortened
    assert first > 45e-6 and second > 140e-6 and second / first > 2.4, (first, second)
    monkeypatch.delenv("MPITEMPO_TEST_DELAY_STEP")
    code, js, err = cli("summary", out, "--json")
    assert code == 0, err
    assert "regime_change" in json.loads(js)[0]["flags"]


def test_step_knob_bad_value(cli, tmp_path, monkeypatch, build):
    monkeypatch.setenv("MPITEMPO_TEST_DELAY_STEP", "x:2")
    code, out, err = cli("run", "--ops", "delay", "--nrep", "20", "--mpiruns", "1", "-o", tmp_path / "c",
                         "--quiet", "--no-summary")
    assert code != 0
    assert "MPITEMPO_TEST_DELAY_STEP 'x:2'" in out + err and "K:F" in out + err
