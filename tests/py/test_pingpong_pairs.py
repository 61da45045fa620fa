"""`pingpong --pairs`: pair lists and the latency matrix."""
from __future__ import annotations

import pytest

from mpitempo.analysis.pingpong_pairs import matrix, parse_pairs
from mpitempo.errors import MtError


def test_parse_pairs():
    assert parse_pairs("all", 3) == [(0, 1), (0, 2), (1, 2)]
    assert parse_pairs("0-3, 2-1", 4) == [(0, 3), (2, 1)]
    for bad, msg in (("0-0", "must differ"), ("0-4", r"0\.\.3"), ("a-b", "expected A-B"), ("1", "expected A-B"),
                     ("0-1,0-1", "twice")):
        with pytest.raises(MtError, match=msg):
            parse_pairs(bad, 4)
    with pytest.raises(MtError, match="at least 2 ranks"):
        parse_pairs("all", 1)


def test_matrix_is_symmetric_median_over_runs():
    an = lambda med: {"results": [{"msize": 8, "median_s": 9.0, "filtered": {"median_s": med}}]}  # noqa: E731
    m = matrix([(0, 1, an(1e-6)), (0, 1, an(3e-6)), (0, 1, an(2e-6)), (1, 2, an(5e-6))], 3)[8]
    assert m["latency_s"][0][1] == m["latency_s"][1][0] == 2e-6
    assert m["latency_s"][2][1] == 5e-6 and m["latency_s"][0][2] is None and m["latency_s"][0][0] is None
    assert (m["min_s"], m["max_s"]) == (2e-6, 5e-6) and m["runs"] == {"0-1": 3, "1-2": 1}


def test_bad_input_cli(cli, tmp_path):
    code, out, err = cli("pingpong", "--pairs", "0-5", "-n", "2")
    assert code != 0 and "invalid --pairs item '0-5'" in err
    code, out, err = cli("pingpong", "--pairs", "all", "--source", "1")
    assert code != 0 and "either --pairs or --source/--dest" in err
    code, out, err = cli("pingpong", "--plot", tmp_path / "x.png")
    assert code != 0 and "--plot needs --pairs" in err
