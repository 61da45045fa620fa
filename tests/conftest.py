"""Shared fixtures: the real build of the C core, and a runner for the CLI."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPITEMPO_CACHE", str(ROOT / ".mpitempo-cache"))


@pytest.fixture(scope="session")
def build():
    from mpitempo.build import ensure_build
    from mpitempo.errors import MtError

    try:
        return ensure_build()
    except MtError as e:  # pragma: no cover - set-up problem, not a test result
        pytest.fail(f"cannot build the C core: {e}")


@pytest.fixture
def cli(capsys):
    """Run `mpitempo ARGS` in-process through main(); returns (code, stdout, stderr)."""
    from mpitempo.cli import main

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def bad_launcher(tmp_path):
    """A wrapper put in front of every rank that kills rank 1 of the mpirun with
    run index 3 (the 4th) while a flag file exists."""
    flag = tmp_path / "kill-flag"
    wrap = tmp_path / "wrap.sh"
    wrap.write_text("#!/bin/sh\n"
                    f"case \" $* \" in *' --run-index 3 '*) "
                    f"if [ -e {flag} ] && [ \"${{PMI_RANK:-$OMPI_COMM_WORLD_RANK}}\" = 1 ]; then kill -9 $$; fi;; esac\n"
                    "exec \"$@\"\n")
    wrap.chmod(0o755)
    return flag, "{mpiexec} -n {np} " + str(wrap) + " {cmd}"


@pytest.fixture
def ctrl_c():
    """Run `mpitempo ARGS` in a child, press Ctrl-C once the first mpirun of OUT is complete and the
    second has started (plus ``settle`` seconds); returns (returncode, stdout, stderr)."""
    import signal
    import subprocess
    import sys
    import time

    def run(args, out: Path, settle: float = 0.0):
        p = subprocess.Popen([sys.executable, "-m", "mpitempo.cli", *[str(a) for a in args]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             # a background job of a non-interactive shell ignores SIGINT, and so would the
                             # child: give it the default disposition, as in a terminal
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        for path in (out / "runs" / "default-000" / "meta.json", out / "runs" / "default-001" / "launch.json"):
            while time.monotonic() < deadline and not path.exists():
                time.sleep(0.02)
        time.sleep(settle)
        p.send_signal(signal.SIGINT)
        so, se = p.communicate(timeout=60)
        return p.returncode, so, se

    return run


@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs (skipped where mounting is not allowed)."""
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
