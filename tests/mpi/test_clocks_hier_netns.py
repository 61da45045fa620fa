"""Hierarchical clock sync for real (issue 3): 4 fake hosts x 2 ranks, each host
a network namespace (TCP between hosts) and a time namespace with its own
CLOCK_MONOTONIC offset. H2HCA (HCA3 between the hosts, ClockPropSync inside)
must recover the offsets to within 10 us and finish faster than flat HCA3 on
the same 8 ranks; ClockPropSync across the hosts must be refused."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from netns import cluster as nc  # noqa: E402

pytestmark = pytest.mark.mpi

OFFSETS = [0, 7, 1000, 35]   # CLOCK_MONOTONIC offset of each host (whole seconds)


@pytest.fixture(scope="module")
def fake_hosts():
    why = nc.unavailable(time_namespaces=True)
    if why:
        pytest.skip(f"fake hosts unavailable: {why}")
    with nc.Cluster(4, monotonic_offsets=OFFSETS) as c:
        yield c
    # teardown happens in __exit__, also when a test failed
    assert not any(Path("/etc/netns", h).exists() for h in c.hosts)


def run_clocks(build, c, args, timeout=600):
    if build.flavour != "mpich":
        pytest.skip(f"the fake-host launcher is written for MPICH Hydra (this build: {build.flavour})")
    cmd = [build.binary("mpitempo-clocks"), "--expect-np", "8", *args]
    env = dict(os.environ)
    # TCP between the fake hosts (otherwise shared memory is used across them),
    # 8 ranks on 2 cores: throttled progress and sleeping waits
    env.update({"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1", "MPITEMPO_CLOCK_SLEEP": "1"})
    return subprocess.run(c.mpiexec_argv(build.mpiexec, 2, cmd), capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_cluster_is_real(build, fake_hosts):
    """4 nodes seen by MPI, and their monotonic clocks really differ."""
    r = run_clocks(build, fake_hosts, ["--algorithms", "none", "--wait", "0"])
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)[0]
    assert row["nprocs"] == 8
    offs = [p["offset_s"] for p in row["per_rank"]]
    # ranks 2k, 2k+1 on host k: offsets of the time namespaces (rank 0's host is 0)
    for rank, off in enumerate(offs):
        assert abs(off - OFFSETS[rank // 2]) < 1e-3, (rank, offs)


def test_h2hca_recovers_offsets_and_beats_flat_hca3(build, fake_hosts):
    # hoefler first: it opens the TCP connections, which the first sync of a job would pay for.
    # window=1: over TCP between 8 oversubscribed ranks the offsets are noisy by several us; with
    # the default 0.25 s window H2HCA was 2-11 us off, with 1 s 1.6-10.4 us (docs/clocks.md); 2 s here.
    # Both use the same HCA3 parameters, so the comparison of durations is fair. ci=0 (the fixed
    # window) for both: the message counts compared below are then set by the structure of the two
    # syncs; with the adaptive default each pair stops when its own noise allows, and over TCP between
    # oversubscribed ranks that varies widely from pair to pair.
    # --check-pp 400: the check itself crosses TCP between oversubscribed ranks; more ping-pongs
    # make its minimum-RTT estimate of the offset steadier (with 100 it misjudged by up to 4 us).
    r = run_clocks(build, fake_hosts, ["--algorithms", "hoefler,h2:hca3:window=2,ci=0/prop,hca3:window=2,ci=0",
                                       "--wait", "0", "--check-pp", "400"])
    assert r.returncode == 0, r.stderr
    _, h2, flat = json.loads(r.stdout)
    print(f"\nH2HCA: {h2['sync_duration_s']:.3f} s, max |offset| {h2['max_abs_offset_s'] * 1e6:.2f} us; "
          f"flat HCA3: {flat['sync_duration_s']:.3f} s, max |offset| {flat['max_abs_offset_s'] * 1e6:.2f} us")
    assert h2["spec"].startswith("h[node]:hca3:") and h2["spec"].endswith("/prop:tol=1e-06")
    assert h2["checked_ranks"] == 7
    # the offsets were 7 s to 1000 s; all recovered
    assert h2["max_abs_offset_s"] <= 10e-6, h2
    assert flat["max_abs_offset_s"] <= 50e-6, flat
    # H2HCA: ceil(log2 4) = 2 HCA3 rounds between leaders + one broadcast; flat: ceil(log2 8) = 3 rounds
    assert flat["rounds_root"] == 3
    # what makes H2HCA faster: inside a host the clock comes by broadcast (ClockPropSync), so the
    # second rank of every host exchanges no ping-pongs, and fewer messages cross the network.
    # (Durations are in docs/clocks.md; a timed assertion here would be flaky: with window=1 both
    # durations are dominated by the fit windows.)
    msgs = lambda row: {p["rank"]: p["msgs_sent"] for p in row["per_rank"]}  # noqa: E731
    h2m, flatm = msgs(h2), msgs(flat)
    print(f"messages sent: H2HCA {sum(h2m.values())}, flat HCA3 {sum(flatm.values())}")
    assert all(h2m[r] == 0 for r in (1, 3, 5, 7)), h2m
    assert all(h2m[r] > 0 for r in (0, 2, 4, 6)) and all(v > 0 for v in flatm.values()), (h2m, flatm)
    # 3 pair syncs between leaders against 7 in the flat tree; how many windows a pair needs (a second
    # one to confirm a slope) varies from pair to pair, so the totals are compared, not a fixed ratio
    # (0.38-0.57 in repeated runs)
    assert sum(h2m.values()) < sum(flatm.values()), (h2m, flatm)


def test_prop_across_hosts_is_refused(build, fake_hosts):
    r = run_clocks(build, fake_hosts, ["--algorithms", "prop", "--wait", "0"])
    assert r.returncode == 2, r.stderr
    assert "ClockPropSync across different time sources" in r.stderr
