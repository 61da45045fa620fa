"""`trace run` campaign options: bad input refused in one line before a directory is created or a
job launched (no MPI job runs here)."""
from __future__ import annotations

from pathlib import Path


def test_bad_campaign_inputs(cli, tmp_path):
    out = tmp_path / "camp"
    other = tmp_path / "other"
    other.mkdir()
    (other / "runs").mkdir()
    (other / "campaign.toml").write_text('name = "x"\nkind = "clocks"\n')
    cases = [
        (["trace", "run", "--mpiruns", "0", "-o", out, "--", "/bin/true"], "invalid --mpiruns 0"),
        (["trace", "run", "--mpiruns", "3", "--", "/bin/true"], "missing -o/--outdir"),
        (["trace", "run", "--mpiruns", "3", "-o", out], "missing the application"),
        (["trace", "run", "-o", out], "missing the application"),
        (["trace", "run", "--yes", "-o", out, "--", "/bin/true"], "--yes goes with --resume"),
        (["trace", "run", "--resume", other, "-o", out], "either -o/--outdir or --resume"),
        (["trace", "run", "--resume", other, "--", "/bin/true"], "--resume takes no application"),
        (["trace", "run", "--resume", other, "--mpiruns", "2"], "--resume takes no --mpiruns"),
        (["trace", "run", "--resume", tmp_path / "nope"], "no such directory"),
        (["trace", "run", "--resume", other], "not a trace campaign"),
        (["trace", "run", "--mpiruns", "2", "--buffer", "0", "-o", out, "--", "/bin/true"], "invalid --buffer 0"),
        (["trace", "run", "--mpiruns", "2", "--timeout", "0", "-o", out, "--", "/bin/true"], "invalid --timeout 0"),
        (["trace", "run", "--mpiruns", "2", "-o", out, "--", str(tmp_path / "no-app")], "not found or not executable"),
        (["trace", "run", "--mpiruns", "2", "--calls", "bogus", "-o", out, "--", "/bin/true"], "unknown MPI call 'bogus'"),
        (["trace", "run", "--mpiruns", "2", "--timer", "sundial", "-o", out, "--", "/bin/true"], "unknown timer 'sundial'"),
        (["trace", "run", "--mpiruns", "2", "--launcher", "mpiexec -n {nprocs} {cmd}", "-o", out, "--", "/bin/true"],
         "unknown placeholder {nprocs}"),
    ]
    for args, msg in cases:
        code, stdout, err = cli(*args)
        assert code != 0, args
        assert msg in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert not out.exists(), args


def test_existing_campaign_directory_refused(cli, tmp_path):
    out = tmp_path / "camp"
    out.mkdir()
    (out / "x").write_text("")
    code, _, err = cli("trace", "run", "--mpiruns", "2", "-o", out, "--", "/bin/true")
    assert code != 0 and "already exists" in err
    assert sorted(p.name for p in out.iterdir()) == ["x"]


def test_plot_of_a_campaign_refused(cli, tmp_path):
    camp = tmp_path / "camp"
    (camp / "runs").mkdir(parents=True)
    (camp / "campaign.toml").write_text('name = "trace"\nkind = "trace"\n')
    code, _, err = cli("trace", camp, "--plot", tmp_path / "g.png")
    assert code != 0 and "--plot draws one trace" in err
    assert not Path(tmp_path / "g.png").exists()
