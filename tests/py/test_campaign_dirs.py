"""Campaign directories from someone else: links, outputs onto the data, races, stored commands, edits.

Every case here is hostile input a campaign directory can carry (a tarball, a shared file system)
or a careless command; rows of docs/reliability.md ("Campaign directories from someone else")
name them. The campaigns are synthetic (complete runs written by mpitempo.io.synthetic with a
campaign.toml that plans exactly those runs), so a resume that is not refused runs no mpirun.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

TOML = 'name = "synthetic"\nmpiruns = 2\nnrep = 20\nops = ["allreduce"]\nmsizes = [8]\n'


def _campaign(root: Path, record: bool = True) -> Path:
    """A complete two-run campaign (default-000, default-001) whose campaign.toml plans exactly
    those runs, with spec.json as `run` writes it when record."""
    from mpitempo.io.campaign import build_campaign, load_toml
    from mpitempo.io.synthetic import make_campaign
    from mpitempo.runner.resume import write_record

    make_campaign(root, configs={"default": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=20)
    (root / "campaign.toml").write_text(_canonical(TOML))   # as `run` writes it
    if record:
        write_record(root, build_campaign(load_toml(root / "campaign.toml")))
    return root


def _canonical(text: str) -> str:
    import tomllib

    from mpitempo.io.campaign import build_campaign

    return build_campaign(tomllib.loads(text)).to_toml()


def _snapshot(d: Path) -> dict[str, bytes | str]:
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "dir"
    return out


@pytest.fixture
def victim(tmp_path):
    """A file and a directory outside the campaign that a link in it points to."""
    f = tmp_path / "victim.txt"
    f.write_text("the user's own file\n")
    d = tmp_path / "victim-dir"
    d.mkdir()
    (d / "keep").write_text("x\n")
    return f, d


# -- links where the runner writes -----------------------------------------------------------------

def _drop_run(camp: Path, run: str = "default-001") -> None:
    shutil.rmtree(camp / "runs" / run)


def _link(camp: Path, rel: str, target: Path) -> None:
    p = camp / rel
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.symlink_to(target)


def _hardlink(camp: Path, rel: str, target: Path) -> None:
    p = camp / rel
    if p.exists():
        p.unlink()
    os.link(target, p)


def _fifo(camp: Path, rel: str, target: Path) -> None:
    os.mkfifo(camp / rel)


# id -> (how the directory is prepared, the path the error names, what it is called)
LINK_CASES = {
    "lock": (lambda c, f, d: _link(c, ".mpitempo.lock", f), ".mpitempo.lock", "a symbolic link"),
    "runlog": (lambda c, f, d: (_drop_run(c), _link(c, "runlog.jsonl", f)), "runlog.jsonl", "a symbolic link"),
    "runs-id-dir": (lambda c, f, d: (_drop_run(c), _link(c, "runs/default-001", d)), "runs/default-001",
                    "a symbolic link"),
    "file-in-run": (lambda c, f, d: ((c / "runs/default-001/meta.json").unlink(),
                                     _link(c, "runs/default-001/stderr.log", f)),
                    "runs/default-001/stderr.log", "a symbolic link"),
    "campaign-toml": (lambda c, f, d: (shutil.copy(c / "campaign.toml", f), _link(c, "campaign.toml", f)),
                      "campaign.toml", "a symbolic link"),
    "runs-dir": (lambda c, f, d: _link(c, "runs", d), "runs", "a symbolic link"),
    "order-json": (lambda c, f, d: _link(c, "order.json", f), "order.json", "a symbolic link"),
    "system-check": (lambda c, f, d: _link(c, "system-check.json", f), "system-check.json", "a symbolic link"),
    "spec-record": (lambda c, f, d: _link(c, "spec.json", f), "spec.json", "a symbolic link"),
    "failed-json": (lambda c, f, d: ((c / "runs/default-001/meta.json").unlink(),
                                     _link(c, "runs/default-001/failed.json", f)),
                    "runs/default-001/failed.json", "a symbolic link"),
    "incomplete-attempt": (lambda c, f, d: ((c / "runs/default-001/meta.json").unlink(),
                                            _link(c, "runs/default-001/incomplete-attempt-1", d)),
                           "runs/default-001/incomplete-attempt-1", "a symbolic link"),
    "runlog-hardlink": (lambda c, f, d: (_drop_run(c), _hardlink(c, "runlog.jsonl", f)), "runlog.jsonl",
                        "2 hard links"),
    "runlog-fifo": (lambda c, f, d: (_drop_run(c), _fifo(c, "runlog.jsonl", f)), "runlog.jsonl", "a FIFO"),
}


@pytest.mark.parametrize("case", list(LINK_CASES))
def test_resume_refuses_links(case, cli, build, tmp_path, victim):
    """Hostile input: a campaign directory with a symbolic link (or a hard link, or a FIFO) where
    `run --resume` writes. Refused in one line naming the path, before any mpirun; the file or
    directory the link points to is untouched."""
    prepare, rel, what = LINK_CASES[case]
    camp = _campaign(tmp_path / "camp")
    f, d = victim
    prepare(camp, f, d)
    before = (_snapshot(tmp_path / "victim-dir"), f.read_bytes() if not stat.S_ISFIFO(os.lstat(f).st_mode) else b"")
    t0 = time.monotonic()
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("mpitempo: error: "), err
    assert f"refusing to write '{camp / rel}'" in err and what in err, err
    assert time.monotonic() - t0 < 60
    assert (_snapshot(tmp_path / "victim-dir"), f.read_bytes()) == before
    assert not list(camp.rglob("launch.json")), "an mpirun was prepared"


def test_new_campaign_never_writes_through_links(tmp_path):
    """Hostile input: links planted inside a directory while files are written into it (the
    primitives every writer uses): never followed, the target is untouched."""
    from mpitempo.io import safefs

    root = tmp_path / "c"
    root.mkdir()
    target = tmp_path / "target"
    target.write_text("keep\n")
    (root / "a").symlink_to(target)
    for call in (lambda: safefs.safe_append(root / "a", "x\n", root),
                 lambda: safefs.safe_open(root / "a", "w", root),
                 lambda: safefs.safe_open(root / "a", "w+", root),
                 lambda: safefs.safe_write_text(root / "a", "x", root),
                 lambda: safefs.safe_read_text(root / "a", root)):
        with pytest.raises(safefs.UnsafePath, match="symbolic link"):
            call()
    # a planted temporary name is removed, never written through
    pid_tmp = root / f".b.{os.getpid()}.tmp"
    pid_tmp.symlink_to(target)
    safefs.safe_write_text(root / "b", "new\n", root)
    assert (root / "b").read_text() == "new\n" and not pid_tmp.is_symlink()
    # a directory between root and the file
    (root / "sub").symlink_to(tmp_path)
    with pytest.raises(safefs.UnsafePath, match="'.*sub': it is a symbolic link"):
        safefs.safe_write_text(root / "sub" / "x", "x", root)
    with pytest.raises(safefs.UnsafePath):
        safefs.safe_mkdir(root / "sub" / "y", root)
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists() and target.read_text() == "keep\n"
    # a FIFO is refused without blocking on it
    os.mkfifo(root / "f")
    with pytest.raises(safefs.UnsafePath, match="FIFO"):
        safefs.safe_append(root / "f", "x", root)


def test_the_core_does_not_write_through_a_planted_temporary_file(build, tmp_path):
    """Hostile input: a link under the name of the core's temporary file in --outdir. The core
    creates it exclusively (O_EXCL|O_NOFOLLOW): it fails instead of writing into the target."""
    import subprocess

    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "target"
    target.write_text("keep\n")
    wrapper = tmp_path / "plant.sh"   # the core's pid is the shell's after exec
    wrapper.write_text(f'#!/bin/sh\nln -s {target} {out}/.measurements.csv.$$.tmp\nexec "$@"\n')
    wrapper.chmod(0o755)
    r = subprocess.run([str(wrapper), build.binary("mpitempo-bench"), "--outdir", str(out), "--ops", "allreduce",
                        "--msizes", "8", "--nrep", "3", "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "cannot write into --outdir" in r.stderr, r.stderr
    assert target.read_text() == "keep\n"


# -- outputs onto the campaign being read --------------------------------------------------------------

OUTPUT_CASES = {
    "report-onto-measurements": (["report", "{camp}", "-o", "{camp}/runs/default-000/measurements.csv"],
                                 "'runs/default-000/measurements.csv'"),
    "report-onto-meta": (["report", "{camp}", "-o", "{camp}/runs/default-000/meta.json"], "'runs/default-000/meta.json'"),
    "report-onto-campaign-toml": (["report", "{camp}", "-o", "{camp}/campaign.toml"], "'campaign.toml'"),
    "report-onto-runlog": (["report", "{camp}", "-o", "{camp}/runlog.jsonl"], "'runlog.jsonl'"),
    "report-into-runs": (["report", "{camp}", "-o", "{camp}/runs/r.html"], "'runs/r.html'"),
    "report-via-link": (["report", "{camp}", "-o", "lnk.html"], "'runs/default-000/measurements.csv'"),
    "report-via-hardlink": (["report", "{camp}", "-o", "hard.html"], "(the same file)"),
    "report-second-campaign": (["report", "{other}", "{camp}", "-o", "{camp}/runs/default-001/measurements.csv"],
                               "'runs/default-001/measurements.csv'"),
    "export-osu-into-run": (["export", "{camp}", "--osu", "{camp}/runs/default-000"], "inside 'runs/default-000'"),
    "export-imb-into-runs": (["export", "{camp}", "--imb", "{camp}/runs"], "inside 'runs'"),
    "export-parquet-into-runs": (["export", "{camp}", "--parquet", "{camp}/runs/pq"], "inside 'runs/pq'"),
    "ingest-db-onto-meta": (["ingest", "{camp}", "--db", "{camp}/runs/default-000/meta.json"],
                            "'runs/default-000/meta.json'"),
    "ingest-db-onto-toml": (["ingest", "{camp}", "--db", "{camp}/campaign.toml"], "'campaign.toml'"),
    "ingest-db-into-runs": (["ingest", "{camp}", "--db", "{camp}/runs/x.duckdb"], "'runs/x.duckdb'"),
    "summary-plot-onto-csv": (["summary", "{camp}", "--process", "ps3_osu", "--plot",
                               "{camp}/runs/default-000/measurements.csv"], "'runs/default-000/measurements.csv'"),
    "report-onto-store": (["report", "store.duckdb", "-o", "store.duckdb"], "the store 'store.duckdb'"),
    "tree-from-into-runs": (["tree", "--from", "{camp}", "-o", "{camp}/runs/default-000"],
                            "inside 'runs/default-000'"),
}


@pytest.mark.parametrize("case", list(OUTPUT_CASES))
def test_output_onto_a_campaign_being_read(case, cli, build, tmp_path, monkeypatch):
    """Hostile (careless) input: an output path that is a file of a campaign being read, lies in its
    runs/, or is a link or hard link to such a file. Refused in one line naming the file; the
    campaign is unchanged byte for byte and nothing is created."""
    argv, expected = OUTPUT_CASES[case]
    monkeypatch.chdir(tmp_path)
    camp = _campaign(tmp_path / "camp")
    other = _campaign(tmp_path / "other")
    (tmp_path / "runlog.jsonl").write_text("")
    shutil.copy(tmp_path / "runlog.jsonl", camp / "runlog.jsonl")
    (tmp_path / "lnk.html").symlink_to(camp / "runs" / "default-000" / "measurements.csv")
    os.link(camp / "runs" / "default-001" / "measurements.csv", tmp_path / "hard.html")
    if "store.duckdb" in argv:
        code, _, err = cli("ingest", "camp", "--db", "store.duckdb")
        assert code == 0, err
    before = _snapshot(tmp_path)
    args = [a.replace("{camp}", "camp").replace("{other}", "other") for a in argv]
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("mpitempo: error: refusing to write"), err
    assert expected in err, err
    assert _snapshot(tmp_path) == before, "the campaign or the working directory changed"


def test_report_next_to_the_data_is_still_allowed(cli, build, tmp_path, monkeypatch):
    """report's default output, DIR/report.html, is not a file of the campaign: still written."""
    monkeypatch.chdir(tmp_path)
    camp = _campaign(tmp_path / "camp")
    code, out, err = cli("report", "camp")
    assert code == 0, err
    assert (camp / "report.html").is_file()


# -- two runs on one new directory -----------------------------------------------------------------------

def _racer(barrier, args, errfile, slow_mkdir_of):
    real_mkdir = os.mkdir

    def slow_mkdir(path, *a, **k):   # widen the window between creating the directory and claiming it
        real_mkdir(path, *a, **k)
        if os.path.abspath(path) == slow_mkdir_of:
            time.sleep(0.8)

    os.mkdir = slow_mkdir
    fd = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    sys.stderr = open(2, "w", closefd=False)   # pytest's capture is not this child's fd 2
    from mpitempo.cli import main

    barrier.wait()
    code = main(args)
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)


@pytest.mark.parametrize("round_", range(3))
def test_two_runs_on_one_new_directory(round_, build, tmp_path):
    """Race: two `run -o NEW` started at the same moment on the same new directory (the one that
    creates it pauses after mkdir, as a busy machine does). One gets the directory; the other gets a
    one-line error and touches nothing of the winner's: its campaign.toml, spec.json and run remain."""
    import multiprocessing

    launcher = tmp_path / "slow-launcher.sh"   # an mpirun that takes 2 s and fails: no MPI needed
    launcher.write_text("#!/bin/sh\nsleep 2\necho 'no mpirun here' >&2\nexit 1\n")
    launcher.chmod(0o755)
    new = tmp_path / "new"
    args = ["run", "-o", str(new), "--launcher", f"{launcher} {{cmd}}", "--mpiruns", "1", "--nrep", "5",
            "--msizes", "8", "--ops", "allreduce", "--quiet", "--no-summary"]
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_racer, args=(barrier, args, str(tmp_path / f"err{i}"), str(new))) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    errs = [(tmp_path / f"err{i}").read_text() for i in range(2)]
    losers = [e for e in errs if "already exists" in e]
    winners = [e for e in errs if "already exists" not in e]
    assert len(losers) == 1 and len(winners) == 1, errs
    assert losers[0].count("\n") == 1 and "Traceback" not in losers[0], losers[0]
    assert "1 of 1 mpiruns failed" in winners[0], winners[0]
    assert (new / "campaign.toml").is_file() and (new / "spec.json").is_file()
    assert (new / "runs" / "default-000" / "failed.json").is_file()
    assert len((new / "runlog.jsonl").read_text().splitlines()) == 1   # one run, by the winner only


# -- stored commands: shown, and run only with consent ---------------------------------------------------

def _evil_campaign(tmp_path: Path, key: str, script: str) -> tuple[Path, Path]:
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n{script}\n")
    evil.chmod(0o755)
    camp = _campaign(tmp_path / "camp", record=False)
    value = str(evil) if key == "mpicc" else f"{evil} {{cmd}}"
    (camp / "campaign.toml").write_text(_canonical(TOML + f'{key} = "{value}"\n'))
    _drop_run(camp)   # something to resume
    return camp, marker


@pytest.mark.parametrize("key", ["mpicc", "launcher"])
def test_stored_command_without_consent_is_not_run(key, cli, build, tmp_path):
    """Hostile input: a campaign.toml whose mpicc (or launcher) is a script that creates a marker
    file. `run --resume` without a terminal and without --yes refuses in one line naming the stored
    value; the script never runs."""
    camp, marker = _evil_campaign(tmp_path, key, "exit 1")
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "without your consent" in err and f"{key} '{tmp_path / 'evil.sh'}" in err and "--yes" in err, err
    assert not marker.exists()


@pytest.mark.parametrize("key", ["mpicc", "launcher"])
def test_stored_command_with_yes_is_shown_then_run(key, cli, build, tmp_path):
    """The same campaign resumed with --yes: the commands are printed first, then run (the marker
    appears; the script then fails, which is the campaign's business)."""
    camp, marker = _evil_campaign(tmp_path, key, "exit 1")
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary", "--yes")
    evil = str(tmp_path / "evil.sh")
    assert "stores commands that differ from your defaults" in err, err
    shown = err.split("running them (--yes)")[0]
    assert (f"{evil} -show" in shown) if key == "mpicc" else (f"{evil} " in shown and "--outdir" in shown), err
    assert marker.exists()


def test_consent_on_a_terminal(build, tmp_path):
    """On a terminal the commands are shown and the user is asked: 'n' (or nothing) refuses, 'y' runs."""
    import io

    from mpitempo.errors import MtError
    from mpitempo.io.campaign import build_campaign, load_toml
    from mpitempo.runner.resume import consent

    class Tty(io.StringIO):
        def isatty(self):
            return True

    camp, marker = _evil_campaign(tmp_path, "launcher", "exit 1")
    c = build_campaign(load_toml(camp / "campaign.toml"))
    for answer in ("n\n", "\n", "maybe\n"):
        out = Tty()
        with pytest.raises(MtError, match="you did not agree"):
            consent(c, camp, yes=False, stdin=Tty(answer), out=out)
        assert "Run them? [y/N]" in out.getvalue() and str(tmp_path / "evil.sh") in out.getvalue()
    consent(c, camp, yes=False, stdin=Tty("y\n"), out=Tty())
    assert not marker.exists()   # consent() only asks; nothing ran


def test_default_commands_need_no_consent(cli, build, tmp_path):
    """A campaign without stored commands (or with the named launchers) resumes without a question."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.resume import stored_commands

    camp = _campaign(tmp_path / "camp")
    for extra in ("", 'launcher = "mpiexec"\n', 'env = { MPIR_CVAR_X = "1" }\n'):
        c = build_campaign(__import__("tomllib").loads(TOML + extra))
        assert stored_commands(c, camp) == [], extra
    c = build_campaign(__import__("tomllib").loads(TOML + 'env = { LD_PRELOAD = "/tmp/x.so" }\n'))
    assert [w for w, _, _ in stored_commands(c, camp)] == ["env LD_PRELOAD"]
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 0, err


@pytest.mark.parametrize("env", [
    # MPICH's Hydra starts its proxies with HYDRA_LAUNCHER_EXEC on any host of HYDRA_HOST_FILE
    {"HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": "{evil}", "HYDRA_HOST_FILE": "{hosts}"},
    {"HYDRA_BOOTSTRAP_EXEC": "{evil}"},
    {"OMPI_MCA_orte_fork_agent": "{evil}"},         # Open MPI 4: a command in front of every rank
    {"PRTE_MCA_prte_fork_agent": "{evil}"},         # Open MPI 5 (PRRTE)
    {"OMPI_MCA_plm_rsh_agent": "{evil}"},
    {"OMPI_MCA_mca_base_component_path": "{dir}"},  # plugins loaded from a directory
], ids=["hydra-launcher-exec", "hydra-bootstrap-exec", "ompi-fork-agent", "prte-fork-agent", "ompi-rsh-agent",
        "ompi-component-path"])
def test_stored_launcher_agent_variables_need_consent(env, cli, build, tmp_path):
    """Hostile input: a campaign.toml whose env names a program the MPI launcher runs (Hydra's launcher
    exec with a host file, Open MPI's fork or rsh agent) or a plugin directory. These are commands like
    LD_PRELOAD: `run --resume` without --yes refuses, naming the variable, and the program never runs
    (before the fix only loader variables were asked for, and Hydra ran the stored script)."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    evil.chmod(0o755)
    (tmp_path / "hosts").write_text("otherhost\n")
    camp = _campaign(tmp_path / "camp", record=False)
    items = ", ".join(f'{k} = "{v.format(evil=evil, hosts=tmp_path / "hosts", dir=tmp_path)}"' for k, v in env.items())
    (camp / "campaign.toml").write_text(_canonical(TOML + f"env = {{ {items} }}\n"))
    _drop_run(camp)
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "without your consent" in err and f"env {sorted(env)[0]}" in err and "--yes" in err, err
    assert not marker.exists()


def test_tuning_variables_need_no_consent(tmp_path):
    """The variables tune, imbalance and barrier store (algorithm selections, rule files) are not
    launcher agents: resuming one's own such campaign asks nothing."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.resume import runs_code, stored_commands

    for var in ("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",
                "OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_allreduce_algorithm",
                "OMPI_MCA_coll_tuned_dynamic_rules_filename", "OMPI_MCA_mpi_yield_when_idle", "MPITEMPO_SMPI_CFG",
                "OMP_NUM_THREADS"):
        assert not runs_code(var), var
    c = build_campaign(__import__("tomllib").loads(TOML + 'env = { MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = "ring" }\n'))
    assert stored_commands(c, tmp_path) == []


OTHER_ROUTES = {
    # a configuration directory: Open MPI reads $HOME/.openmpi/mca-params.conf (which can set a fork
    # agent), PRRTE $HOME/.prte/, PMIx $HOME/.pmix/, ssh $HOME/.ssh/config (ProxyCommand)
    "home": {"HOME": "{dir}"},
    "xdg-config-home": {"XDG_CONFIG_HOME": "{dir}"},
    # parameter files and environments by another MCA name
    "ompi-param-file-path": {"OMPI_MCA_mca_base_param_file_path": "{dir}"},
    "ompi-override-param-file": {"OMPI_MCA_mca_base_override_param_file": "{dir}/x.conf"},
    "ompi-envar-file-prefix": {"OMPI_MCA_mca_base_envar_file_prefix": "x"},
    "ompi-env-list": {"OMPI_MCA_mca_base_env_list": "LD_PRELOAD={dir}/evil.so"},
    "pmix-param-files": {"PMIX_MCA_mca_base_param_files": "{dir}/x.conf"},
    "prte-param-files": {"PRTE_MCA_mca_base_param_files": "{dir}/x.conf"},
    "ompi-xterm": {"OMPI_MCA_orte_xterm": "0"},
    # where Open MPI / PMIx find their components and daemons
    "opal-prefix": {"OPAL_PREFIX": "{dir}"},
    "pmix-install-prefix": {"PMIX_INSTALL_PREFIX": "{dir}"},
    # libraries the ranks load by another name
    "fi-provider-path": {"FI_PROVIDER_PATH": "{dir}"},
    "ucx-module-dir": {"UCX_MODULE_DIR": "{dir}"},
    "intel-pmi-library": {"I_MPI_PMI_LIBRARY": "{dir}/evil.so"},
    # MPICH files other than the algorithm selection
    "mpich-nameserv-dir": {"MPIR_CVAR_NAMESERV_FILE_PUBDIR": "{dir}"},
    # configuration files that load plugins, and shells
    "slurm-conf": {"SLURM_CONF": "{dir}/slurm.conf"},
    "openssl-conf": {"OPENSSL_CONF": "{dir}/o.cnf"},
    "shellopts": {"SHELLOPTS": "xtrace", "PS4": "$(touch {dir}/MARKER)"},
    "tracer-dir": {"MPITEMPO_TRACE_DIR": "{dir}"},
    "smpi-privatize-libs": {"MPITEMPO_SMPI_CFG": "smpi/privatize-libs:{dir}/evil.so"},
}


@pytest.mark.parametrize("env", list(OTHER_ROUTES.values()), ids=list(OTHER_ROUTES))
def test_variables_reaching_code_by_another_route_need_consent(env, cli, build, tmp_path):
    """Hostile input: a stored variable that reaches a parameter file, a launcher, a library or a
    shell by another name than LD_PRELOAD, HYDRA_* or an MCA agent (before the fix only those names
    were asked for). `run --resume` without --yes refuses in one line naming the variable; nothing is
    built or launched."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil"
    (evil / ".openmpi").mkdir(parents=True)
    (evil / ".openmpi" / "mca-params.conf").write_text(f"orte_fork_agent = /bin/sh -c 'touch {marker}'\n")
    camp = _campaign(tmp_path / "camp", record=False)
    items = ", ".join(f'{k} = "{v.format(dir=evil)}"' for k, v in env.items())
    (camp / "campaign.toml").write_text(_canonical(TOML + f"env = {{ {items} }}\n"))
    _drop_run(camp)
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "without your consent" in err and f"env {sorted(env)[0]}" in err and "--yes" in err, err
    assert not marker.exists() and not (camp / "runs" / "default-001").exists()


def test_path_and_home_consent_shows_what_they_choose(tmp_path, monkeypatch):
    """A stored PATH chooses which mpiexec, srun or ssh a bare name runs: the consent shows where
    they resolve under it; the stored value is shown escaped (ESC as \\x1b)."""
    import io

    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.resume import consent

    bindir = tmp_path / "bin\x1b[2J"
    bindir.mkdir()
    (bindir / "srun").write_text("#!/bin/sh\n")
    (bindir / "srun").chmod(0o755)
    from mpitempo.io.campaign import _toml_value

    c = build_campaign(__import__("tomllib").loads(
        TOML + f'env = {{ PATH = {_toml_value(str(bindir))}, HOME = {_toml_value(str(tmp_path))} }}\n'))
    out = io.StringIO()
    consent(c, tmp_path, yes=True, out=out)
    text = out.getvalue()
    assert "\x1b" not in text and "bin\\x1b[2J" in text, text
    assert "env PATH = " in text and "programs named without a directory resolve in it: srun -> " in text, text
    assert "env HOME = " in text and "mca-params.conf" in text, text


def test_stored_value_equal_to_your_environment_needs_no_consent(tmp_path, monkeypatch):
    """A campaign of one's own that stores the PATH (or LD_LIBRARY_PATH) one has anyway: the resumed
    mpiruns get nothing they would not get from a new run, so nothing is asked; a different value is."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.resume import stored_commands

    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/mine/lib")
    same = build_campaign(__import__("tomllib").loads(TOML + 'env = { LD_LIBRARY_PATH = "/opt/mine/lib" }\n'))
    assert stored_commands(same, tmp_path) == []
    other = build_campaign(__import__("tomllib").loads(TOML + 'env = { LD_LIBRARY_PATH = "/opt/other/lib" }\n'))
    assert [w for w, _, _ in stored_commands(other, tmp_path)] == ["env LD_LIBRARY_PATH"]
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert [w for w, _, _ in stored_commands(same, tmp_path)] == ["env LD_LIBRARY_PATH"]


def test_smpi_cfg_without_files_needs_no_consent(tmp_path):
    """MPITEMPO_SMPI_CFG of a simulated campaign (smpirun --cfg items) asks only when an item names a
    library, path, file or plugin."""
    from mpitempo.runner.resume import value_runs_code

    assert not value_runs_code("MPITEMPO_SMPI_CFG", "smpi/host-speed:1Gf smpi/coll-selector:mpich")
    assert value_runs_code("MPITEMPO_SMPI_CFG", "smpi/host-speed:1Gf smpi/privatize-libs:/x/libevil.so")
    assert value_runs_code("MPITEMPO_SMPI_CFG", "path:/x")


# -- edits of campaign.toml: values refused, formatting accepted -----------------------------------------

SPEC_EDITS = {
    "msizes-edited": (lambda t: t.replace("msizes = [8]", "msizes = [8, 16]"), "msizes"),
    "nrep-edited": (lambda t: t.replace("nrep = 20", "nrep = 21"), "nrep"),
    "mpiruns-edited": (lambda t: t.replace("mpiruns = 2", "mpiruns = 3"), "mpiruns"),
    "key-added": (lambda t: "seed = 7\n" + t, "seed"),
}


@pytest.mark.parametrize("case", list(SPEC_EDITS))
def test_resume_refuses_an_edited_spec(case, cli, build, tmp_path):
    """Hostile (careless) input: campaign.toml edited after the campaign started (another msizes,
    nrep, mpiruns, a new key). The resume would mix two specifications: refused in one line naming
    the first differing key, against spec.json; nothing is run."""
    edit, key = SPEC_EDITS[case]
    camp = _campaign(tmp_path / "camp")
    _drop_run(camp)
    p = camp / "campaign.toml"
    p.write_text(edit(p.read_text()))
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "was changed after the campaign started" in err and f"'{key}" in err and "spec.json" in err, err
    assert not (camp / "runs" / "default-001").exists()


def test_resume_refuses_an_edit_against_the_runs_launch_records(cli, build, tmp_path):
    """Hostile (careless) input: a campaign without spec.json (made before it existed) whose
    campaign.toml was edited: the core arguments in a run's launch.json are the record."""
    from mpitempo.io.campaign import build_campaign, load_toml

    camp = _campaign(tmp_path / "camp", record=False)
    c = build_campaign(load_toml(camp / "campaign.toml"))
    cfg = c.configs[0]
    argv = ["mpiexec", "-n", "2", "core", "--outdir", "x", "--config", "default", "--run-index", "0",
            *c.core_args(cfg), "--seed", "1", "--expect-np", "2"]
    (camp / "runs" / "default-000" / "launch.json").write_text(json.dumps({"config": "default",
                                                                           "launcher": {"argv": argv}}))
    p = camp / "campaign.toml"
    p.write_text(p.read_text().replace("nrep = 20", "nrep = 30"))
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "'nrep = 20' when it ran, 'nrep = 30' now" in err and "launch.json" in err, err


@pytest.mark.parametrize("edit", ["whitespace", "comment", "order-and-quotes"])
def test_resume_accepts_a_formatting_edit(edit, cli, build, tmp_path):
    """A formatting-only edit of campaign.toml (spaces around '=', a comment, keys reordered,
    single quotes) is no change of the specification: the resume proceeds."""
    camp = _campaign(tmp_path / "camp")
    p = camp / "campaign.toml"
    text = p.read_text()
    text = {"whitespace": text.replace("nrep = 20", "nrep    =     20  ").replace("[8]", "[ 8 ]"),
            "comment": "# my notes on this campaign\n" + text.replace("mpiruns = 2", "mpiruns = 2   # two"),
            "order-and-quotes": "msizes = [8]\nnrep = 20\nops = ['allreduce']\nmpiruns = 2\nname = 'synthetic'\n"}[edit]
    p.write_text(text)
    code, out, err = cli("run", "--resume", camp, "--no-summary")
    assert code == 0, err
    assert "2 of 2 runs complete, 0 to run" in err


def test_resume_flag_still_compared(cli, build, tmp_path):
    """A flag that differs from the stored campaign is still refused with the key (and a formatting
    edit of campaign.toml does not change that)."""
    camp = _campaign(tmp_path / "camp")
    p = camp / "campaign.toml"
    p.write_text(p.read_text().replace("nrep = 20", "nrep=20"))
    code, out, err = cli("run", "--resume", camp, "--nrep", "5")
    assert code == 2 and "'nrep = 20' there, 'nrep = 5' now" in err, err


@pytest.mark.parametrize("cmd,hint", [(["run", "--ops", "bcast"], "choose a new -o or use --resume"),
                                      (["clocks"], "choose a new -o"), (["tree"], "choose a new -o"),
                                      (["pingpong"], "choose a new -o")])
def test_existing_outdir_hint_names_only_options_the_command_has(cmd, hint, cli, build, tmp_path):
    """An -o that exists: --resume is offered only by the commands that have it (run, barrier, trace),
    and a device is named as what it is."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("x")
    code, _, err = cli(*cmd, "-n", "2", "-o", str(tmp_path / "out"))
    assert code == 2 and err.strip().endswith(f"already exists; {hint}"), err
    assert os.listdir(tmp_path / "out") == ["keep"]
    if cmd[0] != "run":   # run's -o is a click directory path: click refuses a device itself
        code, _, err = cli(*cmd, "-n", "2", "-o", "/dev/null")
        assert code == 2 and "'/dev/null' already exists and is a character device, not a directory" in err, err
