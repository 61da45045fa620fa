"""Clock sync against drift injected at the OS level, not by the simulated clock: every rank
runs behind bench/os_clock_wrap.sh, whose libfaketime rate makes the CLOCK_MONOTONIC reads of
the core really run fast (clock_gettime is interposed, so the vDSO read is scaled too). HCA3,
HCA2 and JK must find the drift (slope kept, within 2 ppm) and remove the offset; on 2 ranks and
on the 4-fake-host cluster. Accuracy in µs is a benchmark on an idle machine (bench/os_drift.sh),
not a test: on a loaded shared machine it is far worse."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpitempo.runner.launch import make_launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from netns import cluster as nc  # noqa: E402

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
WRAP = ROOT / "bench" / "os_clock_wrap.sh"
LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
DRIFTS = [0, 30, -25, 40, 12, -35, 20, -10]     # ppm per rank


def _need_faketime():
    if not Path(LIB).exists():
        pytest.skip("libfaketime is not installed (apt-get install -y faketime libfaketime)")


def _check(rows, nranks, tol_ppm):
    assert {r["algorithm"].split(":")[0] for r in rows} == {"hca3", "hca2", "jk"}
    for r in rows:
        assert not r.get("simulated"), r
        for rank, p in enumerate(r["per_rank"][1:nranks], 1):
            true = ((1 + DRIFTS[rank] * 1e-6) / (1 + DRIFTS[0] * 1e-6) - 1) * 1e6
            assert p["slope"] in ("kept", "fit") and abs(p["drift_ppm"] - true) < tol_ppm, (r["algorithm"], rank, p)
        # the offsets (ms apart at the OS level) are gone; µs accuracy needs an idle machine
        assert r["max_abs_offset_s"] < 100e-6, r


def test_os_drift_two_ranks(build):
    _need_faketime()
    cmd = [str(WRAP), build.binary("mpitempo-clocks"), "--expect-np", "2", "--algorithms", "hca3,hca2,jk",
           "--wait", "0"]
    launch = make_launch(build, 2, cmd)
    env = dict(os.environ, **launch.env, MT_OS_DRIFTS_PPM=",".join(map(str, DRIFTS)), MT_OS_OFFSETS_S="0,0.002")
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    _check(json.loads(r.stdout), 2, 2.0)


def test_wrapper_really_changes_the_rate(tmp_path):
    """The premise: a C program's CLOCK_MONOTONIC runs 100 ppm fast against the TSC behind the wrapper."""
    _need_faketime()
    src = tmp_path / "rate.c"
    src.write_text(r"""
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
static double s(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
/* a (monotonic, TSC) pair read together: of 200 tries the one with the fewest ticks around the clock
   read, so that a preemption between the two reads (a loaded machine) does not misalign them */
static void pair(double *m, double *t){unsigned long long best=~0ULL; for(int i=0;i<200;i++){
unsigned long long a=__rdtsc(); double x=s(); unsigned long long b=__rdtsc();
if(b-a<best){best=b-a; *m=x; *t=0.5*((double)a+(double)b);}}}
int main(void){double m0,t0,m1,t1,m2,t2; pair(&m0,&t0); usleep(200000); pair(&m1,&t1); usleep(400000);
pair(&m2,&t2); printf("%.3f %.6f\n", (t1-t0)/(m1-m0), (t2-t1)/(m2-m1)); return 0;}
""")
    if subprocess.run(["cc", "-O2", "-o", str(tmp_path / "rate"), str(src)]).returncode != 0:
        pytest.skip("no C compiler with x86intrin.h")
    plain = subprocess.run([str(tmp_path / "rate")], capture_output=True, text=True, check=True).stdout.split()
    fast = subprocess.run([str(WRAP), str(tmp_path / "rate")], capture_output=True, text=True, check=True,
                          env=dict(os.environ, MT_OS_DRIFTS_PPM="100")).stdout.split()
    # TSC ticks per monotonic second: 100 ppm fewer when the monotonic clock runs 100 ppm fast
    ratio = float(plain[1]) / float(fast[1])
    assert abs((ratio - 1) * 1e6 - 100) < 20, (plain, fast)


@pytest.fixture(scope="module")
def fake_hosts():
    why = nc.unavailable(time_namespaces=True)
    if why:
        pytest.skip(f"fake hosts unavailable: {why}")
    with nc.Cluster(4, monotonic_offsets=[0, 7, 1000, 35]) as c:
        yield c


def test_os_drift_fake_host_cluster(build, fake_hosts):
    _need_faketime()
    if build.flavour != "mpich":
        pytest.skip(f"the fake-host launcher is written for MPICH Hydra (this build: {build.flavour})")
    # slope=fit: 8 oversubscribed ranks leave the standard error of a 1 s window's slope at a few
    # ppm, so the default slope test (z = 4) drops the smaller injected drifts (10-12 ppm); the
    # test of that decision on real drift is the 2-rank test above
    algs = ",".join(f"{a}:window=1,fitpts=40,slope=fit" for a in ("hca3", "hca2", "jk"))
    cmd = [str(WRAP), build.binary("mpitempo-clocks"), "--expect-np", "8", "--algorithms", algs, "--wait", "0"]
    env = dict(os.environ)
    env.update({"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1", "MPITEMPO_CLOCK_SLEEP": "1",
                "MT_OS_DRIFTS_PPM": ",".join(map(str, DRIFTS)), "MT_OS_OFFSETS_S": "0,0.003,0.001,0.004"})
    # 8 ranks on 2 cores over TCP: the slope error falls as 1/window (see test_clocks_mpi.py);
    # window=1 s keeps the test short and the error within a few ppm of the 10-75 ppm injected.
    # Oversubscribed, one mpirun in a few on a loaded machine leaves a rank's slope below the
    # slope test's z = 4 (dropped): the drift must be recovered in one of at most 3 mpiruns.
    failures = []
    for _ in range(3):
        r = subprocess.run(fake_hosts.mpiexec_argv(build.mpiexec, 2, cmd), capture_output=True, text=True,
                           env=env, timeout=900)
        assert r.returncode == 0, r.stderr
        try:
            _check(json.loads(r.stdout), 8, 4.0)
            return
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
    pytest.fail("drift not recovered in 3 mpiruns: " + " | ".join(failures))
