"""An application with HPCG's communication pattern traced and its OTF2 archive checked by an
independent reader (issue 33): tests/mpi/trace_src/halo_cg.c (a CG loop with a multigrid-like
V-cycle: halo exchanges with MPI_Irecv / MPI_Send / MPI_Wait as HPCG's ExchangeHalo, an 8-byte
MPI_Allreduce per dot product) on 2 ranks and, oversubscribed for correctness only, 4 ranks;
bench/trace_otf2_check.py reads `otf2-print` output (not mpitempo's reader): every message
matched by communicator, tag, peer and length, every collective instance complete on every rank
with consistent volumes, no clock-condition violation, the archive marked complete; the counts
agree with the program's own count of its calls. The real HPCG is checked the same way by
bench/trace_app_check.py (its build takes minutes: bench/results/trace_app_check.json)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from trace_otf2_check import check  # noqa: E402

THROTTLE = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"}
ITERS, N, LEVELS = 25, 256, 3


@pytest.fixture(scope="module")
def halo_cg(build, tmp_path_factory):
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print not installed (Debian package otf2-tools)")
    exe = tmp_path_factory.mktemp("halo") / "halo_cg"
    subprocess.run([build.mpicc, "-O2", "-o", str(exe), str(ROOT / "tests/mpi/trace_src/halo_cg.c")], check=True)
    return str(exe)


def _trace(cli, exe, np_, out, *opts):
    code, so, err = cli("trace", "run", "--json", "-n", str(np_), "-o", out, *opts, "--", exe, "--iters", str(ITERS),
                        "--n", str(N), "--levels", str(LEVELS))
    assert code == 0, err
    res = json.loads(so)
    if res["otf2"] is None:
        pytest.skip("the core was built without OTF2")
    m = re.search(r"calls: sends (\d+) allreduces (\d+)", err)   # the application's output goes to stderr
    assert m, err
    return res, int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("np_", [2, 4])
def test_halo_cg_archive_checked_by_otf2_print(cli, halo_cg, tmp_path, monkeypatch, np_):
    if np_ > 2:
        for k, v in THROTTLE.items():
            monkeypatch.setenv(k, v)
    res, sends, allreduces = _trace(cli, halo_cg, np_, tmp_path / f"t{np_}")
    chk = check(res["otf2"])
    assert chk["ok"], chk["problems"]
    assert len(chk["locations"]) == np_
    # every send of the program is a message matched to its receive: sender, receiver, communicator,
    # tag and length; nothing left over
    assert chk["messages_matched"] == sends and chk["sends_unmatched"] == chk["receives_unmatched"] == 0
    assert chk["records"]["MPI_SEND"] == sends and chk["records"]["MPI_IRECV"] == sends
    assert chk["length_mismatches"] == 0
    # every MPI_Allreduce and the final MPI_Reduce: one complete instance on every rank
    assert chk["collective_instances"] == allreduces // np_ + 1
    assert chk["records"]["MPI_COLLECTIVE_END"] == np_ * (allreduces // np_ + 1)
    assert chk["violations"] == 0, chk
    # the archive says it holds the whole run
    assert chk["properties"].get("MPITEMPO::TRACE_COMPLETE") == "true"
    assert "MPITEMPO::TRACE_INCOMPLETE_REASON" not in chk["properties"]
    # mpitempo's own analysis saw the same messages and instances
    assert res["violations"]["global"]["messages"] == sends
    assert res["violations"]["global"]["collective_instances"] == allreduces // np_ + 1
    assert res["violations_global"] == 0 and res["complete"] is True


def test_reader_finds_unmatched_messages(cli, halo_cg, tmp_path):
    """The reader is not a rubber stamp: with the receives left out of the trace (--calls) every
    send is unmatched and the check fails."""
    res, sends, _ = _trace(cli, halo_cg, 2, tmp_path / "nosend", "--calls", "send,wait,allreduce,reduce")
    chk = check(res["otf2"])
    assert not chk["ok"] and chk["sends_unmatched"] == sends and chk["messages_matched"] == 0


def test_trace_run_analyses_on_demand(cli, halo_cg, tmp_path):
    """After the run, trace run prints the trace's record only (no analysis, no plot: the cost after
    the application is nil); --analyse gives the analysis, --plot FILE draws the Gantt chart too."""
    out = tmp_path / "rec"
    code, so, err = cli("trace", "run", "-n", "2", "-o", out, "--", halo_cg, "--iters", "5", "--n", "64")
    assert code == 0, err
    assert f"analysis (clock-condition violations, start skew, wait states; --plot FILE for the Gantt chart): " \
           f"mpitempo trace {out}" in so.replace("\n", "")
    flat = so.replace("\n", "")
    assert "clock-condition violations: raw" not in flat and "wait states on the global clock" not in flat
    assert not list(out.glob("*.png"))
    plot = tmp_path / "pl" / "gantt.png"
    code, so, err = cli("trace", "run", "-n", "2", "--plot", plot, "-o", tmp_path / "pl", "--", halo_cg, "--iters",
                        "5", "--n", "64")
    assert code == 0, err
    assert plot.stat().st_size > 0 and "clock-condition violations: raw" in so and f"plot: {plot}" in so.replace("\n", "")
    code, so, err = cli("trace", "run", "-n", "2", "--analyse", "-o", tmp_path / "an", "--", halo_cg, "--iters", "5",
                        "--n", "64")
    assert code == 0 and "clock-condition violations: raw" in so and not list((tmp_path / "an").glob("*.png"))


@pytest.mark.parametrize("args, msg", [
    (["--plot", "{d}/g.jpg"], "cannot write the plot '{d}/g.jpg': give a file name ending in .png, .pdf or .svg"),
    (["--analyse", "--mpiruns", "2"], "--analyse goes with a single mpirun"),
    (["--plot", "g.png", "--mpiruns", "2"], "--plot goes with a single mpirun"),
])
def test_analysis_options_refused_before_launch(cli, tmp_path, args, msg):
    d = tmp_path / "never"
    code, _, err = cli("trace", "run", "-n", "2", *[a.format(d=d) for a in args], "-o", d, "--", "/bin/true")
    assert code == 2 and msg.format(d=d) in err and not d.exists(), err
