"""The result flags: each detector fires on synthetic data built for it and not on data without its
distortion; severity order in cells and notes; the thresholds in the code are those documented in
docs/methods.md ("Flag rates"); the test knob of the synthetic op is parsed as documented."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.analysis import flags as F
from mpitempo.stats import changepoints, modes, strata

ROOT = Path(__file__).resolve().parents[2]


# -- documented thresholds -----------------------------------------------------------------------

def _doc_thresholds() -> dict[str, float]:
    """NAME = value pairs in the threshold column of docs/methods.md's flag-rates table."""
    text = (ROOT / "docs" / "methods.md").read_text()
    sec = text[text.index("## Flag rates"):]
    sec = sec[: sec.index("\n## ", 5)] if "\n## " in sec[5:] else sec
    out = {}
    for m in re.finditer(r"`([A-Z_]+) = ([0-9.e+-]+)`", sec):
        out[m.group(1)] = float(m.group(2))
    return out


CODE = {"GAP_FACTOR": lambda: modes.GAP_FACTOR, "MIN_RUNS": lambda: modes.MIN_RUNS,
        "RATIO_GROSS": lambda: modes.RATIO_GROSS, "Z_MIN": lambda: changepoints.Z_MIN,
        "MIN_REL_SHIFT": lambda: changepoints.MIN_REL_SHIFT, "MIN_SEG": lambda: changepoints.MIN_SEG,
        "STRATA_RATIO": lambda: strata.RATIO, "STRATA_MIN_GAP": lambda: strata.MIN_GAP,
        "STRATA_MIN_EFFECT": lambda: F.STRATA_MIN_EFFECT,
        "SYNC_ACCURACY_S": lambda: F.SYNC_ACCURACY_S, "COMPUTE_TOLERANCE": lambda: F.COMPUTE_TOLERANCE,
        "CPU_SHARE_MIN": lambda: F.CPU_SHARE_MIN, "RUN_DELAY_MIN": lambda: F.RUN_DELAY_MIN,
        "CPU_SHARE_GROSS": lambda: F.CPU_SHARE_GROSS}


def test_documented_thresholds_are_the_code_s():
    doc = _doc_thresholds()
    assert set(doc) == set(CODE), f"documented {sorted(doc)} vs checked {sorted(CODE)}"
    for k, get in CODE.items():
        assert doc[k] == pytest.approx(get(), rel=1e-12), f"{k}: docs say {doc[k]}, the code has {get()}"


@pytest.mark.parametrize("macro,name", [("MT_CPUSHARE_MIN", "CPU_SHARE_MIN"), ("MT_RUNDELAY_MIN", "RUN_DELAY_MIN"),
                                        ("MT_CPUSHARE_GROSS", "CPU_SHARE_GROSS")])
def test_cpu_share_thresholds_are_the_core_s(macro, name):
    """The start-up check (src/core) decides shared_cpu; its thresholds are the documented ones."""
    src = (ROOT / "src" / "core").rglob("*.[ch]")
    hits = [m.group(1) for f in src for m in re.finditer(rf"#define\s+{macro}\s+([0-9.]+)", f.read_text())]
    assert hits and float(hits[0]) == getattr(F, name)


def test_cpu_share_verdict_mirrors_the_core_s():
    """analysis.flags.cpu_share_low is the core's mt_cpushare_low (tests/c/test_factors.c has the same cases)."""
    cases = [((0.95, 0.0), False), ((0.95, 0.5), False), ((0.6, 0.4), True), ((0.76, 0.01), False),
             ((0.76, F.RUN_DELAY_MIN), True), ((0.76, None), True), ((0.76, -1), True), ((0.4, 0.0), True),
             ((F.CPU_SHARE_MIN, 0.2), False)]
    for args, want in cases:
        assert F.cpu_share_low(*args) is want, args


def test_documented_rates_per_flag():
    """Every flag has a row in the rates table with both rates (or says why it has none)."""
    text = (ROOT / "docs" / "methods.md").read_text()
    sec = text[text.index("## Flag rates"):]
    for f in F.FLAG_NAMES:
        assert re.search(rf"^\| `{f}` \|", sec, re.M), f"no row for {f} in docs/methods.md, 'Flag rates'"


# -- severity ------------------------------------------------------------------------------------

def test_severity_order():
    assert set(F.FLAG_NAMES) == set(F.FLAG_SEVERITY)
    levels = [F.FLAG_SEVERITY[f] for f in F.FLAG_NAMES]
    order = {"wrong": 0, "mixed": 1, "noisy": 2}
    assert levels == sorted(levels, key=order.get), "wrong before mixed before noisy"
    assert F.by_severity(["multimodal", "oversubscribed", "zzz", "regime_change", "outlier_runs"]) == \
        ["oversubscribed", "outlier_runs", "regime_change", "multimodal", "zzz"]
    assert F.flag_cell(["warmup_capped", "multimodal", "sync_inaccurate"]) == "sync-off,multimodal,warmup-capped"


@given(st.lists(st.sampled_from(F.FLAG_NAMES), unique=True))
def test_by_severity_is_a_sorted_permutation(fl):
    out = F.by_severity(fl)
    assert sorted(out) == sorted(fl)
    assert [F.FLAG_NAMES.index(f) for f in out] == sorted(F.FLAG_NAMES.index(f) for f in fl)


def _row(cfg, **kw):
    r = {"config": cfg, "op": "delay", "msize": 0, "nprocs": 2, "flags": []}
    r.update(kw)
    return r


def test_notes_wrong_before_noisy():
    # the noisy row comes first in the table; its note comes after the wrong row's
    rows = [_row("a", flags=["warmup_capped", "multimodal"], warmup={"capped_runs": [1]},
                 modes=[{"center_s": 1e-6, "share": 0.5}, {"center_s": 2e-6, "share": 0.5}]),
            _row("b", flags=["outlier_runs"], outlier_runs=[{"run_index": 3, "median_s": 4e-6, "ratio": 4.0,
                                                             "cause": "unknown"}]),
            _row("c", flags=["oversubscribed"])]
    notes = F.flag_notes(rows)
    where = {k: next(i for i, n in enumerate(notes) if k in n) for k in ("OVERSUBSCRIBED", "4x its", "levels",
                                                                           "warmup auto")}
    assert where["OVERSUBSCRIBED"] < where["4x its"] < where["levels"] < where["warmup auto"]


def test_report_cell_marks_severity():
    from mpitempo.present.report import _flag_html

    h = _flag_html(["multimodal", "oversubscribed"])
    assert h.index("OVERSUB") < h.index("multimodal")
    assert "class='flag' title='wrong'>OVERSUB" in h and "class='flag-mixed' title='mixed'>multimodal" in h
    assert _flag_html([]) == "-"


# -- detectors on data built for them -------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.integers(5, 20), st.floats(0.0, 0.05), st.integers(0, 2**31 - 1))
def test_outlier_run_found_and_only_it(n, noise, seed):
    rng = np.random.default_rng(seed)
    meds = list(1e-6 * np.exp(rng.uniform(-noise, noise, n)))
    assert modes.outlier_runs(meds) == []                         # +-5% is not "far off"
    k = int(rng.integers(n))
    meds[k] *= modes.RATIO_GROSS * 1.2
    assert [o["index"] for o in modes.outlier_runs(meds)] == [k]


@settings(max_examples=60, deadline=None)
@given(st.integers(4, 12), st.integers(4, 12), st.floats(1.25, 3.0), st.integers(0, 2**31 - 1))
def test_two_levels_found(a, b, factor, seed):
    rng = np.random.default_rng(seed)
    lo = 1e-6 * np.exp(rng.normal(0, 0.005, a))
    hi = factor * 1e-6 * np.exp(rng.normal(0, 0.005, b))
    m = modes.modes(np.concatenate([lo, hi]))
    assert len(m) == 2 and m[0]["n"] == a and m[1]["n"] == b


@settings(max_examples=60, deadline=None)
@given(st.integers(4, 40), st.floats(0.001, 0.03), st.integers(0, 2**31 - 1))
def test_one_level_not_split(n, sd, seed):
    # run medians of one machine state, spread as measured between mpiruns on the idle machine
    rng = np.random.default_rng(seed)
    x = 1e-6 * np.exp(np.clip(rng.normal(0, sd, n), -2.5 * sd, 2.5 * sd))
    assert len(modes.modes(x)) == 1


@settings(max_examples=30, deadline=None)
@given(st.integers(240, 2000), st.floats(0.25, 1.0), st.floats(0.25, 0.75), st.integers(0, 2**31 - 1))
def test_regime_change_found(n, step, at, seed):
    # a level change of >= 25% with both levels >= 60 measurements long (MIN_SEG: 50)
    rng = np.random.default_rng(seed)
    x = 20e-6 * np.exp(rng.normal(0, 0.01, n))
    k = int(at * n)
    x[k:] *= 1 + step
    cps = changepoints.change_points(x)
    assert len(cps) == 1 and abs(cps[0] - k) <= max(2, n // 100)


@settings(max_examples=30, deadline=None)
@given(st.integers(100, 2000), st.floats(0.001, 0.05), st.integers(0, 2**31 - 1))
def test_no_regime_change_in_one_level(n, sd, seed):
    rng = np.random.default_rng(seed)
    x = 20e-6 * np.exp(rng.normal(0, sd, n))
    x[rng.integers(n, size=max(1, n // 100))] *= 5           # OS noise spikes are not a level
    assert changepoints.change_points(x) == []


def _meta(**kw):
    m = {"shared_cpu": {"shared": False, "oversubscribed": False, "min_cpu_share": 0.99},
         "clock": {"sync": "none"}}
    for k, v in kw.items():
        m[k] = v
    return m


def _group(metas, meds=None):
    meds = meds or [1e-6] * len(metas)
    rows = [{"run_id": f"r{i}", "run_index": i, "n": 100, "outliers": 0, "median_s": m, "op": "delay", "msize": 0}
            for i, m in enumerate(meds)]
    return F.group_flags(rows, {f"r{i}": m for i, m in enumerate(metas)})["flags"]


def test_meta_flags_fire_on_their_distortion_only():
    clean = [_meta() for _ in range(6)]
    assert _group(clean) == []
    # one run with a competing process at start-up (53% CPU share)
    busy = clean[:5] + [_meta(shared_cpu={"shared": True, "oversubscribed": False, "min_cpu_share": 0.53})]
    assert _group(busy) == ["shared_cpu"]
    over = clean[:5] + [_meta(scheme={"oversubscribed": True})]
    assert _group(over) == ["oversubscribed", "shared_cpu"]
    # synchronised clocks: within accuracy, beyond it, preempted round trips
    ok = [_meta(clock={"sync": "hca3", "quality": {"max_abs_offset_s": [0, 0.4e-6]}}) for _ in range(6)]
    assert _group(ok) == []
    off = ok[:5] + [_meta(clock={"sync": "hca3", "quality": {"max_abs_offset_s": [0, 1.5 * F.SYNC_ACCURACY_S]}})]
    assert _group(off) == ["sync_inaccurate"]
    pre = ok[:5] + [_meta(clock={"sync": "hca3", "rtt_preempted_ranks": 1})]
    assert _group(pre) == ["sync_inaccurate"]
    sim = clean[:5] + [_meta(mpi={"library": "SMPI Version 3.3"})]
    assert _group(sim) == ["simulated"]


def test_warmup_capped_fires_on_a_capped_run_only():
    def m(capped):
        return _meta(scheme={"warmup": "auto"}, experiments=[{"op": "delay", "msize": 0, "warmup_calls": 50,
                                                              "warmup_capped": capped}])
    assert _group([m(False)] * 4) == []
    assert _group([m(False)] * 3 + [m(True)]) == ["warmup_capped"]


def _probe(r):
    return _meta(core_latency={"before": {"rtt_median_s": r}, "after": {"rtt_median_s": r}})


def test_core_latency_strata():
    assert _group([_probe(110e-9 * (1 + 0.05 * i)) for i in range(6)]) == []
    # placed apart, and the op's time follows the placement: flagged
    # (the levels are the strata: core_latency alone)
    assert _group([_probe(110e-9)] * 4 + [_probe(470e-9)] * 2, [0.55e-6] * 4 + [1.3e-6] * 2) == ["core_latency"]
    # levels that are not the strata stay multimodal
    assert _group([_probe(110e-9)] * 4 + [_probe(470e-9)] * 2, [0.55e-6] * 2 + [1.3e-6] * 4) == ["multimodal",
                                                                                              "core_latency"]
    # placed apart, but the op (a busy-wait) does not depend on it: nothing to flag
    assert _group([_probe(110e-9)] * 4 + [_probe(470e-9)] * 2, [20e-6] * 6) == []


def test_placement_explains_a_far_off_run():
    """One run on near cores (probe 140 ns vs 410 ns) 4x faster than its siblings, as measured here
    for allreduce 8 B: core_latency, not outlier_runs; a run 4x slower on the same cores as its
    siblings stays an outlier run; a run 4x slower on *nearer* cores is not explained by them."""
    probes = [410e-9] * 7 + [140e-9]
    assert _group([_probe(p) for p in probes], [1e-6] * 7 + [0.25e-6]) == ["core_latency"]
    assert _group([_probe(410e-9)] * 8, [20e-6] * 7 + [80e-6]) == ["outlier_runs"]
    assert _group([_probe(p) for p in probes], [20e-6] * 7 + [80e-6]) == ["outlier_runs", "core_latency"]


# -- the test knob of the synthetic op ------------------------------------------------------------

def test_knob_documented():
    text = (ROOT / "docs" / "methods.md").read_text()
    assert "MPITEMPO_TEST_DELAY_STEP" in text
    src = (ROOT / "src" / "core" / "op" / "op_delay.c").read_text()
    assert 'getenv("MPITEMPO_TEST_DELAY_STEP")' in src
