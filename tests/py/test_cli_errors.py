"""Bad input to the CLI: a one-line error naming the value, non-zero exit, nothing written."""
import pytest


def test_help_everywhere(cli):
    for cmd in ([], ["run"], ["summary"], ["info"], ["build"], ["compare"], ["report"], ["ingest"], ["export"]):
        code, out, err = cli(*cmd, "--help")
        assert code == 0 and "Usage" in out


def test_unknown_command(cli):
    code, out, err = cli("frobnicate")
    assert code == 2 and err.count("\n") == 1 and "frobnicate" in err


@pytest.mark.parametrize("args,msg", [
    (["--nrep", "0"], "invalid --nrep 0"),
    (["--msizes", "0,0"], "0 B is listed twice"),
    (["--msizes", "-5"], "invalid size '-5'"),
    (["--msizes", "1-0"], "the end is smaller than the start"),
    (["--msizes", "lots"], "invalid size 'lots'"),
    (["--mpiruns", "0"], "invalid mpiruns 0"),
    (["--nrep", "x"], "'x' is not a valid integer"),
])
def test_run_bad_values(cli, tmp_path, args, msg):
    out_dir = tmp_path / "c"
    code, out, err = cli("run", "-o", out_dir, *args)
    assert code == 2
    assert msg in err and err.count("\n") == 1, err
    assert not out_dir.exists()


def test_missing_campaign_file(cli, tmp_path):
    code, out, err = cli("run", tmp_path / "nope.toml")
    assert code == 2 and "nope.toml' not found" in err and err.count("\n") == 1


def test_malformed_campaign_file(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("ops = [allreduce\n")
    code, out, err = cli("run", f)
    assert code == 2 and "is not valid TOML" in err


def test_unknown_key_in_campaign(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("nrep = 5\nmsize = 8\n")
    code, out, err = cli("run", f, "-o", tmp_path / "c")
    assert code == 2 and "unknown key 'msize'" in err and "msizes" in err


def test_summary_of_non_campaign(cli, tmp_path):
    code, out, err = cli("summary", tmp_path)
    assert code == 2 and "not a campaign directory" in err


def test_summary_of_empty_campaign(cli, tmp_path):
    (tmp_path / "runs").mkdir()
    code, out, err = cli("summary", tmp_path)
    assert code == 2 and "no complete runs" in err


def test_bad_mpicc(cli, tmp_path):
    code, out, err = cli("build", "--mpicc", tmp_path / "no-mpicc")
    assert code == 2 and "not found" in err


# -- hostile pass A (run/build/info/which) --

def test_campaign_file_fifo_is_refused_not_waited_on(cli, tmp_path, monkeypatch):
    """A FIFO as the campaign file: refused at once (open without waiting for a writer), nothing created."""
    import os

    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "c.toml")
    code, out, err = cli("run", "c.toml", "-o", "out")
    assert code == 2 and err.count("\n") == 1, err
    assert "campaign file 'c.toml' is a FIFO, not a regular file" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("var,value,msg", [
    ("MPITEMPO_SIM_OFFSETS", "garbage", "invalid simulated clock offsets 'garbage'"),
    ("MPITEMPO_SIM_DRIFTS", "nan", "invalid simulated clock drifts 'nan'"),
    ("MPITEMPO_SIM_RANDOM", "x", "invalid simulated-clock seed 'x'"),
])
def test_bad_sim_clock_variable_refused_before_launch(cli, build, tmp_path, monkeypatch, var, value, msg):
    """MPITEMPO_SIM_* is read by the core: the dry run reads it too, so a bad value is refused before the
    campaign directory exists instead of failing every mpirun."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(var, value)
    code, out, err = cli("run", "--scheme", "roundtime", "--time-slice", "10ms", "--nrep", "3", "--msizes", "8",
                         "--mpiruns", "1", "-o", "out", "--quiet")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("mpitempo: error: ") and msg in err
    assert not (tmp_path / "out").exists()
