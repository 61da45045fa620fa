"""Deadlock freedom: every clock-sync algorithm and every measurement scheme completes on
p ranks with random per-rank delays (ranks start up to 300 ms apart, and the synthetic op gives
every rank its own random busy-wait), bounded by a timeout. Oversubscribed (2 cores here), so
this checks correctness only.

CI runs p in CI_NPROCS; MPITEMPO_TEST_DEADLOCK_FULL=1 runs p = 1..17 (docs/reliability.md).
"""
from __future__ import annotations

import os
import random
import subprocess

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi

CI_NPROCS = (1, 2, 3, 17)
NPROCS = tuple(range(1, 18)) if os.environ.get("MPITEMPO_TEST_DEADLOCK_FULL") == "1" else CI_NPROCS
SMALL = "fitpts=4,pp=5"
ALGORITHMS = ["skampi:pp=5", "hoefler:pp=5", f"jk:{SMALL}", f"hca:{SMALL}", f"hca2:{SMALL}", f"hca3:{SMALL}", "prop",
              f"h2:hca3:{SMALL}/prop"]
SCHEMES = ["barrier", "loop", "barrier_loop", "window", "roundtime"]
TIMEOUT_S = 180


def _launch(build, np, cmd, tmp_path, seed):
    """mpiexec with a wrapper that delays each rank's start by a random 0-300 ms."""
    w = tmp_path / "stagger.sh"
    w.write_text("#!/bin/sh\nR=${PMI_RANK:-$OMPI_COMM_WORLD_RANK}\n"
                 f"sleep $(awk -v r=$R -v s={seed} 'BEGIN {{ srand(s + 7 * r); printf \"%.3f\", rand() * 0.3 }}')\n"
                 'exec "$@"\n')
    w.chmod(0o755)
    launch = make_launch(build, np, cmd, "{mpiexec} -n {np} " + str(w) + " {cmd}")
    env = dict(os.environ, MPITEMPO_CLOCK_SLEEP="1")
    env.update(launch.env)
    if build.flavour == "mpich":   # oversubscribed ranks yield (docs/design.md)
        env.update({"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"})
    return launch.argv, env


def _run(argv, env):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, start_new_session=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no result within {TIMEOUT_S} s (deadlock?): {' '.join(argv[-12:])}")
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.mark.parametrize("np", NPROCS)
def test_every_sync_algorithm_completes(build, tmp_path, np):
    rng = random.Random(np)
    cmd = [build.binary("mpitempo-clocks"), "--algorithms", ",".join(ALGORITHMS), "--wait", "0", "--check-pp", "3",
           "--expect-np", str(np), "--quiet"]
    _run(*_launch(build, np, cmd, tmp_path, rng.randrange(1 << 30)))


@pytest.mark.parametrize("np", NPROCS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_completes(build, tmp_path, np, scheme):
    if np >= 9 and scheme != "barrier" and not os.environ.get("MPITEMPO_TEST_DEADLOCK_FULL"):
        pytest.skip("CI: at p >= 9 only the barrier scheme (MPITEMPO_TEST_DEADLOCK_FULL=1 runs all)")
    rng = random.Random(1000 * np + len(scheme))
    delays = ",".join(f"{rng.randint(1, 200)}us" for _ in range(np))
    sync = [] if scheme in ("barrier", "loop", "barrier_loop") else ["--sync", f"hca3:{SMALL}"]
    extra = {"window": ["--window", "2ms"], "roundtime": ["--time-slice", "50ms"], "loop": ["--inner", "2"],
             "barrier_loop": ["--inner", "2"]}.get(scheme, [])
    out = tmp_path / "out"
    out.mkdir()
    cmd = [build.binary(), "--ops", "delay,bcast", "--msizes", "8", "--delay", delays, "--nrep", "5", "--warmup", "1",
           "--scheme", scheme, *sync, *extra, "--allow-few-valid", "--timer-reads", "1000",
           "--expect-np", str(np), "--outdir", str(out), "--quiet"]
    _run(*_launch(build, np, cmd, tmp_path, rng.randrange(1 << 30)))
    assert (out / "meta.json").exists() and (out / "measurements.csv").exists()
