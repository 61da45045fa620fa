"""A rank slowed by a competing busy process (issue 14, adversarial conditions): a CPU-bound
process pinned (taskset) to the CPU of rank 1 of ranks bound to cores. The run must be flagged
(`shared_cpu`: the start-up check gives that rank about half of its wall time as CPU time) in
summary, compare and report, as JSON and as text; the same campaign without the busy process must
not be. A 100%-busy process at the same priority takes about half of the CPU in any time slice,
far below the 80% threshold, so the flagged side is deterministic. The clean side can be hit by
other load on a shared machine: it gets up to 3 campaigns, one of which must be unflagged."""
from __future__ import annotations

import json
import shutil
import signal
import time

import pytest

from mpitempo.runner.launch import ncores

pytestmark = pytest.mark.mpi

CAMPAIGN = ["--ops", "allreduce", "--msizes", "8", "--nrep", "200", "--mpiruns", "2", "--seed", "5",
            "--quiet", "--no-summary"]


@pytest.fixture
def busy_cpu(busy):
    """Start a busy loop pinned to CPU 1 (the CPU of rank 1 with --bind-to core); always stopped."""
    if ncores() < 2:
        pytest.skip("needs 2 CPUs: the ranks are bound to cores 0 and 1")
    if not shutil.which("taskset"):
        pytest.skip("taskset (util-linux) is not installed")
    return lambda cpu=1: busy(1, cpu=cpu)[0]


def _metas(root):
    return [json.loads(m.read_text()) for m in sorted(root.glob("runs/*/meta.json"))]


def _run(cli, out):
    code, so, se = cli("run", *CAMPAIGN, "-o", out)
    assert code == 0, se
    return _metas(out)


def test_busy_process_on_a_ranks_cpu_is_flagged(cli, build, tmp_path, busy_cpu):
    # The 20 ms check reads a CPU share of 0.52-0.79 beside the busy process on this VM (docs/methods.md,
    # "Flag rates"): near the 0.8 threshold a run is now and then missed, so the busy side gets up to
    # 3 campaigns, of which one must have every run flagged; the shares seen are in the message.
    # An attempt counts when every run is flagged and, in every run, the rank on CPU 1 is the one below
    # the threshold (the default launcher binds rank i to core i: MPICH -bind-to core, Open MPI
    # --map-by core); the per-rank shares of every attempt are in the message.
    def on_cpu1(m):
        return [r for r in m["ranks"] if r.get("cpus_seen") == "1"]

    seen = []
    for attempt in range(3):
        busy = tmp_path / f"busy{attempt}"
        p = busy_cpu(1)
        metas = _run(cli, busy)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        seen.append([{r["rank"]: (r.get("cpus_seen"), r.get("cpu_share")) for r in m["ranks"]} for m in metas])
        if all(m["shared_cpu"]["shared"] and on_cpu1(m) and all(r["cpu_share"] < 0.8 for r in on_cpu1(m))
               for m in metas):
            break
    else:
        raise AssertionError("a busy process on CPU 1 was not flagged on the rank bound to CPU 1 in every "
                             f"run of any of 3 campaigns: rank: (CPU, CPU share) per run {seen}")
    for m in metas:
        sc = m["shared_cpu"]
        assert sc["shared"] and not sc["oversubscribed"] and sc["min_cpu_share"] < 0.8, sc
        # the rank beside the busy process waited in its first 20 ms: its check ran on to 200 ms
        for r in on_cpu1(m):
            assert r["cpu_check_s"] >= sc["extended_check_s"] == 0.2 and "first_cpu_share" in r, r

    # summary: JSON and text
    code, so, se = cli("summary", busy, "--json")
    assert code == 0, se
    assert all("shared_cpu" in r["flags"] for r in json.loads(so))
    code, so, se = cli("summary", busy)
    assert code == 0 and "shared-cpu" in so and "SHARED A CPU" in so
    # report (HTML) of the busy campaign: the flag and its warning
    html = tmp_path / "r.html"
    code, so, se = cli("report", busy, "-o", html)
    assert code == 0, se
    doc = html.read_text()
    assert "shared-cpu" in doc and "SHARED A CPU" in doc

    # the same campaign without the busy process; other jobs on a shared machine (outside the CPU
    # lock) can take a CPU from a rank too: up to 5 campaigns, one must be clean, or the machine
    # is too busy to tell (skipped, with the shares seen)
    clean, seen = None, []
    for attempt in range(5):
        d = tmp_path / f"clean{attempt}"
        ms = _run(cli, d)
        seen.append(min(m["shared_cpu"]["min_cpu_share"] for m in ms))
        if not any(m["shared_cpu"]["shared"] for m in ms):
            clean = d
            break
        time.sleep(1.0)
    # compare: JSON and text (campaigns as the factor; the last campaign without the busy process
    # first = A): the busy side's flag is carried into every row and its verdict
    code, so, se = cli("compare", d, busy, "--json")
    assert code == 0, se
    rows = json.loads(so)
    assert rows and all("shared_cpu" in r["flags_b"] for r in rows)
    assert all("flagged: " in r["verdict"] and "shared_cpu" in r["verdict"] for r in rows)
    assert all(("shared_cpu" in r["flags_a"]) == (clean is None) for r in rows)
    code, so, se = cli("compare", d, busy)
    assert code == 0 and "shared_cpu" in so + se
    if clean is None:
        pytest.skip(f"other load: 5 campaigns without the busy process were flagged too (min CPU shares {seen})")
    code, so, se = cli("summary", clean, "--json")
    assert all("shared_cpu" not in r["flags"] for r in json.loads(so))
    code, so, se = cli("summary", clean)
    assert "shared-cpu" not in so and "SHARED A CPU" not in so

    html2 = tmp_path / "r2.html"
    code, so, se = cli("report", clean, "-o", html2)
    assert code == 0, se
    assert "SHARED A CPU" not in html2.read_text()
