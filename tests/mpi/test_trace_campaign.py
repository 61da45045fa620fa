"""Tracing as a campaign kind (issue 24, item 6): `mpitempo trace run --mpiruns N -o DIR` and
`--resume DIR` under real mpiruns of tests/mpi/trace_src/callsites.c. A failed mpirun is recorded
(runs/<id>/failed.json, runlog.jsonl) and the campaign continues; resume reruns only that run,
after consent to the stored application; a timed-out mpirun is recorded as such; a run
directory holding a link is refused before anything runs; every complete run has its trace and
a meta.json with the factors and the digests of its data files, and `trace DIR` gives each run
and the wait states over the mpiruns (per pattern and call site)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "mpi" / "trace_src" / "callsites.c"


@pytest.fixture(scope="module")
def apps(build, tmp_path_factory):
    d = tmp_path_factory.mktemp("camp")
    exe = d / "callsites"
    subprocess.run([build.mpicc, "-g", "-O1", "-o", str(exe), str(SRC)], check=True)
    flaky = d / "flaky.sh"   # fails (exit 5) in the run directory ending in -001 while no pass file exists
    flaky.write_text("#!/bin/sh\n"
                     f"case \"$MPITEMPO_TRACE_DIR\" in *-001) [ -e {d}/pass ] || "
                     "{ echo 'flaky: failing on purpose' >&2; exit 5; } ;; esac\n"
                     f"exec {exe} \"$@\"\n")
    flaky.chmod(0o755)
    return d, str(exe), str(flaky)


def runlog(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "runlog.jsonl").read_text().splitlines()]


def test_failure_recorded_and_resume_reruns_only_it(cli, apps, tmp_path):
    d, _exe, flaky = apps
    dd = tmp_path / "delays"
    dd.mkdir()
    out = tmp_path / "camp"
    code, stdout, err = cli("trace", "run", "-n", "2", "--mpiruns", "3", "-o", out, "--", flaky, "20", "50", "1", dd)
    assert code != 0 and "1 of 3 mpiruns failed" in err, err
    assert "[2/3] default-001" in err and "default-001 failed: " in err
    rec = json.loads((out / "runs" / "default-001" / "failed.json").read_text())
    # the reason: the application's last error line (MPICH) or the launcher's (Open MPI's mpirun)
    assert rec["status"] == "failed" and rec["returncode"] != 0 and rec["reason"]
    assert "flaky: failing on purpose" in (out / "runs" / "default-001" / "stderr.log").read_text()
    assert [r["status"] for r in runlog(out)] == ["ok", "failed", "ok"]
    for rid in ("default-000", "default-002"):
        meta = json.loads((out / "runs" / rid / "meta.json").read_text())
        assert meta["kind"] == "trace" and meta["nprocs"] == 2 and meta["trace"]["app"][0] == flaky
        assert meta["timer"]["name"] == "monotonic" and meta["clock"]["sync"]
        assert set(meta["files"]) == {"trace.json", "events.csv"}
        assert meta["files"]["events.csv"]["bytes"] == (out / "runs" / rid / "events.csv").stat().st_size
        assert (out / "runs" / rid / "trace.json").is_file() and (out / "runs" / rid / "sites.tsv").is_file()
    # the summary so far: two runs, the failed one named
    code, stdout, err = cli("trace", out, "--json")
    res = json.loads(stdout)
    assert res["runs_complete"] == 2 and res["runs_failed"] == 1 and res["failed"][0]["run_id"] == "default-001"
    # resume: refused without consent (nothing runs), then only the failed run runs
    (d / "pass").write_text("")
    try:
        code, stdout, err = cli("trace", "run", "--resume", out)
        assert code != 0 and "without your consent" in err and "flaky.sh" in err, err
        assert len(runlog(out)) == 3
        before = (out / "runs" / "default-000" / "meta.json").stat().st_mtime_ns
        code, stdout, err = cli("trace", "run", "--resume", out, "--yes")
        assert code == 0, err
        assert "2 of 3 runs complete, 1 to run" in err and "flaky.sh" in err
    finally:
        (d / "pass").unlink()
    assert [r["run_id"] for r in runlog(out)][3:] == ["default-001"]
    assert (out / "runs" / "default-000" / "meta.json").stat().st_mtime_ns == before
    assert (out / "runs" / "default-001" / "failed-attempt-1.json").is_file()
    code, stdout, err = cli("trace", out, "--json")
    res = json.loads(stdout)
    assert res["runs_complete"] == 3 and res["runs_failed"] == 0 and len(res["runs"]) == 3
    # the across-run view: each site's wait over the runs, near its injected delay (20 and 50 ms)
    sites = res["wait_states_per_site_across_runs"]["late_sender"]
    by_fn = {}
    for label, s in sites.items():
        fn = res["runs"][0]["call_sites"].get(label, {}).get("function")
        by_fn[(fn, s["call"])] = s
    a, b = by_fn[("site_a", "recv")], by_fn[("site_b", "recv")]
    assert a["runs"] == b["runs"] == 3 and len(a["per_run_s"]) == 3
    assert a["min_s"] <= a["median_s"] <= a["max_s"]
    assert 0.018 < a["median_s"] < 0.05 and 0.048 < b["median_s"] < 0.1, (a, b)
    code, text, err = cli("trace", out)
    assert code == 0 and "wait states over 3 mpirun(s)" in text and "site_b (callsites.c:" in text


def test_timeout_recorded(cli, apps, tmp_path):
    _d, exe, _flaky = apps
    dd = tmp_path / "delays"
    dd.mkdir()
    out = tmp_path / "camp"
    code, stdout, err = cli("trace", "run", "-n", "2", "--mpiruns", "2", "--timeout", "3", "-o", out, "--",
                            exe, "20000", "20", "1", dd)
    assert code != 0 and "2 of 2 mpiruns failed" in err, err
    for rid in ("default-000", "default-001"):
        rec = json.loads((out / "runs" / rid / "failed.json").read_text())
        assert rec["status"] == "timeout" and "timeout" in rec["reason"]
        assert not (out / "runs" / rid / "meta.json").exists()
    code, stdout, err = cli("trace", out)
    assert code != 0 and "no complete run" in err


def test_resume_refuses_a_link_in_a_run_directory(cli, apps, tmp_path):
    d, _exe, flaky = apps
    dd = tmp_path / "delays"
    dd.mkdir()
    out = tmp_path / "camp"
    code, _, err = cli("trace", "run", "-n", "2", "--mpiruns", "2", "-o", out, "--", flaky, "5", "5", "1", dd)
    assert code != 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, out / "runs" / "default-001" / "events.csv")
    code, _, err = cli("trace", "run", "--resume", out, "--yes")
    assert code != 0 and "link" in err, err
    assert victim.read_text() == "keep me\n" and len(runlog(out)) == 2
