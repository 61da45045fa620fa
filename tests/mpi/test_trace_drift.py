"""The tracer's end-of-run drift correction corrects (issue 33), checked against a known truth:
 - the simulated clock (MPITEMPO_SIM_OFFSETS / MPITEMPO_SIM_DRIFTS): rank 1 3 ms ahead and 0, 50 or
   200 ppm fast; the true time of every raw timestamp is known, so every event's error on the
   global clock is known;
 - real drift at the OS level (bench/os_clock_wrap.sh: libfaketime's rate on CLOCK_MONOTONIC):
   the true rate is known, the start offset only up to a constant, so what is checked is how much
   rank 1's error grows from the start of the trace to its end.
The error at the trace's end must stay within END_S (the correction that added about 2.6 ms x the
drift, +520 ns at 200 ppm, fails it), no event may violate the clock condition on the global clock,
and the accuracy the tracer states for its end (trace.json sync.offset_at_end_per_rank_s, measured
after the correction) must agree with the truth. The machine is shared: a loaded moment spoils a
clock measurement like any other, so one of ATTEMPTS mpiruns must meet the bounds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpitempo.analysis.trace import load

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
WRAP = ROOT / "bench" / "os_clock_wrap.sh"
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
END_S = 150e-9     # error at the trace's end (measured here: within 40-90 ns at 0-200 ppm, load 8)
AGREE_S = 150e-9   # the stated end accuracy against the truth
ATTEMPTS = 3


def trace(out: Path, exe: str, env: dict, *opts) -> dict:
    cli = Path(sys.executable).parent / "mpitempo"
    r = subprocess.run([str(cli), "trace", "run", "--json", "-n", "2", *opts, "-o", str(out), "--", exe,
                        "--iters", "1000"], capture_output=True, text=True, env=dict(os.environ, **env), timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_time(ev, rank, err):
    sel = ev["rank"].astype(int) == rank
    return err[sel][np.argsort(ev["t_enter_raw_s"][sel], kind="stable")]


def tail(x):
    return float(np.median(x[-max(1, len(x) // 20):]))   # the last 5% of the rank's events


def head(x):
    return float(np.median(x[:max(1, len(x) // 20)]))


@pytest.mark.parametrize("ppm", [0, 50, 200])
def test_simulated_drift_corrected_at_the_end(amg, tmp_path, ppm):
    seen = []
    for k in range(ATTEMPTS):
        out = tmp_path / f"sim{k}"
        res = trace(out, amg, {"MPITEMPO_SIM_OFFSETS": "0,0.003", "MPITEMPO_SIM_DRIFTS": f"0,{ppm}"})
        _, ev = load(out)
        r = ev["rank"].astype(int)
        off, dr = np.array([0, 0.003])[r], np.array([0, ppm * 1e-6])[r]
        err = ev["t_enter_s"] - (ev["t_enter_raw_s"] - off) / (1 + dr)   # global minus true
        e0, e1 = by_time(ev, 0, err), by_time(ev, 1, err)
        end = tail(e1) - tail(e0)
        sync = json.loads((out / "trace.json").read_text())["sync"]
        stated = sync["offset_at_end_per_rank_s"][1]
        seen.append({"end_error_ns": round(end * 1e9), "stated_ns": round(stated * 1e9) if stated is not None else None,
                     "correction_ns": round(sync["drift_at_end_per_rank_s"][1] * 1e9),
                     "violations": res["violations_global"]})
        assert sync["end_correction"] == "measured" and sync["interpolated"] is True
        if res["violations_global"] == 0 and abs(end) <= END_S and stated is not None and abs(stated - end) <= AGREE_S:
            return
    raise AssertionError(f"no mpirun met the bounds at {ppm} ppm: {seen}")


def test_os_level_drift_corrected(amg, tmp_path):
    if not Path(FAKETIME).exists():
        pytest.skip("libfaketime is not installed (apt-get install -y faketime libfaketime)")
    ppm = 200
    seen = []
    for k in range(ATTEMPTS):
        out = tmp_path / f"os{k}"
        res = trace(out, amg, {"MT_OS_DRIFTS_PPM": f"0,{ppm}", "MT_OS_OFFSETS_S": "0,0.002"}, "--sync", "hca3",
                    "--launcher", "{mpiexec} -n {np} " + str(WRAP) + " {cmd}")
        _, ev = load(out)
        rate = np.array([1.0, 1 + ppm * 1e-6])[ev["rank"].astype(int)]
        err = ev["t_enter_s"] - ev["t_enter_raw_s"] / rate    # global minus true, up to a constant per rank
        e0, e1 = by_time(ev, 0, err), by_time(ev, 1, err)
        growth = (tail(e1) - head(e1)) - (tail(e0) - head(e0))
        seen.append({"growth_ns": round(growth * 1e9), "violations": res["violations_global"],
                     "violations_raw": res["violations_raw"]})
        assert res["violations_raw"] > 50, seen   # the premise: the raw clocks really are apart
        if res["violations_global"] == 0 and abs(growth) <= END_S:
            return
    raise AssertionError(f"no mpirun met the bounds: {seen}")
