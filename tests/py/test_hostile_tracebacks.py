"""No traceback anywhere (issue 32, class 6): the tune budget path's probe mpirun, plot formats checked
before anything is read or run. Rows of docs/reliability.md ("Received files: the trust boundary")
name these tests."""
from __future__ import annotations

import pytest


def test_watchdog_run_takes_capture_output():
    """`mpitempo tune --budget 4m` (the documented way) ended in `TypeError: Popen.__init__() got an
    unexpected keyword argument 'capture_output'` before measuring anything: watchdog.run takes the
    keyword as subprocess.run does."""
    from mpitempo.runner import watchdog

    r = watchdog.run(["/bin/sh", "-c", "echo out; echo err >&2"], timeout=30, capture_output=True)
    assert r.returncode == 0 and r.stdout == b"out\n" and r.stderr == b"err\n"


def test_tune_budget_probe_measures_one_mpirun(build):
    """The probe that `tune --budget` runs before fitting the plan: one real mpirun of the core, its
    wall time (before: the TypeError above)."""
    from mpitempo.runner.tuneplan import probe_overhead

    t = probe_overhead(build, 2, None)
    assert t is not None and t > 0


@pytest.mark.parametrize("name", ["x.bmp", "x", "x.png.txt"])
def test_summary_plot_format_is_checked_first(name, cli, tmp_path):
    """Careless input: `summary --process all --plot x.bmp` (a format matplotlib cannot write, or no
    suffix: matplotlib appends .png): refused in one line naming the allowed suffixes, before the
    campaign is read."""
    from mpitempo.io.synthetic import make_campaign

    camp = tmp_path / "c"
    make_campaign(camp, configs={"default": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=20)
    code, so, err = cli("summary", camp, "--process", "all", "--plot", tmp_path / name)
    assert code == 2 and err.count("\n") == 1, err
    assert "give a file name ending in .png, .pdf or .svg" in err, err
    assert not (tmp_path / name).exists()
