"""Partial traces are marked as such (issue 33 item 5): a buffer that filled (--buffer tiny, stop and
wrap) marks trace.json (complete, incomplete_reason), the OTF2 archive (anchor-file properties
MPITEMPO::TRACE_COMPLETE / MPITEMPO::TRACE_INCOMPLETE_REASON, read with otf2-print by the
independent reader), the summary of `trace run` and `trace DIR` and their JSON; a rank that ends
without MPI_Finalize, and a run stopped by its --timeout (SIGTERM to every rank), leave per-rank
partial files whose summary names the ranks interrupted and the ranks that wrote nothing."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from trace_otf2_check import check  # noqa: E402


@pytest.fixture(scope="module")
def halo_cg(build, tmp_path_factory):
    exe = tmp_path_factory.mktemp("halo") / "halo_cg"
    subprocess.run([build.mpicc, "-O2", "-o", str(exe), str(ROOT / "tests/mpi/trace_src/halo_cg.c")], check=True)
    return str(exe)


@pytest.mark.parametrize("on_full", ["stop", "wrap"])
def test_full_buffer_marks_every_output(cli, halo_cg, tmp_path, on_full):
    out = tmp_path / on_full
    code, so, err = cli("trace", "run", "-n", "2", "--buffer", "40", "--on-full", on_full, "-o", out, "--", halo_cg,
                        "--iters", "10", "--n", "64")
    assert code == 0, err
    lost = "events not recorded" if on_full == "stop" else "overwritten"
    # the summary trace run prints (the record, no analysis)
    assert "(INCOMPLETE)" in so and "INCOMPLETE: buffer full on 2 of 2 ranks (--buffer 40, --on-full " + on_full in so
    meta = json.loads((out / "trace.json").read_text())
    assert meta["complete"] is False and meta["incomplete_reason"].startswith("buffer full on 2 of 2 ranks")
    b = meta["buffer"]
    n_lost = b["events_dropped"] if on_full == "stop" else b["events_overwritten"]
    assert n_lost > 0 and f"{n_lost} {lost}" in meta["incomplete_reason"]
    code, so, err = cli("trace", out, "--json")
    assert code == 0, err
    res = json.loads(so)
    assert res["complete"] is False and res["incomplete_reason"] == meta["incomplete_reason"]
    code, so, _ = cli("trace", out)
    assert code == 0 and "INCOMPLETE: buffer full" in so
    if meta.get("otf2") is None:
        pytest.skip(meta.get("otf2_note") or "built without OTF2")
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print not installed (Debian package otf2-tools)")
    props = check(str(out / meta["otf2"]))["properties"]
    assert props["MPITEMPO::TRACE_COMPLETE"] == "false"
    assert props["MPITEMPO::TRACE_INCOMPLETE_REASON"] == meta["incomplete_reason"]


def test_complete_trace_is_marked_complete(cli, halo_cg, tmp_path):
    out = tmp_path / "whole"
    code, so, err = cli("trace", "run", "--json", "-n", "2", "-o", out, "--", halo_cg, "--iters", "5", "--n", "64")
    assert code == 0, err
    res = json.loads(so)
    meta = json.loads((out / "trace.json").read_text())
    assert res["complete"] is True and meta["complete"] is True and "incomplete_reason" not in meta
    if meta.get("otf2") and shutil.which("otf2-print"):
        assert check(str(out / meta["otf2"]))["properties"]["MPITEMPO::TRACE_COMPLETE"] == "true"


def test_rank_that_dies_is_named(cli, halo_cg, tmp_path):
    """Rank 1 exits at iteration 5 without MPI_Finalize: it writes its partial file, the launcher
    kills rank 0, which writes nothing; both are said."""
    out = tmp_path / "died"
    code, _, err = cli("trace", "run", "-n", "2", "-o", out, "--", halo_cg, "--iters", "100000", "--n", "64",
                       "--die", "1:5")
    assert code != 0 and "without MPI_Finalize" in err and "INCOMPLETE" in err, err
    assert (out / "partial" / "rank-1.csv").is_file()
    code, so, err = cli("trace", out, "--json")
    assert code == 0, err
    res = json.loads(so)
    assert res["complete"] is False and res["ranks"] == 2
    reason = res["incomplete_reason"]
    assert reason.startswith("the application did not call MPI_Finalize")
    if not (out / "partial" / "rank-0.csv").exists():
        assert "rank(s) 0 of 2 wrote no events" in reason
    code, so, _ = cli("trace", out)
    assert code == 0 and "INCOMPLETE: the application did not call MPI_Finalize" in so


def test_interrupted_run_keeps_what_ranks_recorded(cli, halo_cg, tmp_path):
    """--timeout stops the run with SIGTERM to every rank: each rank that gets to write keeps its
    events, its file says the signal, the summary says which ranks were interrupted."""
    out = tmp_path / "stopped"
    code, _, err = cli("trace", "run", "-n", "2", "--timeout", "5", "--buffer", "3000", "-o", out, "--", halo_cg,
                       "--iters", "100000000", "--n", "64")
    assert code != 0 and "timed out after 5 s" in err and "partial events" in err, err
    # trace run sends SIGTERM to the ranks themselves (not the launcher, which would SIGKILL them
    # mid-write), and each rank waits for the others' files before it ends
    files = sorted(p.name for p in (out / "partial").iterdir())
    assert files == ["rank-0.csv", "rank-1.csv"], files
    for f in files:
        assert "no MPI_Finalize (signal 15)" in (out / "partial" / f).read_text().split("\n", 1)[0]
    code, so, err = cli("trace", out, "--json")
    assert code == 0, err
    res = json.loads(so)
    assert res["complete"] is False and "interrupted by SIGTERM on rank(s) 0, 1" in res["incomplete_reason"]
    assert res["events"] > 0


def test_campaign_report_marks_partial_runs(cli, halo_cg, tmp_path):
    camp = tmp_path / "camp"
    code, _, err = cli("trace", "run", "--quiet", "-n", "2", "--mpiruns", "2", "--buffer", "40", "-o", camp, "--",
                       halo_cg, "--iters", "10", "--n", "64")
    assert code == 0, err
    code, so, err = cli("trace", camp, "--json")
    assert code == 0, err
    res = json.loads(so)
    assert len(res["runs_partial_trace"]) == 2 and all(r["complete"] is False for r in res["runs"])
    code, so, _ = cli("trace", camp)
    assert code == 0 and so.count("INCOMPLETE run ") == 2 and "(incomplete)" in so
