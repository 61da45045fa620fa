"""Adaptive repetitions (docs/methods.md, "Adaptive repetitions"): the precision grammar, the campaign
rules (default precision, a fixed nrep, max_mpiruns), the looks across mpiruns and their level, the
coverage of the interval at the stopping look, what a summary row says stopped it, and bad input
refused before anything is created."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.analysis import adaptive as ad
from mpitempo.errors import MtError
from mpitempo.io.campaign import build_campaign
from mpitempo.io.params import percent_value
from mpitempo.stats.describe import median_ci, runs_needed

from percent_cases import PERCENT_CASES


@pytest.mark.parametrize("text,want", PERCENT_CASES)
def test_percent_grammar(text, want):
    if want is None:
        with pytest.raises(MtError, match="invalid precision"):
            percent_value(text)
    else:
        assert percent_value(text) == pytest.approx(want)


def test_percent_refuses_numbers_and_names_the_value():
    for v in (1, 0.01, True, None):
        with pytest.raises(MtError, match="expected a percentage"):
            percent_value(v)


def _c(**over):
    return build_campaign(None, dict(ops="allreduce", **over))


def test_default_is_adaptive_and_a_fixed_nrep_turns_it_off():
    c = _c()
    assert c.precision == "1%" and c.exp_time == "1s" and c.nrep == 100 and c.max_mpiruns is None
    c = _c(nrep=50)
    assert c.precision == "off" and c.exp_time is None
    # with any precision the time limit applies unless one is given: the cap alone could take minutes
    c = _c(nrep=50, precision="2%")
    assert c.precision == "2%" and c.exp_time == "1s"
    c = _c(precision="2%")
    assert c.precision == "2%" and c.exp_time == "1s"
    c = _c(precision="2%", exp_time="5s")
    assert c.exp_time == "5s"
    c = build_campaign({"nrep": 30}, {})
    assert c.precision == "off"
    c = build_campaign({"precision": "off"}, {})
    assert c.precision == "off"
    # the precision is a core argument: the core receives exactly what was decided
    args = c.core_args(c.configs[0])
    assert args[args.index("--precision") + 1] == "off"


def test_campaign_toml_keeps_the_decision(tmp_path):
    import tomllib
    c = _c(max_mpiruns=12)
    spec = tomllib.loads(c.to_toml())
    assert spec["precision"] == "1%" and spec["max_mpiruns"] == 12 and spec["exp_time"] == "1s"
    # read back (a resume): the same campaign, not a re-decided one
    c2 = build_campaign(spec, {})
    assert (c2.precision, c2.max_mpiruns, c2.exp_time, c2.nrep) == ("1%", 12, "1s", 100)


@pytest.mark.parametrize("over,msg", [
    (dict(max_mpiruns=5, mpiruns=10), "must be >= mpiruns"),
    (dict(max_mpiruns=12, nrep=10), "needs a precision"),
    (dict(max_mpiruns=12, precision="off"), "needs a precision"),
    (dict(max_mpiruns=5, mpiruns=3), "needs at least 7 run medians"),
    (dict(precision="0%"), "invalid --precision '0%'"),
    (dict(precision="200%"), "between 0.01% and 50%"),
])
def test_bad_campaigns_refused(over, msg):
    with pytest.raises(MtError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        _c(**over)


def test_toml_precision_must_be_a_string():
    with pytest.raises(MtError, match="precision"):
        build_campaign({"precision": 0.01}, {})


def test_run_looks_and_levels():
    assert ad.run_looks(10, 10) == [10]
    assert ad.run_looks(8, 20) == [8, 12, 18, 20]
    assert ad.run_looks(3, 9) == [3, 5, 8, 9]
    assert ad.run_looks(1, 3) == [1, 2, 3]
    assert ad.looks_level(4) == pytest.approx(0.9875)
    # the floor the refusal names: the smallest number of run medians with an interval at that level
    assert runs_needed(ad.looks_level(2)) == 7 and runs_needed(0.95) == 6


@given(first=st.integers(1, 200), extra=st.integers(0, 2000))
def test_run_looks_properties(first, extra):
    looks = ad.run_looks(first, first + extra)
    assert looks[0] == first and looks[-1] == first + extra
    assert all(b > a for a, b in zip(looks, looks[1:]))
    assert all(b <= max(a + 1, -(-a * 3 // 2)) for a, b in zip(looks, looks[1:]))


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(st.floats(1e-7, 1.0, allow_nan=False), min_size=1, max_size=60))
def test_interval_nests_and_width_is_relative(xs):
    x = np.sort(np.array(xs))
    med = float(np.median(x))
    wide, narrow = median_ci(x, 0.99), median_ci(x, 0.95)
    if wide["lo_s"] is not None:   # a stricter level never gives a narrower interval
        assert narrow["lo_s"] is not None and wide["lo_s"] <= narrow["lo_s"] <= med <= narrow["hi_s"] <= wide["hi_s"]
        assert ad.rel_half_width(wide, med) >= ad.rel_half_width(narrow, med) >= 0
    else:
        assert ad.rel_half_width(wide, med) is None


def _sequential(rng, looks, level, precision, draw):
    """One campaign of the across-run rule: run medians drawn at the looks, stop when the interval at
    `level` is within the precision; returns whether the interval at the stop holds the true median."""
    x = np.empty(0)
    for n in looks:
        x = np.concatenate([x, draw(rng, n - x.size)])
        ci = median_ci(x, level)
        rel = ad.rel_half_width(ci, float(np.median(x)))
        if rel is not None and rel <= precision:
            break
    return ci["lo_s"] is not None and ci["lo_s"] <= 1.0 <= ci["hi_s"], x.size


@pytest.mark.parametrize("sigma,precision", [(0.02, 0.01), (0.2, 0.1), (0.6, 0.3)])
def test_coverage_at_the_stopping_look_is_at_least_95_percent(sigma, precision):
    # run medians lognormal with median 1; looks 8..40 (K = 5): the interval at the stopping look covers
    # with >= 95% (3 standard errors of 3000 simulated campaigns allowed), and the rule does stop early
    rng = np.random.default_rng(7)
    looks = ad.run_looks(8, 40)
    level = ad.looks_level(len(looks))
    draw = lambda r, k: np.exp(sigma * r.standard_normal(k))   # noqa: E731
    res = [_sequential(rng, looks, level, precision, draw) for _ in range(3000)]
    cover = np.mean([c for c, _ in res])
    assert cover >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / 3000), cover
    sizes = Counter(n for _, n in res)
    assert len(sizes) > 1   # it stopped at different looks: a real sequential rule was exercised


def test_row_stop_reasons():
    spec = {"looks": [8, 12], "precision": 0.01}
    assert ad.row_stop(None, 0.5, spec, {}, "a") == "fixed"
    assert ad.row_stop(0.01, 0.005, spec, {}, "a") == "precision"
    assert ad.row_stop(0.01, 0.02, spec, {}, "a") == "cap"
    assert ad.row_stop(0.01, None, spec, {"budget_stopped": ["a"]}, "a") == "budget"
    assert ad.row_stop(0.01, 0.02, {"looks": None}, {}, "a") == "mpiruns"


def test_rep_stops_counts_the_cores_records():
    metas = {"c": {"r0": {"config": "default", "nprocs": 2, "experiments": [
        {"op": "allreduce", "msize": 8, "stop": "precision"}, {"op": "bcast", "msize": 8, "stop": "cap"}]},
        "r1": {"config": "default", "nprocs": 2, "experiments": [{"op": "allreduce", "msize": 8, "stop": "time"}]},
        "r2": {"config": "default", "nprocs": 2, "experiments": "garbage"}}}
    got = ad.rep_stops(metas)
    assert got[("c", "default", "allreduce", 8, 2)] == Counter(precision=1, time=1)
    assert got[("c", "default", "bcast", 8, 2)] == Counter(cap=1)


@pytest.mark.parametrize("args,msg", [
    (["--precision", "0"], "invalid --precision '0'"),
    (["--precision", "200%"], "between 0.01% and 50%"),
    (["--budget", "0"], "invalid --budget '0'"),
    (["--budget", "soon"], "invalid --budget 'soon'"),
    (["--max-mpiruns", "3"], "must be >= mpiruns"),
    (["--nrep", "5", "--max-mpiruns", "20"], "needs a precision"),
    (["--budget", "1m", "--sbatch"], "not with --sbatch"),
])
def test_cli_bad_input_creates_nothing(cli, tmp_path, args, msg):
    out = tmp_path / "camp"
    code, stdout, err = cli("run", "--ops", "allreduce", "-o", out, *args)
    assert code == 2 and msg in err and err.count("\n") == 1, err
    assert not out.exists()


def test_budget_refused_where_nothing_is_measured(cli, tmp_path):
    code, _, err = cli("pingpong", "--from", tmp_path, "--budget", "1m")
    assert code == 2 and "--budget and --estimate go with a new measurement" in err, err
    code, _, err = cli("tree", "--from", tmp_path, "--estimate")
    assert code == 2 and "--estimate is not used with --from" in err, err


def test_annotate_recomputes_the_interval_at_the_campaigns_level(tmp_path):
    (tmp_path / "campaign.toml").write_text('mpiruns = 8\nmax_mpiruns = 20\nprecision = "1%"\n')
    (tmp_path / ad.RECORD).write_text(json.dumps({"stopped": "cap", "budget_stopped": []}))
    meds = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8, 1.0]
    per_run = [{"campaign": "c", "config": "default", "op": "allreduce", "msize": 8, "nprocs": 2, "median_s": m}
               for m in meds]
    rows = [{"campaign": "c", "config": "default", "op": "allreduce", "msize": 8, "nprocs": 2,
             "median_ci": median_ci(meds, 0.95), "run_medians": {"median_s": float(np.median(meds))}}]
    ad.annotate(rows, per_run, {}, {"c": tmp_path})
    r = rows[0]
    assert r["ci_level"] == pytest.approx(ad.looks_level(4)) and r["precision"] == 0.01
    assert (r["median_ci"]["lo_s"], r["median_ci"]["hi_s"]) == (0.8, 1.2)   # x_(1), x_(8) at 98.75%
    assert r["ci_rel"] == pytest.approx(0.2) and r["stop"] == "cap"
