"""Pure parts of the tree comparison: configurations in the order given, the path that changed most."""
from __future__ import annotations

from hypothesis import given, strategies as st

from mpitempo.analysis.tree import in_config_order, most_changed_path


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 9)), min_size=1, max_size=30, unique=True),
       st.permutations(list("abc")))
def test_in_config_order(runs, order):
    rs = [{"config": c, "run_index": i} for c, i in runs]
    out = in_config_order(rs, list(order))
    present = [c for c in order if any(r["config"] == c for r in rs)]
    assert list(dict.fromkeys(r["config"] for r in out)) == present
    for c in present:
        idx = [r["run_index"] for r in out if r["config"] == c]
        assert idx == sorted(idx)
    assert sorted(map(id, out)) == sorted(map(id, rs))


def test_unnamed_configs_follow_in_order_of_appearance():
    rs = [{"config": "z", "run_index": 0}, {"config": "a", "run_index": 0}, {"config": "m", "run_index": 0}]
    assert [r["config"] for r in in_config_order(rs, ["m"])] == ["m", "z", "a"]


def test_most_changed_path():
    rows = [{"path": "0", "a_s": 1e-6, "b_s": 1.1e-6}, {"path": "1", "a_s": 5e-6, "b_s": 3e-6},
            {"path": "2", "a_s": None, "b_s": 9.0}]
    assert most_changed_path(rows)["path"] == "1"
    assert most_changed_path([]) is None
