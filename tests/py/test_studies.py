"""Mean vs median in bins over one mpirun (stats/timebins.py) and the report sections of the
studies and processing schemes."""
from __future__ import annotations

import numpy as np
import pytest

from mpitempo.stats.timebins import bin_size_for, mean_median_gap, time_bins


def test_time_bins_by_hand():
    x = [1, 2, 3, 100, 5, 6, 7, 8, 9]       # bins of 4: [1,2,3,100] [5,6,7,8]; [9] dropped (< half)
    b = time_bins(x, 4, tukey_k=None)
    assert list(b["start"]) == [0, 4] and list(b["n"]) == [4, 4]
    assert list(b["mean"]) == [26.5, 6.5] and list(b["median"]) == [2.5, 6.5]
    f = time_bins(x, 4, tukey_k=1.5)         # 100 is outside the fences of its bin
    assert list(f["n"]) == [3, 4] and f["mean"][0] == 2.0
    assert mean_median_gap(b) == pytest.approx(np.median([100 * 24 / 2.5, 0.0]))
    assert bin_size_for(100000) == 5000 and bin_size_for(50) == 10
    with pytest.raises(ValueError):
        time_bins(x, 0)


def test_report_sections_of_the_studies(tmp_path):
    """The sections build_report appends (the whole report is tested in test_report.py)."""
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.io.synthetic import make_campaign
    from mpitempo.present.processing import report_section
    from mpitempo.present.studies import timebins_section
    from mpitempo.stats.outliers import Filter
    from test_processing import make_campaign as make_perrank_campaign

    root = make_campaign(tmp_path / "c", runs=2, ops=("allreduce",), msizes=(8,), nrep=400)
    data = open_campaigns([root])
    html = timebins_section(data, Filter())
    assert "Mean vs median over one mpirun" in html and "<img" in html
    assert report_section(data.roots, Filter()) == ""          # no per-rank data in this campaign
    short = open_campaigns([make_perrank_campaign(tmp_path / "p")])
    assert timebins_section(short, Filter()) == ""              # 4 measurements per run: no bins
    html = report_section(short.roots, Filter())
    assert "Processing schemes" in html and "ps8_mpptest" in html
