"""Accepted nonsense and tracebacks: hostile or careless input that mpitempo used to accept (and
measure, launch or read) or answer with a traceback, now one line before anything is created.

Each case of CASES is one row of docs/reliability.md ("Accepted nonsense and tracebacks"). A case
runs `mpitempo ARGS` in-process in an empty directory and requires, as tests/py/test_reliability.py
does: a non-zero exit, exactly one line on stderr starting with "mpitempo" and holding the expected
text, no traceback, nothing created. "{camp}" is a synthetic campaign, "{camp}:MUTATION" one whose
first run was damaged by MUTATIONS[MUTATION]. Bytes values of files are written as they are
(encodings), str values as UTF-8.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ["-o", "out"]

# id -> (files {name: text or bytes}, argv, expected text of the one-line error)
CASES = {
    # -- accepted nonsense: a message size given twice would be measured twice and pooled ------------
    "msizes-twice": ({}, ["run", "--msizes", "8,8", *RUN], "invalid --msizes '8,8': 8 B is listed twice"),
    "msizes-twice-unit": ({}, ["run", "--msizes", "8,8B", *RUN], "invalid --msizes '8,8B': 8 B is listed twice"),
    "msizes-range-overlap": ({}, ["run", "--msizes", "8-16,16", *RUN], "16 B is listed twice"),
    "msizes-twice-toml": ({"c.toml": "msizes = [8, 8]\n"}, ["run", "c.toml", *RUN], "8 B is listed twice"),
    "pingpong-msizes-twice": ({}, ["pingpong", "--msizes", "0,0-4", *RUN], "0 B is listed twice"),
    "tune-msizes-twice": ({}, ["tune", "--msizes", "1K,1024", *RUN], "1024 B is listed twice"),
    # -- options of another scheme (the core's check, every caller) ----------------------------------
    "scheme-window-with-barrier": ({}, ["run", "--scheme", "barrier", "--window", "20us", *RUN],
                                   "--window does not apply to scheme 'barrier' (it applies to window)"),
    "scheme-inner-with-barrier": ({}, ["run", "--scheme", "barrier", "--inner", "5", *RUN],
                                  "--inner does not apply to scheme 'barrier' (it applies to loop, barrier_loop)"),
    "scheme-rt-slack-with-window": ({}, ["run", "--scheme", "window", "--rt-slack", "3", *RUN],
                                    "--rt-slack does not apply to scheme 'window' (it applies to roundtime)"),
    "scheme-option-in-toml": ({"c.toml": 'scheme = "barrier"\ninner = 4\n'}, ["run", "c.toml", *RUN],
                              "--inner does not apply to scheme 'barrier'"),
    # -- huge process counts on this host ------------------------------------------------------------
    "np-huge": ({}, ["run", "-n", "100000", *RUN], "-n 100000 would start 100000 ranks on this host"),
    "clocks-np-huge": ({}, ["clocks", "-n", "100000", *RUN], "would start 100000 ranks on this host"),
    "trace-np-huge": ({}, ["trace", "run", "-n", "100000", "-o", "tr", "--", "true"],
                      "would start 100000 ranks on this host"),
    # -- unknown launcher placeholders, before the directory exists ----------------------------------
    "launcher-unknown-placeholder": ({}, ["run", "--launcher", "mpirun -n {nprocs} {cmd}", *RUN],
                                     "unknown placeholder {nprocs} (allowed: {np}, {cmd}, {mpiexec})"),
    "pingpong-launcher-placeholder": ({}, ["pingpong", "--launcher", "{mpiexec} -np {n} {cmd}", *RUN],
                                      "unknown placeholder {n}"),
    "trace-launcher-placeholder": ({}, ["trace", "run", "--launcher", "mpiexec -n {ranks} {cmd}", "-o", "tr",
                                        "--", "true"], "unknown placeholder {ranks}"),
    # -- NaN and infinity for numbers of options ------------------------------------------------------
    "compare-alpha-nan": ({}, ["compare", "{camp}", "--alpha", "nan"], "'nan' is not a finite number"),
    "compare-alpha-inf": ({}, ["compare", "{camp}", "--alpha", "inf"], "'inf' is not a finite number"),
    "tune-alpha-nan": ({}, ["tune", "--alpha", "nan"], "'nan' is not a finite number"),
    "pingpong-cut-coef-nan": ({}, ["pingpong", "--cut-coef", "nan"], "'nan' is not a finite number"),
    "barrier-timeout-nan": ({}, ["barrier", "--timeout", "nan"], "'nan' is not a finite number"),
    # -- contradictory output flags ------------------------------------------------------------------
    "summary-json-csv": ({}, ["summary", "--json", "--csv", "{camp}"], "--json and --csv exclude each other"),
    "summary-markdown-csv": ({}, ["summary", "--markdown", "--csv", "{camp}"],
                             "--csv and --markdown exclude each other"),
    "compare-json-markdown": ({}, ["compare", "{camp}", "--json", "--markdown"],
                              "--json and --markdown exclude each other"),
    "export-json-osu-stdout": ({}, ["export", "{camp}", "--json", "--osu", "-"],
                               "--json and --osu - both write to stdout"),
    # -- empty or whitespace-only paths ---------------------------------------------------------------
    "outdir-empty": ({}, ["run", "-o", ""], "'' is not a path"),
    "outdir-blank": ({}, ["run", "-o", "  "], "'  ' is not a path"),
    "db-blank": ({}, ["ingest", "{camp}", "--db", " "], "' ' is not a path"),
    "report-output-empty": ({}, ["report", "{camp}", "-o", ""], "'' is not a path"),
    "resume-blank": ({}, ["run", "--resume", " "], "' ' is not a path"),
    "campaign-file-blank": ({}, ["run", " ", *RUN], "' ' is not a path"),
    "trace-outdir-empty": ({}, ["trace", "run", "-o", "", "--", "true"], "'' is not a path"),
    "clocks-plot-blank": ({}, ["clocks", "--plot", " "], "' ' is not a path"),
    "info-diff-empty": ({}, ["info", "--diff", ""], "'' is not a path"),
    # -- campaign files in other encodings, unbounded or nested without end ---------------------------
    "toml-latin1": ({"c.toml": 'name = "caf\xe9"\n'.encode("latin-1")}, ["run", "c.toml", *RUN],
                    "campaign file 'c.toml' is not valid TOML: it is not UTF-8 text (byte 0xe9 at offset 11)"),
    "toml-utf16": ({"c.toml": "nrep = 5\n".encode("utf-16")}, ["run", "c.toml", *RUN],
                   "campaign file 'c.toml' is not valid TOML: it is UTF-16 text: save it as UTF-8"),
    "toml-nul": ({"c.toml": b"nrep = 5\x00\n"}, ["run", "c.toml", *RUN], "holds a NUL byte"),
    "toml-deep": ({"c.toml": "x = " + "[" * 100000 + "]" * 100000 + "\n"}, ["run", "c.toml", *RUN],
                  "nested deeper than 64 levels"),
    "toml-huge": ({"c.toml": "# " + "a" * (2 << 20) + "\n"}, ["run", "c.toml", *RUN],
                  "campaign file 'c.toml' is larger than 1 MiB"),
    "toml-is-directory": ({"d.toml/x": "x"}, ["run", "d.toml", *RUN], "is a directory"),
    # -- messages that named the wrong problem ---------------------------------------------------------
    "toml-env-value-array": ({"c.toml": '[[config]]\nname = "a"\nenv = { A = [1, 2] }\n'}, ["run", "c.toml", *RUN],
                             "invalid value of env A in [[config]] 'a' [1, 2]: expected a string, number or boolean, "
                             "not an array"),
    # -- meta.json: NaN, depth, encoding, shape ------------------------------------------------------
    "meta-nan": ({}, ["summary", "{camp}:meta_nan"], "has a number that is not finite (NaN or infinity) at key 'nprocs'"),
    "meta-infinity-nested": ({}, ["summary", "{camp}:meta_inf"], "at key 'timer.resolution_s'"),
    "meta-1e999": ({}, ["compare", "{camp}:meta_1e999"], "at key 'run_index'"),
    "meta-deep": ({}, ["summary", "{camp}:meta_deep"], "is not valid JSON: nested deeper than 64 levels"),
    "meta-deep-info-diff": ({}, ["info", "--diff", "{camp}:meta_deep"], "nested deeper than 64 levels"),
    "meta-bad-utf8": ({}, ["summary", "{camp}:meta_bad_utf8"], "is not valid JSON: it is not UTF-8 text (byte 0xff"),
    "meta-experiments-string": ({}, ["summary", "{camp}:meta_exps_str"],
                                "key 'experiments' is str 'abc', expected an array"),
    "meta-ranks-numbers": ({}, ["report", "{camp}:meta_ranks_num", "-o", "r.html"], "ranks[0] is int, expected an object"),
    "meta-mpi-list": ({}, ["summary", "{camp}:meta_mpi_list"], "key 'mpi' is list"),
    "meta-nprocs-string": ({}, ["summary", "{camp}:meta_nprocs_str"], "key 'nprocs' is str '2', expected an integer"),
    "meta-config-number": ({}, ["export", "{camp}:meta_config_num", "--parquet", "pq"],
                           "key 'config' is int 7, expected a string"),
}


def _edit_meta(fn):
    def apply(run: Path):
        p = run / "meta.json"
        m = json.loads(p.read_text())
        fn(m)
        p.write_text(json.dumps(m))
    return apply


MUTATIONS = {
    "meta_nan": _edit_meta(lambda m: m.__setitem__("nprocs", float("nan"))),
    "meta_inf": _edit_meta(lambda m: m["timer"].__setitem__("resolution_s", float("inf"))),
    "meta_1e999": lambda r: (r / "meta.json").write_text(
        (r / "meta.json").read_text().replace('"run_index": 0', '"run_index": 1e999')),
    "meta_deep": lambda r: (r / "meta.json").write_text("[" * 100000 + "]" * 100000),
    "meta_bad_utf8": lambda r: (r / "meta.json").write_bytes(b'{"config": "A\xff", "format_version": 1}'),
    "meta_exps_str": _edit_meta(lambda m: m.__setitem__("experiments", "abc")),
    "meta_ranks_num": _edit_meta(lambda m: m.__setitem__("ranks", [0, 1])),
    "meta_mpi_list": _edit_meta(lambda m: m.__setitem__("mpi", ["x"])),
    "meta_nprocs_str": _edit_meta(lambda m: m.__setitem__("nprocs", "2")),
    "meta_config_num": _edit_meta(lambda m: m.__setitem__("config", 7)),
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from mpitempo.io.synthetic import make_campaign

    return make_campaign(tmp_path_factory.mktemp("nonsense") / "camp", configs={"A": 1.0, "B": 1.2}, runs=3,
                         ops=("allreduce",), msizes=(8,), nrep=20)


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("case", list(CASES))
def test_nonsense(case, cli, build, tmp_path, monkeypatch, synthetic):
    files, argv, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (tmp_path / name).write_bytes(text)
        else:
            (tmp_path / name).write_text(text)
    args = []
    for a in argv:
        m = re.match(r"^\{camp\}(?::(\w+))?$", a)
        if m:
            dest = tmp_path / f"camp-{m.group(1) or 'ok'}"
            if not dest.exists():
                shutil.copytree(synthetic, dest)
                if m.group(1):
                    MUTATIONS[m.group(1)](dest / "runs" / "A-000")
            a = dest.name
        args.append(a)
    before = _listing(tmp_path)
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("mpitempo"), err
    assert expected in err, err
    assert _listing(tmp_path) == before, "something was created before the error"


def test_meta_json_above_the_size_limit(cli, tmp_path, monkeypatch, synthetic):
    """A meta.json larger than the limit (64 MiB; lowered here to 4 KiB) is refused naming the file,
    and read no further than the limit."""
    from mpitempo.io import safeload

    monkeypatch.setattr(safeload, "MAX_JSON_BYTES", 4096)
    camp = tmp_path / "camp"
    shutil.copytree(synthetic, camp)
    p = camp / "runs" / "A-000" / "meta.json"
    m = json.loads(p.read_text())
    m["padding"] = "x" * 5000
    p.write_text(json.dumps(m))
    code, _, err = cli("summary", str(camp))
    assert code == 2 and err.count("\n") == 1 and "meta.json' is larger than 4096 bytes" in err, err


# -- a run killed by the timeout is never complete ------------------------------------------------

def test_timed_out_run_is_not_complete(cli, tmp_path, synthetic):
    """Hostile timing: the core wrote meta.json and measurements.csv, then hung in MPI_Finalize and
    was killed by the timeout (the runner wrote failed.json). On main that run was counted complete
    by resume and used by summary; now it is a failed run for both."""
    from mpitempo import kinds
    from mpitempo.io.rundir import find_runs
    from mpitempo.runner.execute import _done

    camp = tmp_path / "camp"
    shutil.copytree(synthetic, camp)
    run = camp / "runs" / "A-000"
    (run / "failed.json").write_text(json.dumps({"run_id": "A-000", "status": "timeout", "returncode": -9,
                                                 "reason": "killed after the timeout of 0.01 s"}))
    kind = kinds.get("bench")
    complete, failed, _ = find_runs(camp, kind)
    assert run not in complete and [f["status"] for f in failed] == ["timeout"]
    assert not _done(kind, run)
    code, out, err = cli("summary", "--json", str(camp))
    assert code == 0, err
    rows = {r["config"]: r["runs"] for r in json.loads(out)}
    assert rows == {"A": 2, "B": 3}


def test_short_timeout_is_warned_about(cli, build, tmp_path, monkeypatch):
    """--timeout 0.05: no honest lower bound of an MPI job's start exists, so it is not refused, but
    said before anything starts; the runs it kills are failed, and summary refuses a campaign of
    them."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("run", "--timeout", "0.05", "--mpiruns", "1", "--nrep", "2", "--msizes", "8", "-o", "o",
                         "--quiet")
    assert "warning: timeout_s 0.05 s leaves little room" in err
    assert code == 2 and "1 of 1 mpiruns failed" in err
    code, _, err = cli("summary", "o")
    assert code == 2 and "has no complete runs" in err


# -- non-UTF-8 locales ---------------------------------------------------------------------------

@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"},
                                 {"LANG": "POSIX", "LC_ALL": "", "PYTHONIOENCODING": "ascii:strict"}],
                         ids=["pythonioencoding-ascii", "lc-all-c", "posix-strict"])
@pytest.mark.parametrize("argv", [["summary"], ["summary", "--markdown"], ["compare"], ["compare", "--markdown"]],
                         ids=["summary", "summary-markdown", "compare", "compare-markdown"])
def test_non_utf8_locale(env, argv, synthetic):
    """A terminal that cannot encode µ: on main a UnicodeEncodeError traceback; now µs reads as us."""
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", *argv, str(synthetic)], capture_output=True,
                       env=e, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode(errors="replace")
    assert b"us" in r.stdout and "µ".encode() not in r.stdout


# -- the core itself (what a user of mpitempo-bench under mpirun sees) ---------------------------

CORE_CASES = {
    "core-window-with-barrier": (["--scheme", "barrier", "--window", "20us"],
                                 "--window does not apply to scheme 'barrier' (it applies to window)"),
    "core-no-rt-adapt-with-window": (["--scheme", "window", "--no-rt-adapt"],
                                     "--no-rt-adapt does not apply to scheme 'window' (it applies to roundtime)"),
    "core-msizes-twice": (["--msizes", "8,1K,1024"], "invalid --msizes '8,1K,1024': 1024 B is listed twice"),
}


@pytest.mark.parametrize("case", list(CORE_CASES))
def test_core_nonsense(case, build):
    argv, expected = CORE_CASES[case]
    r = subprocess.run([build.binary("mpitempo-bench"), "--check-args", *argv], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and expected in r.stderr, r.stderr


@pytest.mark.parametrize("argv", [["--scheme", "barrier", "--inner", "10", "--rt-slack", "2", "--time-slice", "1s",
                                   "--window-chunk", "10"],
                                  ["--scheme", "loop", "--inner", "5"], ["--scheme", "roundtime", "--no-rt-adapt"]],
                         ids=["defaults-passed-explicitly", "loop-inner", "roundtime-no-adapt"])
def test_core_scheme_options_that_apply(argv, build):
    """Defaults passed explicitly (as the runner passes every value) and options of the scheme itself."""
    r = subprocess.run([build.binary("mpitempo-bench"), "--check-args", *argv], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_docs_rows():
    doc = (ROOT / "docs" / "reliability.md").read_text()
    for case in CASES:
        assert f"`tests/py/test_nonsense.py::test_nonsense[{case}]`" in doc, f"no row for case {case}"
    for case in CORE_CASES:
        assert f"`tests/py/test_nonsense.py::test_core_nonsense[{case}]`" in doc, f"no row for case {case}"
