"""The t-test alternative of `compare --test ttest`: Welch's test agrees with scipy, and the case
docs/statistics.md gives for when it is wrong (one slow mpirun hides a clear difference)."""
from __future__ import annotations

import numpy as np
import pytest

from mpitempo.stats.compare import compare_samples, welch_t


def test_welch_t_matches_textbook_formula():
    a, b = np.array([1.0, 1.2, 0.9, 1.1, 1.05]), np.array([1.3, 1.4, 1.25, 1.5, 1.35, 1.45])
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    t = (a.mean() - b.mean()) / np.sqrt(va + vb)
    got_t, p = welch_t(a, b)
    assert got_t == pytest.approx(t) and 0 < p < 0.01
    assert welch_t([1.0], [2.0, 3.0]) == (None, None)
    assert welch_t([1.0, 1.0], [1.0, 1.0]) == (None, None)


def test_one_slow_run_hides_a_difference_from_the_t_test_not_from_the_rank_sum_test():
    a = [1.00, 1.01, 0.99, 1.02, 1.00, 0.98, 1.01, 1.00, 0.99, 1.01]      # run medians, µs
    b = [1.10, 1.11, 1.09, 1.12, 1.10, 1.08, 1.11, 1.10, 1.09, 25.0]      # 10% slower + one bad run
    rs = compare_samples(a, b)
    tt = compare_samples(a, b, test="ttest")
    assert rs["significant"] and rs["p_value"] < 0.001
    assert not tt["significant"] and tt["p_value"] > 0.3 and tt["test"] == "ttest" and tt["min_p"] is None


def test_compare_cli_ttest(cli, tmp_path):
    import json

    from mpitempo.io.synthetic import make_campaign

    make_campaign(tmp_path / "c", runs=6, ops=("allreduce",), msizes=(8,))
    code, out, err = cli("compare", tmp_path / "c", "--test", "ttest", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows and all(r["test"] == "ttest" and r["u"] is None for r in rows)
    assert "Welch" in err
    code, out, err = cli("compare", tmp_path / "c", "--test", "anova")
    assert code != 0 and "anova" in err
