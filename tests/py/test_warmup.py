"""The warm-up of summary groups (analysis/warmup.py) from meta.json, and its flag."""
from __future__ import annotations

from mpitempo.analysis.flags import flag_cell, flag_notes
from mpitempo.analysis.warmup import group_warmup, warmup_cell
from mpitempo.io import params as ptable
from mpitempo.errors import MtError

import pytest


def meta(setting, calls=None, capped=False, op="allreduce", msize=8):
    exps = [{"op": "bcast", "msize": 8, "warmup_calls": 999, "warmup_capped": True}]
    if calls is not None:
        exps.append({"op": op, "msize": msize, "warmup_calls": calls, "warmup_capped": capped})
    return {"scheme": {"name": "barrier", "warmup": setting}, "experiments": exps}


def rows(n):
    return [{"run_id": f"r{i}", "run_index": i, "op": "allreduce", "msize": 8} for i in range(n)]


def test_auto_counts_and_capped_runs():
    metas = {"r0": meta("auto", 160), "r1": meta("auto", 2000, True), "r2": meta("auto", 220)}
    w = group_warmup(rows(3), metas)
    assert w == {"setting": "auto", "calls_median": 220, "calls_min": 160, "calls_max": 2000, "capped_runs": [1]}
    assert warmup_cell(w) == "auto 160-2000 (capped in 1 run)"
    r = {"config": "default", "op": "allreduce", "msize": 8, "nprocs": 2, "flags": ["warmup_capped"], "warmup": w}
    (note,) = flag_notes([r])
    assert "--warmup auto found no steady state before its cap in run(s) 1" in note
    assert flag_cell(r["flags"]) == "warmup-capped"


def test_fixed_and_unknown():
    w = group_warmup(rows(2), {"r0": meta(10, 10), "r1": meta(10, 10)})
    assert w["setting"] == 10 and warmup_cell(w) == "10"
    # files written before the per-experiment counts: the setting is still known
    w = group_warmup(rows(1), {"r0": {"scheme": {"warmup": 20}, "experiments": [{"op": "allreduce", "msize": 8}]}})
    assert w["setting"] == 20 and w["calls_min"] == 20
    assert group_warmup(rows(1), {"r0": {}}) is None and warmup_cell(None) == "-"
    assert group_warmup(rows(2), {"r0": meta(10, 10), "r1": meta("auto", 100)})["setting"] == "mixed"
    assert warmup_cell(group_warmup(rows(1), {"r0": meta("auto", 60)})) == "auto 60"


def test_param_accepts_auto():
    p = ptable.for_app("bench")["warmup"]
    assert p.type == "INT_AUTO" and p.default == "10"
    assert p.check("auto") == "auto" and p.check(" auto ") == "auto" and p.check("12") == 12 and p.check(0) == 0
    for bad in ("Auto", "often", "-1", 1.5, True):
        with pytest.raises(MtError, match="warmup"):
            p.check(bad)
    # the other apps keep plain integers
    assert ptable.for_app("pingpong")["warmup"].type == "INT"


def test_group_flags_carry_the_capped_flag():
    """summary and compare take their flags from group_flags: the capped flag is there."""
    from mpitempo.analysis.flags import group_flags

    rs = [dict(r, n=10, outliers=0, median_s=1e-6) for r in rows(2)]
    f = group_flags(rs, {"r0": meta("auto", 60), "r1": meta("auto", 2000, True)})
    assert "warmup_capped" in f["flags"] and f["warmup"]["capped_runs"] == [1]
    f = group_flags(rs, {"r0": meta("auto", 60), "r1": meta("auto", 80)})
    assert "warmup_capped" not in f["flags"] and f["warmup"]["calls_max"] == 80
