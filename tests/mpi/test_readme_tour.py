"""The README's 5-minute tour works as written: every command of its code block runs, in order,
from a fresh directory that holds the checkout's examples/, and the test fails at the first that fails."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.one_library   # the README's commands, run with the default MPI

ROOT = Path(__file__).resolve().parents[2]


def tour_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## A 5-minute tour", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    cmds = []
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("source "):      # the venv is already active here
            continue
        cmds.append(line.split("  #", 1)[0].strip())
    return cmds


def test_tour_is_found():
    cmds = tour_commands()
    assert len(cmds) >= 15 and all(c.startswith("mpitempo ") for c in cmds)
    assert any("--resume" in c for c in cmds) and any(c.startswith("mpitempo report") for c in cmds)


@pytest.mark.mpi
def test_readme_tour_runs_in_order(build, tmp_path):
    os.symlink(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "100"
    for cmd in tour_commands():
        r = subprocess.run(shlex.split(cmd), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README tour: '{cmd}' failed ({r.returncode}): {r.stderr.strip()[-800:]}"
    # what the tour promises exists
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert len(list((tmp_path / "osu-out").glob("osu_allreduce.*.txt"))) == 2
    assert (tmp_path / "my-campaign" / "system-check.json").exists()
    assert (tmp_path / "results.duckdb").exists()
