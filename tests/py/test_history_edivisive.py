"""E-divisive means with whole-entry permutations (history.edivisive) and the series analysis
(history.analyze) on synthetic histories: a change injected is found where it is, with its size; no change
gives no alarm at the stated rate; flagged runs alone never make a change point."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.history import analyze, store
from mpitempo.history.edivisive import _best_split, _cum, _max_q_permuted, _prefix, block_distances, e_divisive


def history(rng, n, runs=5, at=None, rel=0.0, night=0.01, run=0.01):
    """Log run medians of n nightly entries: a night-to-night effect (sd night) and run-to-run noise (sd run);
    from entry `at` on, everything is (1 + rel) times slower."""
    return [np.full(runs, (np.log1p(rel) if at is not None and i >= at else 0.0) + rng.normal(0, night))
            + rng.normal(0, run, runs) for i in range(n)]


def energy_q(x, y):
    """The statistic from its definition (Matteson and James 2014, alpha = 1), for checking."""
    x, y = np.asarray(x), np.asarray(y)
    m, n = x.size, y.size
    between = np.abs(x[:, None] - y[None, :]).sum()
    wx = np.abs(x[:, None] - x[None, :]).sum() / 2
    wy = np.abs(y[:, None] - y[None, :]).sum() / 2
    e = 2 * between / (m * n) - wx / (m * (m - 1) / 2) - wy / (n * (n - 1) / 2)
    return m * n / (m + n) * e


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.floats(-5, 5), min_size=1, max_size=5), min_size=4, max_size=12), st.integers(0, 2**31))
def test_split_statistic_is_the_definition(raw, seed):
    blocks = [np.array(b) for b in raw]
    bmat, sizes = block_distances(blocks)
    k, q = _best_split(_prefix(bmat), _cum(sizes), 0, len(blocks), 1, 2)
    cands = [(energy_q(np.concatenate(blocks[:j]), np.concatenate(blocks[j:])), j) for j in range(1, len(blocks))
             if sum(b.size for b in blocks[:j]) >= 2 and sum(b.size for b in blocks[j:]) >= 2]
    if not cands:
        assert k is None
        return
    best = max(c[0] for c in cands)
    assert q == pytest.approx(best, rel=1e-9, abs=1e-9)
    # the batched permutation statistic equals the one-at-a-time one
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(len(blocks)) for _ in range(5)])
    one = [_best_split(_prefix(bmat[np.ix_(p, p)]), _cum(sizes[p]), 0, len(blocks), 1, 2)[1] for p in perms]
    assert np.allclose(_max_q_permuted(bmat, sizes, perms, 1, 2), one)


@settings(max_examples=25, deadline=None)
@given(st.integers(6, 34), st.sampled_from([0.03, 0.05, -0.04, 0.10]), st.integers(0, 2**31))
def test_injected_change_is_found_where_it_is(at, rel, seed):
    rng = np.random.default_rng(seed)
    blocks = history(rng, 40, at=at, rel=rel, night=0.005, run=0.01)
    changes = e_divisive(blocks, permutations=99, rng=seed)
    assert changes, "the change was not found"
    best = min(changes, key=lambda c: abs(c.block - at))
    assert abs(best.block - at) <= 1
    assert best.p_value <= 0.05


def test_no_change_no_false_alarm_at_the_stated_rate():
    """200 histories of 30 identical nights (night-to-night noise as large as the run noise): the share with
    any change point stays near alpha = 5% (permuting whole entries: the nightly wobble is noise, not evidence).
    Binomial(200, 0.05): 99.9% of draws are below 20."""
    rng = np.random.default_rng(7)
    alarms = sum(bool(e_divisive(history(rng, 30), permutations=99, rng=k)) for k in range(200))
    assert alarms <= 20, alarms


def test_permuting_runs_instead_of_entries_would_false_alarm():
    """Why whole entries are permuted: with a night effect 3x the run noise, treating every mpirun as
    exchangeable (blocks of one run) finds 'changes' in most identical histories; blocks of entries do not."""
    rng = np.random.default_rng(3)
    runs_alarm = entries_alarm = 0
    for k in range(40):
        h = history(rng, 30, night=0.03, run=0.01)
        entries_alarm += bool(e_divisive(h, permutations=99, rng=k))
        singles = [np.array([v]) for b in h for v in b]
        runs_alarm += bool(e_divisive(singles, permutations=99, min_blocks=10, rng=k))
    assert entries_alarm <= 6 and runs_alarm >= 20, (entries_alarm, runs_alarm)


def test_too_short_and_deterministic():
    rng = np.random.default_rng(1)
    assert e_divisive(history(rng, 3), min_blocks=2) == []
    h = history(rng, 20, at=10, rel=0.2)
    a, b = e_divisive(h, rng=5), e_divisive(h, rng=5)
    assert [(c.block, c.p_value) for c in a] == [(c.block, c.p_value) for c in b] and a[0].block == 10
    with pytest.raises(ValueError):
        e_divisive([np.array([1.0]), np.array([])])


def _series(meds, flags=None, factors=None):
    """A series of entries (as history.analyze.build_series makes them) from per-entry run medians."""
    entries, points = [], []
    for i, ms in enumerate(meds):
        dig = f"d{i:03d}"
        entries.append({"digest": dig, "name": f"night{i}", "started_at": f"2026-01-{i + 1:02d}T00:00:00.000000Z",
                        "factors": (factors or (lambda i: {"library": "L1"}))(i)})
        for j, m in enumerate(ms):
            points.append({"digest": dig, "machine": "m", "config": "c", "op": "allreduce", "msize": 8, "nprocs": 2,
                           "run_id": f"r{j}", "run_index": j, "started_at": entries[-1]["started_at"],
                           "median_s": float(m), "n": 100, "flags": (flags or (lambda i, j: ""))(i, j)})
    return entries, points


def test_flagged_runs_do_not_make_a_change_alone():
    rng = np.random.default_rng(11)
    meds = [1e-6 * np.exp(rng.normal(0, 0.01, 5)) for _ in range(20)]
    for i in (17, 18):                     # two loaded nights at the end, 40% slower
        meds[i] = meds[i] * 1.4
    ents, pts = _series(meds, flags=lambda i, j: "shared_cpu" if i in (17, 18) else "")
    res = analyze.analyse(ents, pts, 0.05, 99, 2, 5.0, 5)
    assert res["changes"] == [] and res["regressions"] == []
    # the same numbers unflagged are a change (so the test can fail)
    ents, pts = _series(meds)
    res = analyze.analyse(ents, pts, 0.05, 99, 2, 5.0, 5)
    assert [c["entry_index"] for c in res["changes"]] == [17]


def test_change_reports_size_ci_dates_and_factors():
    rng = np.random.default_rng(12)
    meds = [1e-6 * (1.08 if i >= 12 else 1.0) * np.exp(rng.normal(0, 0.005) + rng.normal(0, 0.01, 5))
            for i in range(20)]
    ents, pts = _series(meds, factors=lambda i: {"library": "L2" if i >= 12 else "L1", "kernel": "6.1",
                                                 "flags": ["x"] if i == 3 else []})
    res = analyze.analyse(ents, pts, 0.05, 199, 2, 5.0, 10)
    (c,) = res["changes"]
    assert c["entry_index"] == 12 and c["last_before"].startswith("2026-01-12") and c["first_after"].startswith("2026-01-13")
    assert c["size_pct"] == pytest.approx(8.0, abs=1.5)
    assert c["ci_pct"][0] < c["size_pct"] < c["ci_pct"][1] and c["ci_pct"][0] > 4
    assert c["factors_changed"] == {"library": ["L1", "L2"]}
    assert c["regression"] and res["regressions"] == [c]
    # the threshold and the window of the latest entries decide the regression
    assert analyze.analyse(ents, pts, 0.05, 199, 2, 10.0, 10)["regressions"] == []
    assert analyze.analyse(ents, pts, 0.05, 199, 2, 5.0, 8)["regressions"]       # entries 12..19: the change
    assert analyze.analyse(ents, pts, 0.05, 199, 2, 5.0, 7)["regressions"] == []  # entries 13..19: before them
    # faster is a change, never a regression
    ents2, pts2 = _series([m[::-1] for m in meds[::-1]])
    res2 = analyze.analyse(ents2, pts2, 0.05, 199, 2, 5.0, 20)
    assert res2["changes"][0]["direction"] == "faster" and res2["regressions"] == []


def test_long_histories_in_bounded_chunks(monkeypatch):
    """The block distances and the permuted statistics computed in small pieces equal the whole."""
    from mpitempo.history import edivisive as ed

    rng = np.random.default_rng(4)
    blocks = [rng.normal(0, 1, rng.integers(1, 6)) for _ in range(40)]
    whole_b, sizes = block_distances(blocks)
    perms = np.array([rng.permutation(40) for _ in range(9)])
    whole_q = _max_q_permuted(whole_b, sizes, perms, 2, 3)
    monkeypatch.setattr(ed, "CHUNK_ELEMENTS", 300)
    b, _ = block_distances(blocks)
    assert np.allclose(b, whole_b) and np.allclose(_max_q_permuted(b, sizes, perms, 2, 3), whole_q)
    x = np.concatenate(blocks)
    assert whole_b.sum() == pytest.approx(np.abs(x[:, None] - x[None, :]).sum())


def _reference_entry(meds, flags):
    """An entry's median and CI as build_series defined them before it was vectorised (one entry at a time)."""
    from mpitempo.stats.describe import median_ci

    ok = [m for m, f in zip(meds, flags) if not f]
    ci = median_ci(ok) if ok else {"lo_s": None, "hi_s": None}
    cover = ci.get("coverage")
    if ok and ci["lo_s"] is None:
        ci, cover = {"lo_s": min(ok), "hi_s": max(ok)}, 1.0 - 2.0 ** (1 - len(ok))
    return {"median_s": float(np.median(ok)) if ok else float(np.median(meds)), "lo_s": ci["lo_s"],
            "hi_s": ci["hi_s"], "ci_coverage": cover, "used": bool(ok)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.floats(1e-7, 1e-3), st.booleans()), min_size=1, max_size=12),
                min_size=1, max_size=8))
def test_vectorised_entries_match_one_at_a_time(spec):
    """build_series computes every entry's median and order-statistic CI at once (numpy): the same as one
    entry at a time, with any number of runs and any of them flagged (all flagged: not used)."""
    meds = [[m for m, _ in e] for e in spec]
    flagged = {(i, j) for i, e in enumerate(spec) for j, (_, f) in enumerate(e) if f}
    ents, pts = _series(meds, flags=lambda i, j: "shared_cpu" if (i, j) in flagged else "")
    got = analyze.build_series(ents, store.Points.from_rows(ents, pts))[0]["entries"]   # columns, as load gives
    assert analyze.build_series(ents, pts)[0]["entries"] == got                         # row dicts: the same
    assert len(got) == len(spec)
    for i, e in enumerate(got):
        ref = _reference_entry(meds[i], e["flags"])
        assert e["medians"] == meds[i] and e["used"] == ref["used"]
        assert e["median_s"] == pytest.approx(ref["median_s"], rel=1e-12)
        for k in ("lo_s", "hi_s", "ci_coverage"):
            assert (e[k] is None) == (ref[k] is None) and (e[k] is None or e[k] == pytest.approx(ref[k], rel=1e-12))
