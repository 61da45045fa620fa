"""The ReFrame check integrations/reframe/mpitempo_history_check.py under ReFrame's own runner: on a store
with a regression in its latest entries the check fails on its performance reference (regressions = 0)
and reports how many and how large; on a store without one it passes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpitempo.history.synthetic import make_history

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "integrations" / "reframe" / "mpitempo_history_check.py"
SETTINGS = ROOT / "integrations" / "reframe" / "settings.py"
REFRAME = shutil.which("reframe", path=str(Path(sys.executable).parent)) or shutil.which("reframe")
pytestmark = pytest.mark.skipif(REFRAME is None, reason="ReFrame is not installed (pip install '.[test]')")


def reframe(tmp, *args):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    report = tmp / "report.json"
    r = subprocess.run([REFRAME, "-C", str(SETTINGS), "-c", str(CHECK), "-r", "--prefix", str(tmp / "rfm"),
                        "--report-file", str(report), *args], cwd=tmp, env=env, capture_output=True, text=True,
                       timeout=900)
    return r, (json.loads(report.read_text()) if report.exists() else None)


def perf(rep):
    tc = rep["runs"][0]["testcases"][0]
    return tc, {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("rfmh")
    reg = make_history(d / "a", nights=12, change_at=8, factor=1.12, msizes=(8,))
    flat = make_history(d / "b", nights=12, change_at=None, msizes=(8,))
    for name, camps in (("reg", reg), ("flat", flat)):
        assert main(["ingest", *map(str, camps), "--db", str(d / f"{name}.duckdb")]) == 0
    return d


def test_regression_fails_the_check(stores, tmp_path):
    r, rep = reframe(tmp_path, "-S", f"db={stores / 'reg.duckdb'}", "-S", "latest=5")
    assert r.returncode != 0 and rep is not None, r.stdout[-2000:]
    tc, pv = perf(rep)
    assert tc["result"] == "fail" and tc["fail_phase"] == "performance", tc.get("fail_reason")
    assert pv["regressions"][0] == 1 and 8 < pv["worst_regression"][0] < 16


def test_no_regression_passes(stores, tmp_path):
    r, rep = reframe(tmp_path, "-S", f"db={stores / 'flat.duckdb'}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    _, pv = perf(rep)
    assert pv["regressions"][0] == 0 and pv["change_points"][0] == 0


def test_bad_store_fails_sanity(tmp_path):
    r, rep = reframe(tmp_path, "-S", f"db={tmp_path / 'missing.duckdb'}")
    tc, _ = perf(rep)
    assert r.returncode != 0 and tc["fail_phase"] == "sanity"
