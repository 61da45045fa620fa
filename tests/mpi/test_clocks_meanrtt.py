"""Mean-RTT-Offset on oversubscribed ranks: the paper's algorithm (rtt=mean, set by fit=paper) and
the default variant (rtt=median) either stay within their stated accuracy or say that they do not
(docs/clocks.md, "Mean-RTT-Offset on oversubscribed ranks"). Offsets are checked against the
accuracy check of mpitempo-clocks (SKaMPI-Offset, the fastest of 5 tries)."""
from __future__ import annotations

import pytest

from test_clocks_mpi import SIM_DRIFT, SIM_OFF, clocks, rows_of

pytestmark = pytest.mark.mpi

FAR_S = 20e-6    # a rank this far off must have been flagged (below_accuracy)


def _unflagged_far(row):
    # below_accuracy: the rank's Mean-RTT round trips were preempted (rtt_below_accuracy), or its
    # slope was dropped although the data allow a drift beyond 1 ppm (slope_unresolved: a real drift
    # rejected under preemption), or the clock it was synchronised to was below its accuracy
    # (ref_below_accuracy: HCA3 nests rank 3 on rank 2's clock, whose error it inherits)
    return [(p["rank"], p["offset_s"], p["rtt_spread_mean_s"], p["slope"], p["fit_slope_ppm"], p["fit_ci_ppm"])
            for p in row["per_rank"][1:] if abs(p["offset_s"]) > FAR_S and not p["below_accuracy"]]


def test_paper_mean_rtt_is_flagged_when_preempted(build):
    # JK with the paper's Mean-RTT-Offset on 5 oversubscribed ranks: the first RTT ping-pong of a
    # client waits until the reference has served the clients before it (milliseconds), and the
    # mean carries that wait into every offset: ranks end up far off. They must be flagged.
    r = clocks(build, 5, ["--algorithms", "jk:fit=paper,offset=meanrtt,fitpts=10,pp=20", "--wait", "0",
                          "--sim-offsets", SIM_OFF, "--sim-drifts", SIM_DRIFT])
    row = rows_of(r)[0]
    assert "rtt=mean" in row["spec"] and "fit=paper" in row["spec"]
    assert row["rtt_preempted_ranks"] >= 1 and "below its stated accuracy" in r.stderr
    assert not _unflagged_far(row), row
    for p in row["per_rank"][1:]:
        assert p["rtt_measurements"] == p["offset_measurements"] > 0
        assert p["rtt_spread_max_s"] * (1 + 1e-9) >= p["rtt_spread_mean_s"] >= 0


@pytest.mark.parametrize("alg", ["jk", "hca", "hca3", "hca3:ci=0.1", "hca2:ci=0.1"])
def test_median_rtt_on_oversubscribed_ranks_within_accuracy_or_flagged(build, alg):
    # ci=0.1: the adaptive fit window (docs/clocks.md)
    sep = "," if ":" in alg else ":"
    r = clocks(build, 5, ["--algorithms", f"{alg}{sep}offset=meanrtt,fitpts=20,pp=50", "--wait", "0",
                          "--sim-offsets", SIM_OFF, "--sim-drifts", SIM_DRIFT])
    row = rows_of(r)[0]
    assert "rtt=median" in row["spec"]
    assert not _unflagged_far(row), row
    assert ("below its stated accuracy" in r.stderr) == (row["rtt_preempted_ranks"] > 0)
    assert ("below their stated accuracy" in r.stderr) == (row["below_accuracy_ranks"] > row["rtt_preempted_ranks"]
                                                           or any(p["slope_unresolved"] or p["ref_below_accuracy"]
                                                                  for p in row["per_rank"]))
    assert row["below_accuracy_ranks"] == sum(p["below_accuracy"] for p in row["per_rank"])


def test_two_bound_ranks_are_not_flagged(build):
    # not oversubscribed: the round trips stay within a few µs of the fastest (a loaded shared
    # machine may preempt the tries: one of 3 must be clean, or the test is skipped)
    for _ in range(3):
        row = rows_of(clocks(build, 2, ["--algorithms", "jk:offset=meanrtt", "--wait", "0"]))[0]
        if row["rtt_preempted_ranks"] == 0:
            assert row["max_abs_offset_s"] < 5e-6 and not row["per_rank"][1]["rtt_below_accuracy"]
            return
    # other jobs outside the CPU lock really preempt bound ranks too: then the flag is right
    pytest.skip("other load: 3 syncs of 2 bound ranks saw preempted round trips (mean spread "
                f"{row['per_rank'][1]['rtt_spread_mean_s'] * 1e6:.1f} µs, {row['per_rank'][1]['rtt_preempted']} of "
                f"{row['per_rank'][1]['rtt_measurements']} measurements)")


def test_skampi_has_no_rtt_spread(build):
    row = rows_of(clocks(build, 2, ["--algorithms", "jk", "--wait", "0"]))[0]
    assert row["rtt_preempted_ranks"] == 0
    p = row["per_rank"][1]
    assert p["rtt_measurements"] == 0 and p["rtt_preempted"] == 0 and not p["rtt_below_accuracy"]
