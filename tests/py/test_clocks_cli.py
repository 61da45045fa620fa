"""`mpitempo clocks`: bad input is one line on stderr and exit 2, before any mpirun."""
import pytest
from click.testing import CliRunner

from mpitempo.cli import cli, main
from mpitempo.analysis.clocks import summarise
from mpitempo.kinds.clocks import parse_waits


def test_parse_waits():
    assert parse_waits("10, 0,1,1") == [0.0, 1.0, 10.0]
    with pytest.raises(Exception, match="must be >= 0"):
        parse_waits("0,-1")
    with pytest.raises(Exception, match="invalid --wait item 'soon': expected wait times in seconds"):
        parse_waits("soon")


def test_help():
    r = CliRunner().invoke(cli, ["clocks", "--help"])
    assert r.exit_code == 0 and "--algorithms" in r.output and "--wait" in r.output and "--mpiruns" in r.output


@pytest.mark.parametrize("args,msg", [
    (["--wait", "-1"], "wait times must be >= 0"),
    (["--mpiruns", "0"], "invalid mpiruns 0"),
    (["--algorithms", "nosuch"], "unknown clock-sync algorithm 'nosuch'"),
    (["--algorithms", "hca3:fitpts=1"], "fit points must be an integer >= 2"),
    (["--algorithms", "jk:pp=0"], "ping-pongs must be an integer >= 1"),
    (["--algorithms", "h2:hca3"], "malformed hierarchical spec"),
    (["--algorithms", "h2:prop/hca3"], "can only be the last"),
    (["--algorithms", "hca3:offset=guess"], "unknown offset algorithm 'guess'"),
    (["--timer", "sundial"], "unknown timer 'sundial'"),
])
def test_bad_input(build, capsys, tmp_path, args, msg):
    code = main(["clocks", "--plot", str(tmp_path / "p.png"), *args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert msg in err and err.count("\n") == 1, err
    assert out == "" and not (tmp_path / "p.png").exists()


def test_bad_input_clirunner(build, tmp_path):
    """The same through click's runner (the exception carries the message)."""
    r = CliRunner().invoke(cli, ["clocks", "--wait", "1,-5", "--plot", str(tmp_path / "p.png")])
    assert r.exit_code != 0 and "wait times must be >= 0" in str(r.exception)
    r = CliRunner().invoke(cli, ["clocks", "--algorithms", "hca9"])
    assert r.exit_code != 0 and "unknown clock-sync algorithm 'hca9'" in str(r.exception)


def test_summarise_medians():
    rows = [{"algorithm": "hca3", "wait_s": 0, "sync_duration_s": d, "max_abs_offset_s": m,
             "median_abs_offset_s": m / 2, "per_rank": [{"rank": 0, "drift_ppm": 0}, {"rank": 1, "drift_ppm": -3}]}
            for d, m in [(0.2, 1e-7), (0.3, 5e-7), (0.25, 2e-7)]]
    s = summarise(rows)
    assert len(s) == 1 and s[0]["mpiruns"] == 3
    assert s[0]["sync_duration_s"] == 0.25 and s[0]["max_abs_offset_s"] == 2e-7
    assert s[0]["worst_max_abs_offset_s"] == 5e-7 and s[0]["max_abs_drift_ppm"] == 3
