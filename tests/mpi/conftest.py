"""Fixtures shared by the MPI tests (the `build` and `cli` fixtures are in tests/conftest.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def busy():
    """busy(n, cpu=None): start n busy processes (`while True: pass`, each in its own session), pinned to
    CPU `cpu` with taskset when given, and return them (a test may stop one early); every one is killed
    when the test ends."""
    procs = []

    def start(n=1, cpu=None):
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        new = [subprocess.Popen([*pin, sys.executable, "-c", "while True: pass"], start_new_session=True)
               for _ in range(n)]
        procs.extend(new)
        if new:
            time.sleep(0.3)     # running before the mpirun starts
        assert all(p.poll() is None for p in new), "a busy process did not start"
        return new

    try:
        yield start
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


@pytest.fixture(scope="session")
def amg(build, tmp_path_factory):
    """examples/trace/amg_like.c compiled with the MPI of the core, as a user would."""
    exe = tmp_path_factory.mktemp("amg") / "amg_like"
    subprocess.run([build.mpicc, "-O2", "-o", str(exe), str(ROOT / "examples/trace/amg_like.c")], check=True)
    return str(exe)
