"""The ReFrame check of integrations/reframe on a campaign that was already run (-S campaign=DIR,
no MPI here): its bandwidth (osu_bw) and non-blocking (osu_iallreduce) performance variables are
read by ReFrame's runner with ReFrame's sanity functions from our OSU export, and equal the numbers
of `mpitempo summary --json` rounded as OSU prints them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_derived import OV, TIMES, campaign

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "integrations" / "reframe" / "mpitempo_check.py"
SETTINGS = ROOT / "integrations" / "reframe" / "settings.py"
REFRAME = shutil.which("reframe", path=str(Path(sys.executable).parent)) or shutil.which("reframe")
pytestmark = pytest.mark.skipif(REFRAME is None, reason="ReFrame is not installed (pip install '.[test]')")


def test_reframe_reads_bandwidth_and_overlap_from_the_osu_export(tmp_path):
    camp = campaign(tmp_path / "camp", {k: TIMES[k] for k in ("bw", "iallreduce", "iallreduce_overlap")},
                    overlap=OV, msizes=(8, 1024))
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    report = tmp_path / "report.json"
    r = subprocess.run([REFRAME, "-C", str(SETTINGS), "-c", str(CHECK), "-r", "--prefix", str(tmp_path / "rfm"),
                        "--report-file", str(report), "-S", f"campaign={camp}"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-1000:]
    tc = json.loads(report.read_text())["runs"][0]["testcases"][0]
    pv = {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}
    for m, size in ((8, "8"), (1024, "1K")):
        assert pv[f"bw/{size}/MBps"][0] == round(64 * m / TIMES["bw"](0, m) / 1e6, 2)
        assert pv[f"bw/{size}/MBps"][4] == "MB/s"
        assert pv[f"iallreduce/{size}/overall"][0] == 7.0 and pv[f"iallreduce/{size}/overlap"][0] == 50.0
        assert pv[f"iallreduce_overlap/{size}"][0] == pytest.approx(7.0)
