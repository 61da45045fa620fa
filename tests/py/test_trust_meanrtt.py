"""summary flags sync_inaccurate when a run's Mean-RTT-Offset saw preempted round trips (meta.json
clock.rtt_preempted_ranks), even when the accuracy check found nothing (docs/clocks.md)."""
import json

import numpy as np

from mpitempo.io.synthetic import write_run


def _clock(pre):
    return {"clock": {"sync": "jk:fitpts=40,pp=100,offset=meanrtt,rtt=median", "rtt_preempted_ranks": pre,
                      "rtt_spread_max_s": 4e-5 if pre else 1e-6,
                      "quality": {"max_abs_offset_s": [0.5e-6]}, "quality_end": {"max_abs_offset_s": 0.6e-6}}}


def test_preempted_mean_rtt_sync_is_flagged(cli, tmp_path):
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for cfg, pre in (("A", 0), ("B", 3)):
        for i in range(4):
            write_run(root, f"{cfg}-{i:03d}", cfg, i, "allreduce", 8, 1e-6 * (1 + 0.01 * rng.standard_normal(100)),
                      meta=_clock(pre if i == 2 else 0))
    code, out, err = cli("summary", root, "--json")
    assert code == 0, err
    rows = {r["config"]: r for r in json.loads(out)}
    assert "sync_inaccurate" not in rows["A"]["flags"] and "sync_inaccurate" in rows["B"]["flags"]
    code, out, err = cli("summary", root)
    flat = " ".join(out.split())   # the warnings are wrapped to the terminal
    assert "sync-off" in flat and "Mean-RTT-Offset saw preempted round trips" in flat
    assert "differ in clock.rtt_preempted_ranks" not in flat   # a measured fact, not a setting


def test_clock_below_accuracy_without_preemption_is_flagged(cli, tmp_path):
    # a drift not known to within 2 ppm, or inherited from the reference (clock.below_accuracy_ranks), with
    # SKaMPI-Offset (no Mean-RTT flag) and a check that happened to find nothing
    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    rng = np.random.default_rng(2)
    for cfg, below in (("A", 0), ("B", 2)):
        for i in range(4):
            meta = _clock(0)
            meta["clock"]["below_accuracy_ranks"] = below if i == 1 else 0
            write_run(root, f"{cfg}-{i:03d}", cfg, i, "allreduce", 8, 1e-6 * (1 + 0.01 * rng.standard_normal(100)),
                      meta=meta)
    code, out, err = cli("summary", root, "--json")
    assert code == 0, err
    rows = {r["config"]: r for r in json.loads(out)}
    assert "sync_inaccurate" not in rows["A"]["flags"] and "sync_inaccurate" in rows["B"]["flags"]
    code, out, err = cli("summary", root)
    assert "differ in clock.below_accuracy_ranks" not in " ".join(out.split())
