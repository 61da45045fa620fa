"""The ReFrame check shipped in integrations/reframe runs under ReFrame's own runner on this machine:
its performance variables are the medians and CI bounds of `mpitempo summary --json`, and a
reference the medians miss fails the check."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "integrations" / "reframe" / "mpitempo_check.py"
SETTINGS = ROOT / "integrations" / "reframe" / "settings.py"
REFRAME = shutil.which("reframe", path=str(Path(sys.executable).parent)) or shutil.which("reframe")
pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(REFRAME is None, reason="ReFrame is not installed (pip install '.[test]')")]


def reframe(tmp, *args):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    report = tmp / "report.json"
    r = subprocess.run([REFRAME, "-C", str(SETTINGS), "-c", str(CHECK), "-r", "--prefix", str(tmp / "rfm"),
                        "--report-file", str(report), "-S", "ops=allreduce", "-S", "msizes=8", "-S", "nrep=20",
                        "-S", "mpiruns=6", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    return r, (json.loads(report.read_text()) if report.exists() else None)


def perfvalues(report) -> dict:
    tc = report["runs"][0]["testcases"][0]
    return {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}


def test_reframe_runs_the_check(build, tmp_path):
    r, rep = reframe(tmp_path, "-S", "references=allreduce/8=1000")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-1000:]
    pv = perfvalues(rep)
    assert set(pv) == {"allreduce/8", "allreduce/8/ci_lo", "allreduce/8/ci_hi"}
    stage = next((tmp_path / "rfm" / "output").rglob("summary.json"))
    row = json.loads(stage.read_text())[0]
    assert pv["allreduce/8"][0] == pytest.approx(row["median_s"] * 1e6, rel=1e-12)
    assert pv["allreduce/8/ci_lo"][0] == pytest.approx(row["median_ci"]["lo_s"] * 1e6, rel=1e-12)
    assert pv["allreduce/8/ci_lo"][0] <= pv["allreduce/8"][0] <= pv["allreduce/8/ci_hi"][0]
    assert pv["allreduce/8"][1] == 1000 and pv["allreduce/8"][4] == "us"


def test_reframe_fails_a_missed_reference(build, tmp_path):
    r, rep = reframe(tmp_path, "-S", "references=allreduce/8=0.001", "-S", "tolerance=0.1")
    assert r.returncode != 0 and "allreduce/8" in r.stdout
