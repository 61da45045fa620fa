"""`mpitempo pingpong` bad input: one line on stderr naming the value, exit 2,
nothing launched (checked before any build or mpirun)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from mpitempo.cli import cli as cli_group
from mpitempo.kinds.pingpong import parse_sizes0
from mpitempo.errors import MtError

BAD = [
    (["-n", "2", "--source", "1", "--dest", "1"], "--source and --dest are both rank 1"),
    (["-n", "2", "--source", "0", "--dest", "0"], "must differ"),
    (["-n", "2", "--dest", "2"], "invalid --dest 2: the job has 2 ranks (allowed: 0..1)"),
    (["-n", "3", "--source", "5"], "invalid --source 5"),
    (["-n", "2", "--source", "-1"], "invalid --source -1"),
    (["-n", "1"], "ping-pong needs at least 2 ranks"),
    (["--npp", "0"], "invalid --npp 0: must be"),
    (["--npp", "-3"], "invalid --npp -3"),
    (["--res-npp", "0"], "invalid --res-npp 0: must be > 0"),
    (["--res-npp", "-1.5"], "invalid --res-npp -1.5"),
    (["--cut-coef", "1"], "invalid --cut-coef 1: must be > 1"),
    (["--cut-coef", "0.5"], "invalid --cut-coef 0.5"),
    (["--msizes", "-8"], "invalid size '-8': sizes cannot be negative"),
    (["--msizes", "8,-1"], "invalid size '-1'"),
    (["--msizes", "lots"], "invalid size 'lots'"),
    (["--ntrial", "0"], "invalid --ntrial 0"),
    (["--npp-sweep", "1,0,18"], "invalid --npp-sweep item 0"),
    (["--npp-sweep", "1,x"], "invalid --npp-sweep item 'x'"),
    (["--npp", "4", "--npp-sweep", "1,2"], "exclude each other"),
    (["--npptrial", "0"], "invalid --npptrial 0"),
    (["--loop-reps", "0"], "invalid --loop-reps 0"),
]


@pytest.mark.parametrize("args,msg", BAD)
def test_bad_input_one_line(cli, tmp_path, args, msg):
    out_dir = tmp_path / "o"
    code, out, err = cli("pingpong", "-o", out_dir, *args)
    assert code == 2, err
    assert msg in err and err.count("\n") == 1, err
    assert out == "" and not out_dir.exists()


@pytest.mark.parametrize("args,msg", BAD)
def test_bad_input_clirunner(args, msg):
    """The same through click's CliRunner: the command raises MtError with the message."""
    r = CliRunner().invoke(cli_group, ["pingpong", *args], standalone_mode=False)
    assert isinstance(r.exception, MtError), r.output
    assert msg in str(r.exception) and "\n" not in str(r.exception)


def test_help(cli):
    code, out, err = cli("pingpong", "--help")
    assert code == 0 and "--npp-sweep" in out and "--cut-coef" in out and "--compare" in out


def test_from_missing_dir(cli, tmp_path):
    code, out, err = cli("pingpong", "--from", tmp_path / "nope")
    assert code == 2 and "does not exist" in err


def test_from_dir_that_is_not_a_run(cli, tmp_path):
    code, out, err = cli("pingpong", "--from", tmp_path)
    assert code == 2 and "not a complete ping-pong run" in err and err.count("\n") == 1


def test_sizes_with_zero():
    assert parse_sizes0("0") == [0]
    assert parse_sizes0("0-8") == [0, 1, 2, 4, 8]
    assert parse_sizes0("0,8,1K") == [0, 8, 1024]
    assert parse_sizes0("0-4M")[-1] == 4 << 20 and len(parse_sizes0("0-4M")) == 24


# --- the printed output: the rate curve first, the per-size blocks with --verbose ------------------

RUN = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "pingpong-run"   # a real 2-rank run


def test_default_output_is_the_rate_curve_first(cli):
    code, out, err = cli("pingpong", "--from", RUN)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("COMMUNICATION RATE CURVE")
    rows = [ln.split() for ln in lines[3:6]]
    assert [int(r[0]) for r in rows] == [0, 8, 1024] and lines[6] == ""       # one line per size, then the rest
    assert "TIMING RESULTS FOR PING PONG TIMES" not in out and "STATISTICS FOR PING PONG TIMES" not in out
    flat = " ".join(out.split())
    assert "Not osu_latency's number:" in flat and "one buffer for sending and receiving" in flat
    assert "--verbose" in lines[-1] and len(lines) < 70


def test_verbose_adds_the_block_of_every_size(cli):
    code, out, err = cli("pingpong", "--from", RUN, "--verbose")
    assert code == 0, err
    assert out.splitlines()[0].startswith("COMMUNICATION RATE CURVE")
    assert out.splitlines().count("TIMING RESULTS FOR PING PONG TIMES DIVIDED BY TWO IN MICROSECONDS") == 3
    assert out.count("Message size (bytes) = ") == 3
    code, full, err = cli("pingpong", "--from", RUN, "--full")
    assert code == 0 and "FREQUENCY OF TIMES FROM THE TIMER OVERHEAD" in full
