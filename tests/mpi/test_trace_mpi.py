"""The tracer for real (issue 13): unmodified MPI applications run under mpiexec with
libmpitempo-trace.so preloaded. Checked: the files (OTF2 read back by otf2-print, Perfetto
JSON, events.csv), the contract of `mpitempo trace DIR --json`, and with per-rank clock offsets
and drift (the simulated clock, real time namespaces per rank, and fake hosts with their own
CLOCK_MONOTONIC offset): clock-condition violations on the raw timestamps, none on the global
clock, and global timestamps within 2 us of the ground truth. Bad input to the library leaves
the application running untraced. Timings are never asserted: the machine is shared."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpitempo.analysis.trace import load
from mpitempo.runner.launch import make_launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from netns import cluster as nc  # noqa: E402

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ("ranks", "events", "sync", "violations_raw", "violations_global", "otf2", "perfetto",
            "max_start_skew_raw_s", "max_start_skew_global_s")
ALIGN_S = 2e-6   # the target: global timestamps aligned to within 2 us
# The machine is shared: a loaded moment spoils a clock sync like any measurement. The targets
# (no violation on the global clock, every global timestamp within 2 us of the truth) must be met
# by one of up to ATTEMPTS mpiruns; the raw timestamps must show violations in every one.
ATTEMPTS = 3


@pytest.fixture(scope="module")
def lib(build):
    from mpitempo.cmd_trace import find_library

    return find_library(build)


def trace_json(cli, *args):
    code, out, err = cli("trace", "run", "--json", *args)
    assert code == 0, err
    return json.loads(out), err


def clock_error(d: Path, offsets, drifts=None) -> float:
    """max |global - true| over every timestamp of every rank, relative to rank 0, where the true
    time of a raw reading on rank r is (raw - offset_r) / (1 + drift_r)."""
    _, ev = load(d)
    r = ev["rank"].astype(int)
    o = np.asarray(offsets, dtype=float)[r]
    dr = np.asarray(drifts if drifts is not None else [0.0] * len(offsets), dtype=float)[r]
    errs = []
    for raw, glob in (("t_enter_raw_s", "t_enter_s"), ("t_exit_raw_s", "t_exit_s")):
        errs.append(ev[glob] - (ev[raw] - o) / (1 + dr))
    e = np.concatenate(errs)
    rr = np.concatenate([r, r])
    return float(np.abs(e - np.median(e[rr == 0])).max())


@pytest.fixture
def default_trace(cli, amg, tmp_path):
    out = tmp_path / "tr"
    res, _ = trace_json(cli, "-n", "2", "-o", out, "--", amg, "--iters", "150")
    return out, res


def meets_targets(run, offsets, drifts=None) -> list:
    """Run the scenario (run(k) -> (result, trace dir)) up to ATTEMPTS times until the global
    clock meets the targets; returns what each attempt gave."""
    seen = []
    for k in range(ATTEMPTS):
        res, out = run(k)
        err = clock_error(out, offsets, drifts)
        seen.append({"violations_raw": res["violations_raw"], "violations_global": res["violations_global"],
                     "clock_error_us": round(err * 1e6, 3)})
        assert res["violations_raw"] > 50, seen
        if res["violations_global"] == 0 and err <= ALIGN_S:
            return seen
    raise AssertionError(f"no mpirun met the targets: {seen}")


def test_default_trace_files_and_contract(default_trace):
    out, res = default_trace
    for k in CONTRACT:
        assert k in res, k
    assert set(res["sync"]) >= {"algorithm", "duration_s", "drift_at_end_s"}
    assert res["sync"]["algorithm"] == "h2:hca3/prop" and res["ranks"] == 2
    # per rank: 150 allreduce, 30 halo exchanges of 2 irecv + 2 isend + waitall + 4 completions,
    # the MPI_Init and MPI_Finalize regions
    assert res["events"] == 2 * (150 + 30 * 9 + 2)
    assert res["call"] == "allreduce" and res["call_instances"] == 150
    assert res["violations_global"] == 0
    assert res["violations"]["global"]["messages"] == 2 * 30 * 2
    meta = json.loads((out / "trace.json").read_text())
    assert meta["buffer"]["events_dropped"] == 0 and meta["sync"]["interpolated"] is True
    # OTF2 is optional (.ci/run): the archive is there exactly when the core was built with it
    # no gantt.png: trace run draws it only with --plot (issue 33: the analysis and plot on demand)
    assert sorted(p.name for p in out.iterdir()) == sorted(["events.csv", "launch.json",
                                                            "not_recorded.json", "perfetto.json", "sites.tsv",
                                                            "trace.json"]
                                                           + ["otf2"] * (res["otf2"] is not None))
    launch = json.loads((out / "launch.json").read_text())
    assert launch["status"] == "ok" and launch["argv"][-3:] == [launch["app"][0], "--iters", "150"]
    pf = json.loads(Path(res["perfetto"]).read_text())
    xs = [e for e in pf["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 2 * res["events"]   # the global and the raw timeline
    assert {e["name"] for e in xs} >= {"MPI_Allreduce", "MPI_Irecv", "MPI_Isend", "MPI_Waitall"}
    if res["otf2"] is None:
        pytest.skip(meta.get('otf2_note') or "built without OTF2")
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print not installed (Debian package otf2-tools)")
    r = subprocess.run(["otf2-print", res["otf2"]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("MPI_COLLECTIVE_END") == 2 * 150
    # non-blocking messages as OTF2 has them: MpiIsend + MpiIsendComplete, MpiIrecvRequest + MpiIrecv
    assert r.stdout.count("MPI_ISEND ") == 2 * 60 and r.stdout.count("MPI_IRECV ") == 2 * 60
    assert r.stdout.count("MPI_ISEND_COMPLETE ") == 2 * 60 and r.stdout.count("MPI_IRECV_REQUEST ") == 2 * 60
    r = subprocess.run(["otf2-print", "-G", res["otf2"]], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "MPI_COMM_WORLD" in r.stdout


def test_simulated_offset_and_drift(cli, amg, tmp_path, monkeypatch):
    """Rank 1's clock 3 ms ahead and 50 ppm fast: the default spec falls back to hca3 (ClockPropSync
    refuses different time sources), raw timestamps violate the clock condition, global ones do not."""
    monkeypatch.setenv("MPITEMPO_SIM_OFFSETS", "0,0.003")
    monkeypatch.setenv("MPITEMPO_SIM_DRIFTS", "0,50")

    def run(k):
        res, _ = trace_json(cli, "-n", "2", "-o", tmp_path / f"sim{k}", "--", amg, "--iters", "120")
        assert "fell back to 'hca3'" in res["sync"]["note"] and res["sync"]["algorithm"] == "hca3"
        assert res["median_start_skew_raw_s"] > 1e-3
        return res, tmp_path / f"sim{k}"

    meets_targets(run, [0, 0.003], [0, 50e-6])


def test_time_namespace_per_rank(cli, amg, tmp_path):
    """Real CLOCK_MONOTONIC offsets: every rank in its own time namespace (rank r: +3r s)."""
    r = subprocess.run(["unshare", "--time", "--monotonic", "3", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot create a time namespace: {r.stderr.strip()}")
    wrap = tmp_path / "timens.sh"
    wrap.write_text('#!/bin/sh\nr=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}\n'
                    'exec unshare --time --monotonic $((r * 3)) "$@"\n')
    wrap.chmod(0o755)

    def run(k):
        out = tmp_path / f"ns{k}"
        res, _ = trace_json(cli, "-n", "2", "--sync", "hca3", "--launcher",
                            "{mpiexec} -n {np} " + str(wrap) + " {cmd}", "-o", out, "--", amg, "--iters", "120")
        assert res["max_start_skew_raw_s"] > 2.9
        return res, out

    meets_targets(run, [0, 3])


@pytest.mark.parametrize("timer", ["gettimeofday", "rdtscp"])
def test_other_timers(cli, amg, tmp_path, timer):
    # gettimeofday has 1 us resolution and an MPI_Allreduce on shared memory leaves a few hundred
    # ns after the last entry: a loaded moment can cost the sync that margin (ATTEMPTS, as above)
    seen = []
    for k in range(ATTEMPTS):
        out = tmp_path / f"{timer}{k}"
        res, _ = trace_json(cli, "-n", "2", "--timer", timer, "--sync", "hca3", "--calls", "allreduce",
                            "-o", out, "--", amg, "--iters", "100", "--halo-every", "0")
        meta = json.loads((out / "trace.json").read_text())
        assert meta["timer"] == timer and meta["calls_selected"] == ["allreduce"]
        assert res["events"] == 200 + 2 * 2   # + the MPI_Init and MPI_Finalize regions
        seen.append(res["violations_global"])
        if res["violations_global"] == 0:
            return
    raise AssertionError(f"violations on the global clock in every run: {seen}")


def test_buffer_stop_and_wrap(cli, amg, tmp_path):
    res, _ = trace_json(cli, "-n", "2", "--buffer", "50", "-o", tmp_path / "stop", "--", amg, "--iters", "100")
    b = res["buffer"]
    assert b["on_full"] == "stop" and b["events_kept"] == 100 and b["events_dropped"] > 0 and b["ranks_full"] == 2
    assert res["violations_global"] == 0
    res, _ = trace_json(cli, "-n", "2", "--buffer", "50", "--on-full", "wrap", "-o", tmp_path / "wrap", "--", amg,
                        "--iters", "100")
    b = res["buffer"]
    assert b["on_full"] == "wrap" and b["events_kept"] == 100 and b["events_overwritten"] > 0
    # the kept events are the last 50 of each rank: the last allreduce instances pair up from the end
    _, ev = load(tmp_path / "wrap")
    assert ev["seq"].max() > 50 and res["call_instances"] >= 5 and res["violations_global"] == 0


def test_no_finalize_keeps_partial(cli, amg, tmp_path):
    out = tmp_path / "nofin"
    code, _, err = cli("trace", "run", "-n", "2", "-o", out, "--", amg, "--iters", "20", "--skip-finalize")
    assert code != 0 and "without MPI_Finalize" in err
    assert sorted(p.name for p in (out / "partial").iterdir()) == ["rank-0.csv", "rank-1.csv"]
    code, stdout, err = cli("trace", out, "--json")
    assert code == 0, err
    res = json.loads(stdout)
    assert res["complete"] is False and res["events"] == 2 * (20 + 4 * 9 + 1) and res["otf2"] is None


def test_timeout_kills_the_run(cli, amg, tmp_path):
    code, _, err = cli("trace", "run", "-n", "2", "--timeout", "3", "-o", tmp_path / "slow", "--", amg,
                       "--iters", "1000000")
    # the ranks stopped by SIGTERM keep their events when they can write them within the grace period
    assert code != 0 and ("no trace written: the application timed out" in err
                          or "the application timed out after 3 s and was stopped: per-rank partial events" in err), err


def test_oversubscribed_is_flagged(cli, amg, tmp_path):
    res, _ = trace_json(cli, "-n", "3", "-o", tmp_path / "o3", "--", amg, "--iters", "30")
    assert res["oversubscribed"] is True and res["ranks"] == 3 and res["violations_global"] == 0
    code, out, _ = cli("trace", tmp_path / "o3")
    assert code == 0 and "OVERSUBSCRIBED" in out


def _run_direct(build, lib, amg, env_add, tmp_path):
    launch = make_launch(build, 2, ["env", f"LD_PRELOAD={lib}", *[f"{k}={v}" for k, v in env_add.items()], amg,
                                    "--iters", "20"])
    env = dict(os.environ, **launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("env_add, msg", [
    ({"MPITEMPO_TRACE_CALLS": "allreduce,bogus"}, "unknown MPI call 'bogus'"),
    ({"MPITEMPO_TRACE_BUFFER": "0"}, "MPITEMPO_TRACE_BUFFER"),
    ({"MPITEMPO_TRACE_ON_FULL": "drop"}, "invalid MPITEMPO_TRACE_ON_FULL 'drop'"),
    ({"MPITEMPO_TRACE_END_CORRECTION": "later"}, "invalid MPITEMPO_TRACE_END_CORRECTION 'later' (allowed: auto, measured, resync, none)"),
    ({"MPITEMPO_TRACE_TIMER": "sundial"}, "unknown timer 'sundial'"),
    ({"MPITEMPO_TRACE_SYNC": "h2:prop/hca3"}, "fell back to 'hca3'"),
    ({}, "MPITEMPO_TRACE_DIR is not set"),
])
def test_library_bad_input_runs_untraced(build, lib, amg, tmp_path, env_add, msg):
    out = tmp_path / "t"
    env = {"MPITEMPO_TRACE_DIR": str(out)} if "MPITEMPO_TRACE_DIR" not in env_add and env_add else {}
    env.update(env_add)
    r = _run_direct(build, lib, amg, env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "amg_like: 20 iterations on 2 ranks" in r.stdout
    assert msg in r.stderr, r.stderr
    if "fell back" in msg:   # a bad sync spec falls back to hca3 and still traces
        assert (out / "trace.json").exists()
    else:
        assert "runs untraced" in r.stderr and not (out / "trace.json").exists()


def test_library_unwritable_outdir(build, lib, amg, tmp_path):
    (tmp_path / "afile").write_text("")
    r = _run_direct(build, lib, amg, {"MPITEMPO_TRACE_DIR": str(tmp_path / "afile" / "tr")}, tmp_path)
    assert r.returncode == 0 and "amg_like: 20 iterations" in r.stdout
    assert "cannot create" in r.stderr and "runs untraced" in r.stderr
    assert r.stderr.count("mpitempo-trace: warning") == 1   # one warning, from rank 0


OTF2_READ = r"""
import csv, sys, otf2
enters = []
with otf2.reader.open(sys.argv[1]) as tr:
    for loc, ev in tr.events:
        if isinstance(ev, otf2.events.Enter):
            enters.append((int(loc.group.name.split()[-1]), ev.region.name, ev.time))
pseudo = ("irecv_done", "isend_done", "icoll_done", "start_send", "start_recv")
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["kind"] not in pseudo]
origin = float(sys.argv[3])   # trace.json otf2_time_origin_s: the global time of OTF2 time 0
want = sorted((int(r["rank"]), "MPI_" + r["call"].capitalize(), round((float(r["t_enter_s"]) - origin) * 1e9))
              for r in rows)
got = sorted(enters)
assert len(got) == len(want), (len(got), len(want))
bad = [(g, w) for g, w in zip(got, want) if g[:2] != w[:2] or abs(g[2] - w[2]) > 1]
assert not bad, bad[:5]
print("ok", len(got))
"""


def test_otf2_timestamps_are_the_global_clock(default_trace):
    """The archive read back with the OTF2 Python bindings: one ENTER per call, at the global time of
    events.csv (ns)."""
    out, res = default_trace
    if res["otf2"] is None:
        pytest.skip("built without OTF2")
    py = "/usr/bin/python3"
    if not os.path.exists(py) or subprocess.run([py, "-c", "import otf2"], capture_output=True).returncode != 0:
        pytest.skip("the OTF2 Python bindings are not installed (Debian package python3-otf2)")
    origin = json.loads((out / "trace.json").read_text())["otf2_time_origin_s"]
    assert origin <= 0   # the MPI_Init region begins before the sync epoch
    r = subprocess.run([py, "-c", OTF2_READ, res["otf2"], str(out / "events.csv"), repr(origin)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


OFFSETS = [0, 5]   # CLOCK_MONOTONIC offset of each fake host (s)


def test_fake_hosts_with_monotonic_offsets(build, cli, amg, tmp_path):
    """2 fake hosts (network and time namespaces), 1 rank each: the default hierarchical spec
    (HCA3 between hosts over TCP) aligns the traces of hosts whose clocks are 5 s apart."""
    if build.flavour != "mpich":
        pytest.skip(f"the fake-host launcher is written for MPICH Hydra (this build: {build.flavour})")
    why = nc.unavailable(time_namespaces=True)
    if why:
        pytest.skip(f"fake hosts unavailable: {why}")
    with nc.Cluster(2, monotonic_offsets=OFFSETS) as c:
        h1 = c.hosts[0]
        launch = tmp_path / "launch.sh"   # mpiexec on host 1, ranks on both hosts through the agent
        launch.write_text("#!/bin/sh\n" + " ".join(shlex.quote(a) for a in c.wrap(h1, "X")[:-5]) +
                          " sh -c 'hostname \"$0\" && exec \"$@\"' " + f"{h1} {build.mpiexec} -launcher rsh "
                          f"-launcher-exec {c.agent} -hosts {','.join(h + ':1' for h in c.hosts)} -n 2 \"$@\"\n")
        launch.chmod(0o755)
        os.environ["UCX_TLS"] = "tcp"

        def run(k):
            out = tmp_path / f"hosts{k}"
            res, _ = trace_json(cli, "-n", "2", "--launcher", f"{launch} {{cmd}}", "-o", out, "--", amg,
                                "--iters", "120")
            meta = json.loads((out / "trace.json").read_text())
            assert len(set(meta["hosts"])) == 2
            assert res["sync"]["algorithm"] == "h2:hca3/prop"
            return res, out

        try:
            meets_targets(run, OFFSETS)
        finally:
            os.environ.pop("UCX_TLS", None)


def test_wrapper_preload_is_kept(cli, build, amg, tmp_path):
    """A rank wrapper in the launcher that preloads its own library (another tool) keeps it under
    trace: the tracer is put in front of the LD_PRELOAD each rank finally has, not in its place."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the wrapper's library")
    marks = tmp_path / "marks"
    marks.mkdir()
    src = tmp_path / "tool.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n'
                   '__attribute__((constructor)) static void mark(void) {\n'
                   '  const char *d = getenv("TOOL_MARKS"); if (!d) return;\n'
                   '  const char *pre = getenv("LD_PRELOAD");\n'
                   '  char p[4096]; snprintf(p, sizeof p, "%s/%d", d, (int)getpid());\n'
                   '  FILE *f = fopen(p, "w"); if (f) { fprintf(f, "%s\\n", pre ? pre : ""); fclose(f); } }\n')
    so = tmp_path / "libtool.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    wrap = tmp_path / "wrap.sh"
    # the wrapper replaces LD_PRELOAD, as tools launched this way do
    wrap.write_text(f'#!/bin/sh\nLD_PRELOAD={so} TOOL_MARKS={marks} exec "$@"\n')
    wrap.chmod(0o755)
    out = tmp_path / "tr"
    res, _ = trace_json(cli, "-n", "2", "--launcher", "{mpiexec} -n {np} " + str(wrap) + " {cmd}",
                        "-o", out, "--", amg, "--iters", "20")
    assert res["events"] > 0
    from mpitempo.cmd_trace import find_library

    lib = find_library(build)
    # the shell of the shim and the application both load the tool; the application's LD_PRELOAD
    # has the tracer first and the wrapper's library after it
    seen = [p.read_text().strip() for p in marks.iterdir()]
    app_preloads = [s for s in seen if s.startswith(lib)]
    assert len(app_preloads) == 2, seen
    assert all(s == f"{lib}:{so}" for s in app_preloads), seen


def test_preload_shim_does_not_add_the_tracer_twice(tmp_path):
    from mpitempo.cmd_trace import preload_shim

    for before, after in (("", "/t/lib.so"), ("/a.so", "/t/lib.so:/a.so"), ("/t/lib.so:/a.so", "/t/lib.so:/a.so"),
                          ("/a.so:/t/lib.so", "/a.so:/t/lib.so")):
        env = dict(os.environ, LD_PRELOAD=before) if before else {k: v for k, v in os.environ.items()
                                                                   if k != "LD_PRELOAD"}
        r = subprocess.run([*preload_shim("/t/lib.so"), "sh", "-c", 'printf %s "$LD_PRELOAD"'], env=env,
                           capture_output=True, text=True)
        assert r.stdout == after, (before, r.stdout, r.stderr)
