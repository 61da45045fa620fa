"""The end-of-run clock check in summary, report and JSON (docs/clocks.md, "Verified at the end"): the
error measured after the last measurement is held to its threshold (the stated 2 µs, or the scheme's
window or slack when smaller, named), the measured accuracy is what is shown, and the core's own verdict
(clock.sync_inaccurate, e.g. a drift not known well enough for the horizon) raises the flag."""
import json

import numpy as np

from mpitempo.analysis.flags import sync_off
from mpitempo.io.synthetic import write_run


def _clock(end, thr=2e-6, of="stated_accuracy", flagged=False, below=0):
    return {"clock": {"sync": "hca3:fitpts=40", "rtt_preempted_ranks": 0, "below_accuracy_ranks": below,
                      "quality": {"max_abs_offset_s": [0.1e-6]}, "accuracy_s": max(end, 0.1e-6),
                      "drift_bound_ppm": 0.2, "sync_inaccurate": flagged,
                      "quality_end": {"max_abs_offset_s": end, "offset_per_rank_s": [0, -end], "horizon_s": 10.0,
                                      "run_s": 10.5, "duration_s": 0.021, "cost_fraction": 0.002,
                                      "threshold_s": thr, "threshold_of": of, "inaccurate_ranks": int(end > thr)}}}


def _campaign(root, metas):
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for cfg, meta in metas.items():
        for i in range(3):
            write_run(root, f"{cfg}-{i:03d}", cfg, i, "allreduce", 8, 1e-6 * (1 + 0.01 * rng.standard_normal(100)),
                      meta=meta if i == 1 else _clock(0.1e-6))


def test_end_error_against_its_threshold(cli, tmp_path):
    root = tmp_path / "c"
    # A: 1.5 us at the end, within 2 us; B: the same against Round-Time's slack of 1 us; C: 3 us;
    # D: within, but the core flagged it (a drift not known well enough for the horizon)
    _campaign(root, {"A": _clock(1.5e-6), "B": _clock(1.5e-6, 1e-6, "slack"), "C": _clock(3e-6),
                     "D": _clock(0.2e-6, flagged=True, below=1)})
    code, out, err = cli("summary", root, "--json")
    assert code == 0, err
    rows = {r["config"]: r for r in json.loads(out)}
    assert "sync_inaccurate" not in rows["A"]["flags"]
    for c in "BCD":
        assert "sync_inaccurate" in rows[c]["flags"], rows[c]
    sy = rows["B"]["sync"]
    assert sy["threshold_s"] == 1e-6 and sy["threshold_of"] == "slack" and sy["inaccurate_runs"] == [1]
    assert sy["end_max_abs_offset_s"] == 1.5e-6 and sy["accuracy_s"] == 1.5e-6 and sy["horizon_s"] == 10.0
    assert sy["end_check_s"] == 0.021 and sy["end_check_fraction"] == 0.002
    assert any("1.5 µs off at the end (more than 1 µs: slack)" in r for r in sy["reasons"])
    assert any("below their stated accuracy" in r for r in rows["D"]["sync"]["reasons"])
    code, out, err = cli("summary", root)
    flat = " ".join(out.split())
    assert "clock of A (1 group): measured accuracy 1.5 µs; at the end 1.5 µs, 10 s after the sync" in flat
    assert "end check 21 ms, 0.2% of the run" in flat and "sync-off" in flat
    code, out, err = cli("report", root, "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "measured accuracy 3 µs" in html and "more than 2 µs: stated accuracy" in html


def test_sync_off_rules():
    base = {"synced": True, "sync_max_s": 0.1e-6, "sync_preempted": 0, "sync_below": 0}
    assert not sync_off(dict(base, sync_end_s=1.9e-6, sync_threshold_s=2e-6))
    assert sync_off(dict(base, sync_end_s=2.1e-6, sync_threshold_s=2e-6))
    assert sync_off(dict(base, sync_end_s=0.6e-6, sync_threshold_s=0.5e-6))          # the scheme's gap
    assert sync_off(dict(base, sync_max_s=2.5e-6, sync_end_s=None))                 # old runs: 2 us
    assert sync_off(dict(base, sync_flagged=True))
    assert not sync_off(dict(base, synced=False, sync_flagged=True))
