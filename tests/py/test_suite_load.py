"""The test suite's own load handling (tests/conftest.py, issue 35): the load probe sees a competing
busy process, and a test marked exclusive_cpu or load_sensitive that fails is retried under the
exclusive lock, skipped with the measured load when the load persists, and a failure on an idle
machine stays a failure."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import LoadProbe

ROOT = Path(__file__).resolve().parents[2]


def _foreign_busy():
    """A busy loop that is not a descendant of this process (its parent exits at once)."""
    r = subprocess.run(["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                       capture_output=True, text=True, check=True)
    return int(r.stdout)


def test_probe_counts_a_competing_busy_process_not_its_own_children():
    own = subprocess.Popen([sys.executable, "-c", "while True: pass"])   # ours: not load
    pid = _foreign_busy()
    try:
        time.sleep(0.3)
        scans = [LoadProbe.foreign_runnable() for _ in range(10)]
        probe = LoadProbe(period=0.05).start()
        time.sleep(0.5)
        probe.stop()
    finally:
        os.kill(pid, signal.SIGKILL)
        own.kill()
        own.wait()
    # a busy process is runnable (state R) whether it runs or waits for a CPU: in every scan
    assert all(pid in s for s in scans) and not any(own.pid in s for s in scans), scans
    assert probe.samples and min(probe.samples) >= 1 and "competing runnable processes" in probe.describe()


INNER = '''
import os, pytest

def _count(name):
    n = int(open(name).read()) + 1 if os.path.exists(name) else 1
    open(name, "w").write(str(n))
    return n

@pytest.mark.exclusive_cpu
@pytest.mark.parametrize("pass_on", [1, 2, 9])
def test_excl(pass_on):
    assert _count(f"excl-{pass_on}") == pass_on

@pytest.mark.load_sensitive
@pytest.mark.parametrize("pass_on", [1, 2, 9])
def test_sens(pass_on):
    assert _count(f"sens-{pass_on}") == pass_on

def test_plain():
    assert _count("plain") == 2
'''


@pytest.mark.parametrize("loaded", [True, False])
def test_retry_and_skip_under_load(tmp_path, loaded):
    # threshold 0: every attempt counts as loaded; 1e9: none does (an idle machine)
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_x.py").write_text(INNER)
    env = dict(os.environ, MPITEMPO_TEST_LOAD_THRESHOLD="0" if loaded else "1e9", MPITEMPO_TEST_CPU_LOCK_WAIT="0")
    env.pop("MPITEMPO_SUITE_LOCK", None)    # its own suite lock: the outer one is held by this test
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-p", "no:xdist",
                        "-p", "no:randomly", "test_x.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    count = {f.name: int(f.read_text()) for f in tmp_path.iterdir() if f.name[:4] in ("excl", "sens", "plai")}
    if loaded:
        # pass on the 1st try: 1 attempt; on the 2nd: retried (under the exclusive lock) and passed;
        # never: 2 attempts, then skipped with the load measured; an unmarked test is not retried
        assert "3 failed" not in out and "1 failed, 4 passed, 2 skipped" in out, out
        assert count == {"excl-1": 1, "excl-2": 2, "excl-9": 2, "sens-1": 1, "sens-2": 2, "sens-9": 2, "plain": 1}
        assert out.count("failed under load that persisted under the exclusive lock") == 2, out
        assert "competing runnable processes on" in out
        # the summary names the retried tests: 2 passed on the retry, 2 skipped
        summary = out.split("retried under load", 1)[1]
        assert summary.count("PASSED test_x.py::") == 2 and summary.count("SKIPPED test_x.py::") == 2, out
    else:
        # idle: a failure is a failure, never retried
        assert "5 failed, 2 passed" in out and "retried under load" not in out, out
        assert count == {"excl-1": 1, "excl-2": 1, "excl-9": 1, "sens-1": 1, "sens-2": 1, "sens-9": 1, "plain": 1}


EXCL = '''
import json, os, time, pytest

def _span(name, secs):
    t0 = time.time()
    time.sleep(secs)
    open(f"span-{name}", "w").write(json.dumps([t0, time.time()]))

@pytest.mark.exclusive_cpu
def test_excl():
    _span("excl", 1.5)
'''
PLAIN = '''
import json, os, time, pytest
from test_a import _span

@pytest.mark.parametrize("i", range(8))
def test_plain(i):
    _span(f"plain{i}", 0.4)
'''


def test_exclusive_test_runs_alone_under_xdist(tmp_path):
    # two workers: while the exclusive_cpu test runs, no other test does (the other worker waits
    # between its tests); the plain tests do run beside each other otherwise
    pytest.importorskip("xdist")
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_a.py").write_text(EXCL)
    (tmp_path / "test_b.py").write_text(PLAIN)
    env = dict(os.environ, MPITEMPO_TEST_CPU_LOCK_WAIT="0", PYTHONPATH=str(tmp_path))
    env.pop("MPITEMPO_SUITE_LOCK", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "load",
                        "test_a.py", "test_b.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "9 passed" in r.stdout, r.stdout + r.stderr
    import json
    spans = {f.name[5:]: json.loads(f.read_text()) for f in tmp_path.glob("span-*")}
    e0, e1 = spans.pop("excl")
    assert len(spans) == 8
    overlap = [k for k, (a, b) in spans.items() if a < e1 and b > e0]
    assert not overlap, (e0, e1, spans)
