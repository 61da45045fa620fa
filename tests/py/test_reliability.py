"""Reliability: every bad input is a one-line error before anything starts; damaged data is refused.

Each case of CASES is one row of the table in docs/reliability.md (test_docs_table_matches_tests
checks that every row names a test that exists and that every case has its row). A case runs
`mpitempo ARGS` in-process in an empty working directory and requires: a non-zero exit, exactly one
line on stderr that starts with "mpitempo" and holds the expected text, no traceback, and no file
or directory left behind that was not there before (nothing is created before the checks pass).
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# id -> (files to write {name: text}, argv, expected text in the one-line error)
# "{camp}" in argv is a sealed synthetic campaign (meta.json records the digests of its data files),
# "{camp}:MUTATION" one damaged by the named mutation in MUTATIONS first.
CASES = {
    # -- campaign files (TOML) -----------------------------------------------------------------------
    "toml-env-string": ({"c.toml": 'env = "X=1"\n'}, ["run", "c.toml", "-o", "out"], "invalid env 'X=1': expected a table"),
    "toml-config-env-string": ({"c.toml": '[[config]]\nname = "a"\nenv = "X=1"\n'}, ["run", "c.toml", "-o", "out"],
                               "invalid env in [[config]] 'a'"),
    "toml-mpicc-number": ({"c.toml": "mpicc = 42\n"}, ["run", "c.toml", "-o", "out"], "invalid mpicc 42: expected a string"),
    "toml-launcher-number": ({"c.toml": "launcher = 5\n"}, ["run", "c.toml", "-o", "out"], "invalid launcher 5"),
    "toml-env-name-equals": ({"c.toml": 'env = { "A=B" = "1" }\n'}, ["run", "c.toml", "-o", "out"],
                             "invalid environment variable name 'A=B'"),
    "toml-env-name-nul": ({"c.toml": 'env = { "A\\u0000B" = "1" }\n'}, ["run", "c.toml", "-o", "out"],
                          "invalid environment variable name"),
    "toml-env-value-nul": ({"c.toml": 'env = { A = "x\\u0000y" }\n'}, ["run", "c.toml", "-o", "out"],
                           "invalid value of env A"),
    "toml-env-value-table": ({"c.toml": "env = { A = { b = 1 } }\n"}, ["run", "c.toml", "-o", "out"],
                             "invalid value of env A"),
    "toml-description-number": ({"c.toml": '[[config]]\nname = "a"\ndescription = 3\n'}, ["run", "c.toml", "-o", "out"],
                                "invalid description in [[config]] 'a' 3"),
    "toml-config-name-number": ({"c.toml": "[[config]]\nname = 7\n"}, ["run", "c.toml", "-o", "out"],
                                "invalid name of [[config]] #1 7"),
    "toml-np-duplicate": ({"c.toml": "np = [2, 2]\n"}, ["run", "c.toml", "-o", "out"], "invalid np [2, 2]: 2 is listed twice"),
    "toml-np-empty": ({"c.toml": "np = []\n"}, ["run", "c.toml", "-o", "out"], "invalid np []"),
    "toml-np-zero": ({"c.toml": "np = 0\n"}, ["run", "c.toml", "-o", "out"], "invalid np 0"),
    "toml-np-word": ({"c.toml": 'np = "two"\n'}, ["run", "c.toml", "-o", "out"], "invalid np 'two'"),
    "toml-mpiruns-zero": ({"c.toml": "mpiruns = 0\n"}, ["run", "c.toml", "-o", "out"], "invalid mpiruns 0"),
    "toml-timeout-negative": ({"c.toml": "timeout_s = -1\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s '-1'"),
    "toml-timeout-inf": ({"c.toml": "timeout_s = inf\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s 'inf'"),
    "toml-timeout-nan": ({"c.toml": "timeout_s = nan\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s 'nan'"),
    "toml-seed-negative": ({"c.toml": "seed = -1\n"}, ["run", "c.toml", "-o", "out"], "invalid seed -1"),
    "toml-order-unknown": ({"c.toml": 'order = "sideways"\n'}, ["run", "c.toml", "-o", "out"], "invalid order 'sideways'"),
    "toml-unknown-key": ({"c.toml": "nrepp = 5\n"}, ["run", "c.toml", "-o", "out"], "unknown key 'nrepp'"),
    "toml-config-unknown-key": ({"c.toml": '[[config]]\nname = "a"\nmpiccc = "x"\n'}, ["run", "c.toml", "-o", "out"],
                                "unknown key 'mpiccc' in [[config]] #1"),
    "toml-config-no-name": ({"c.toml": "[[config]]\nnrep = 5\n"}, ["run", "c.toml", "-o", "out"], "[[config]] #1 has no name"),
    "toml-config-duplicate": ({"c.toml": '[[config]]\nname = "a"\n[[config]]\nname = "a"\n'},
                              ["run", "c.toml", "-o", "out"], "duplicate configuration name 'a'"),
    "toml-config-bad-name": ({"c.toml": '[[config]]\nname = "a b"\n'}, ["run", "c.toml", "-o", "out"],
                             "invalid configuration name 'a b'"),
    "toml-config-not-table": ({"c.toml": 'config = "x"\n'}, ["run", "c.toml", "-o", "out"], "invalid 'config'"),
    "toml-syntax": ({"c.toml": "ops = [allreduce\n"}, ["run", "c.toml", "-o", "out"], "is not valid TOML"),
    "toml-missing": ({}, ["run", "nope.toml", "-o", "out"], "campaign file 'nope.toml' not found"),
    "toml-kind-unknown": ({"c.toml": 'kind = "nope"\n'}, ["run", "c.toml", "-o", "out"], "unknown kind 'nope'"),
    "toml-name-bad": ({"c.toml": 'name = "a b"\n'}, ["run", "c.toml", "-o", "out"], "invalid campaign name 'a b'"),
    "toml-nrep-word": ({"c.toml": 'nrep = "many"\n'}, ["run", "c.toml", "-o", "out"], "invalid nrep 'many'"),
    "toml-window-no-unit": ({"c.toml": 'scheme = "window"\nwindow = 20\n'}, ["run", "c.toml", "-o", "out"],
                            "invalid window '20': give a unit"),
    # -- flags of run --------------------------------------------------------------------------------
    "flag-window-no-unit": ({}, ["run", "--scheme", "window", "--window", "20", "-o", "out"],
                            "invalid --window '20': give a unit (s, ms, us or ns), e.g. 20s or 20us"),
    "flag-window-zero": ({}, ["run", "--scheme", "window", "--window", "0s", "-o", "out"], "invalid --window '0s'"),
    "flag-time-slice-zero": ({}, ["run", "--scheme", "roundtime", "--time-slice", "0", "-o", "out"],
                             "invalid --time-slice '0'"),
    "flag-time-slice-inf": ({}, ["run", "--scheme", "roundtime", "--time-slice", "infs", "-o", "out"],
                            "invalid --time-slice 'infs'"),
    "flag-resync-age-negative": ({}, ["run", "--sync", "hca3", "--resync-age", "-1s", "-o", "out"],
                                 "invalid --resync-age '-1s'"),
    "flag-rt-slack-inf": ({}, ["run", "--rt-slack", "inf", "-o", "out"], "invalid --rt-slack inf"),
    "flag-rt-slack-nan": ({}, ["run", "--rt-slack", "nan", "-o", "out"], "invalid --rt-slack nan"),
    "flag-delay-overflow": ({}, ["run", "--ops", "delay", "--delay", "1e10s", "-o", "out"],
                            "invalid --delay '1e10s': longer than the largest duration"),
    "flag-delay-no-unit": ({}, ["run", "--ops", "delay", "--delay", "20", "-o", "out"], "invalid --delay '20': give a unit"),
    "flag-delay-over-an-hour": ({}, ["run", "--ops", "delay", "--delay", "2h", "-o", "out"], "invalid --delay '2h'"),
    "plan-delay-exceeds-timeout": ({}, ["run", "--ops", "delay", "--delay", "100s", "--timeout", "60", "-o", "out"],
                                   "needs at least 11000 s (1 delay experiment(s) x 110 calls of 100 s), more than "
                                   "the timeout of 60 s"),
    "plan-roundtime-exceeds-timeout": ({}, ["run", "--scheme", "roundtime", "--time-slice", "10s", "--msizes", "8-1K",
                                            "--timeout", "30", "-o", "out"],
                                       "needs at least 80 s (8 experiments x time slice 10 s)"),
    "plan-window-exceeds-timeout": ({}, ["run", "--scheme", "window", "--window", "1s", "--nrep", "100", "--msizes", "8",
                                         "--timeout", "50", "-o", "out"], "needs at least 100 s (1 experiments x 100 windows"),
    "flag-timeout-zero": ({}, ["run", "--timeout", "0", "-o", "out"], "invalid timeout_s '0.0'"),
    "flag-timeout-inf": ({}, ["run", "--timeout", "inf", "-o", "out"], "invalid timeout_s 'inf'"),
    "core-sync-unknown": ({}, ["run", "--sync", "hca99", "-o", "out"], "unknown clock-sync algorithm 'hca99'"),
    "core-sync-malformed": ({}, ["run", "--sync", "hca3:fitpts=", "-o", "out"], "hca3:fitpts="),
    "core-sync-hier-levels": ({}, ["run", "--sync", "h2:hca3", "-o", "out"], "h2:hca3"),
    "core-barrier-skew-rank": ({}, ["run", "--barrier-skew", "5:20us", "-o", "out"], "rank 5 is not in the job"),
    "core-msize-too-large": ({}, ["run", "--msizes", "16G", "-o", "out"], "too large for an int count"),
    "core-msize-below-datatype": ({}, ["run", "--msizes", "2", "--datatype", "double", "-o", "out"],
                                  "smaller than one element of datatype 'double'"),
    "core-cache-unknown": ({}, ["run", "--cache", "tepid", "-o", "out"], "tepid"),
    "core-sim-offsets": ({}, ["run", "--sim-offsets", "x", "-o", "out"], "invalid simulated clock offsets 'x'"),
    "flag-op-unknown": ({}, ["run", "--ops", "allreduce,foo", "-o", "out"], "unknown op 'foo'"),
    "flag-op-twice": ({}, ["run", "--ops", "bcast,bcast", "-o", "out"], "listed twice"),
    "flag-scheme-unknown": ({}, ["run", "--scheme", "nosuch", "-o", "out"], "unknown scheme 'nosuch'"),
    "flag-timer-unknown": ({}, ["run", "--timer", "sundial", "-o", "out"], "unknown timer 'sundial'"),
    "flag-root-outside-job": ({}, ["run", "--ops", "bcast", "--root", "5", "-o", "out"], "invalid root 5"),
    "flag-np-zero": ({}, ["run", "-n", "0", "-o", "out"], "0"),
    "flag-mpiruns-zero": ({}, ["run", "--mpiruns", "0", "-o", "out"], "invalid mpiruns 0"),
    "flag-msizes-zero": ({}, ["run", "--msizes", "0", "-o", "out"], "invalid size '0'"),
    "flag-op-needs-two-ranks": ({}, ["run", "--ops", "exscan", "-n", "1", "-o", "out"], "needs at least 2 ranks"),
    "launcher-no-cmd": ({}, ["run", "--launcher", "mpiexec -n {np}", "-o", "out"], "placeholder {cmd}"),
    "launcher-not-found": ({}, ["run", "--launcher", "nosuchprog {cmd}", "-o", "out"], "launcher 'nosuchprog' not found"),
    "launcher-unbalanced-quote": ({}, ["run", "--launcher", "mpiexec -n {np} 'x {cmd}", "-o", "out"],
                                  "No closing quotation"),
    "sbatch-args-unbalanced-quote": ({}, ["run", "--sbatch", "--sbatch-args", "'-t 1", "-o", "out"],
                                     "invalid --sbatch-args ''-t 1': No closing quotation"),
    "outdir-in-proc": ({}, ["run", "-o", "/proc/mpitempo-x"], "cannot create the campaign directory '/proc/mpitempo-x'"),
    "outdir-below-file": ({"file.txt": "x"}, ["run", "-o", "file.txt/sub"],
                          "cannot create the campaign directory 'file.txt/sub': Not a directory"),
    "outdir-exists": ({"out/keep": "x"}, ["run", "-o", "out"], "already exists"),
    "resume-and-outdir": ({}, ["run", "--resume", "a", "-o", "out"], "give either -o/--outdir or --resume"),
    "resume-not-campaign": ({"d/x": "x"}, ["run", "--resume", "d"], "no campaign.toml"),
    "run-option-of-other-kind": ({"c.toml": 'kind = "clocks"\n'}, ["run", "c.toml", "--nrep", "5", "-o", "out"],
                                 "does not apply to a campaign of kind 'clocks'"),
    # -- other commands that launch ----------------------------------------------------------------
    "imbalance-variants-typo": ({}, ["imbalance", "--variants", "atuo", "-o", "out"], "did you mean 'auto'?"),
    "imbalance-variants-bad-setting": ({}, ["imbalance", "--variants", "x:NOVALUE", "-o", "out"], "expected VAR=VALUE"),
    "clocks-plot-unwritable": ({}, ["clocks", "--plot", "/proc/mpitempo-x.png", "--algorithms", "skampi"],
                               "cannot write the plot '/proc/mpitempo-x.png'"),
    "clocks-algorithm-unknown": ({}, ["clocks", "--algorithms", "hca99"], "hca99"),
    "clocks-wait-inf": ({}, ["clocks", "--wait", "inf"], "invalid --wait 'inf'"),
    "pingpong-outdir-in-proc": ({}, ["pingpong", "-o", "/proc/mpitempo-x", "--msizes", "8"],
                                "cannot create the campaign directory '/proc/mpitempo-x'"),
    # -- reading campaigns -------------------------------------------------------------------------
    "summary-tukey-k-inf": ({}, ["summary", "--tukey-k", "inf", "{camp}"], "invalid --tukey-k inf"),
    "summary-tukey-k-zero": ({}, ["summary", "--tukey-k", "0", "{camp}"], "invalid --tukey-k 0"),
    "summary-cut-coef-one": ({}, ["summary", "--filter", "cutcoef", "--cut-coef", "1", "{camp}"], "invalid --cut-coef 1"),
    "summary-same-campaign-twice": ({}, ["summary", "{camp}", "{camp}"], "is given twice: its runs would be counted twice"),
    "summary-same-campaign-two-paths": ({}, ["summary", "{camp}", "{camp}/"], "is given twice"),
    "compare-same-campaign-twice": ({}, ["compare", "{camp}", "{camp}"], "is given twice"),
    "report-same-campaign-twice": ({}, ["report", "{camp}", "{camp}", "-o", "r.html"], "is given twice"),
    "summary-not-campaign": ({"d/x": "x"}, ["summary", "d"], "is not a campaign directory"),
    "summary-truncated-at-line": ({}, ["summary", "{camp}:truncate"], "measurements.csv has 11 lines, meta.json records"),
    "summary-header-only": ({}, ["summary", "{camp}:header_only"], "measurements.csv has 1 lines"),
    "summary-edited-value": ({}, ["summary", "{camp}:edit_value"], "has CRC-32"),
    "summary-unsealed-header-only": ({}, ["summary", "{camp}:unsealed_header_only"], "no measurement rows"),
    "summary-nprocs-mismatch": ({}, ["summary", "{camp}:nprocs"], "row(s) have nprocs 3, but its meta.json says 2"),
    "summary-nan-runtime": ({}, ["summary", "--json", "{camp}:nan"], "NaN or infinite runtime_s"),
    "summary-negative-runtime": ({}, ["summary", "{camp}:negative"], "negative runtime_s"),
    "report-nan-runtime": ({}, ["report", "{camp}:nan", "-o", "r.html"], "NaN or infinite runtime_s"),
    "summary-bad-csv-line": ({}, ["summary", "{camp}:bad_line"], "measurements.csv:5:"),
    "summary-meta-not-object": ({}, ["summary", "{camp}:meta_list"], "is not a JSON object"),
    "summary-meta-future-version": ({}, ["summary", "{camp}:meta_future"], "format_version 99"),
    "info-diff-meta-not-json": ({}, ["info", "--diff", "{camp}:meta_garbage"], "is not valid JSON"),
    "export-parquet-unwritable": ({}, ["export", "{camp}", "--parquet", "/proc/mpitempo-x"], "cannot write --parquet"),
    "export-osu-below-file": ({"file.txt": "x"}, ["export", "{camp}", "--osu", "file.txt/x"], "cannot write --osu"),
    "report-output-unwritable": ({}, ["report", "{camp}", "-o", "/proc/mpitempo-x.html"], "cannot write the report"),
}


def _seal(run: Path) -> None:
    """Record the digests of a run's data file in its meta.json, as the core does."""
    from mpitempo.io.integrity import digest

    meta = json.loads((run / "meta.json").read_text())
    n, lines, crc = digest(run / "measurements.csv")
    meta["files"] = {"measurements.csv": {"bytes": n, "lines": lines, "crc32": crc}}
    (run / "meta.json").write_text(json.dumps(meta))


def _rewrite_csv(run: Path, fn, seal: bool = True) -> None:
    p = run / "measurements.csv"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(fn(lines)))
    if seal:
        _seal(run)


def _same_length_edit(line: str) -> str:
    """One digit of the runtime changed: same bytes, same lines, another value."""
    parts = line.split(",")
    v = parts[6]
    i = next(k for k, ch in enumerate(v) if ch in "123456789")
    parts[6] = v[:i] + ("2" if v[i] != "2" else "3") + v[i + 1:]
    return ",".join(parts)


def _field(line: str, col: int, value: str) -> str:
    parts = line.rstrip("\n").split(",")
    parts[col] = value
    return ",".join(parts) + "\n"


MUTATIONS = {
    "truncate": lambda r: _rewrite_csv(r, lambda ls: ls[:11], seal=False),
    "header_only": lambda r: _rewrite_csv(r, lambda ls: ls[:1], seal=False),
    "edit_value": lambda r: _rewrite_csv(r, lambda ls: ls[:5] + [_same_length_edit(ls[5])] + ls[6:], seal=False),
    "unsealed_header_only": lambda r: (_rewrite_csv(r, lambda ls: ls[:1], seal=False), _unseal(r)),
    "nprocs": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 2, "3")] + ls[4:]),
    "nan": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 6, "nan")] + ls[4:]),
    "negative": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 6, "-1e-06")] + ls[4:]),
    "bad_line": lambda r: _rewrite_csv(r, lambda ls: ls[:4] + ["allreduce,8,2\n"] + ls[5:]),
    "meta_list": lambda r: (r / "meta.json").write_text("[1, 2]"),
    "meta_future": lambda r: (r / "meta.json").write_text('{"format_version": 99}'),
    "meta_garbage": lambda r: (r / "meta.json").write_bytes(b"{\xff\xfe not json"),
}


def _unseal(run: Path) -> None:
    meta = json.loads((run / "meta.json").read_text())
    meta.pop("files", None)
    (run / "meta.json").write_text(json.dumps(meta))


@pytest.fixture(scope="session")
def sealed_campaign(tmp_path_factory):
    from mpitempo.io.synthetic import make_campaign

    root = make_campaign(tmp_path_factory.mktemp("sealed") / "camp", configs={"A": 1.0}, runs=3,
                         ops=("allreduce",), msizes=(8,), nrep=20)
    for run in sorted((root / "runs").iterdir()):
        _seal(run)
    return root


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, cli, build, tmp_path, monkeypatch, sealed_campaign):
    files, argv, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    args = []
    for a in argv:
        m = re.match(r"^\{camp\}(?::(\w+))?(/?)$", a)
        if m:
            dest = tmp_path / f"camp-{m.group(1) or 'ok'}"
            if not dest.exists():
                shutil.copytree(sealed_campaign, dest)
                if m.group(1):
                    MUTATIONS[m.group(1)](dest / "runs" / "A-001")
            a = str(dest.name) + m.group(2)
        args.append(a)
    before = _listing(tmp_path)
    code, out, err = cli(*args)
    assert code != 0, (out, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("mpitempo"), err
    assert expected in err, err
    assert _listing(tmp_path) == before, "something was created before the error"


# -- the table in docs/reliability.md ------------------------------------------------------------------

def _doc_rows() -> list[list[str]]:
    rows = []
    for line in (ROOT / "docs" / "reliability.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| #") and not line.startswith("|--"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _test_exists(ref: str) -> bool:
    """ref: tests/DIR/FILE.py::NAME or tests/DIR/FILE.py::NAME[param]"""
    m = re.match(r"^`?(tests/[\w/]+\.py)::(\w+)(?:\[([^\]]+)\])?`?$", ref)
    if not m:
        return False
    path = ROOT / m.group(1)
    if not path.exists():
        return False
    text = path.read_text()
    if not re.search(rf"^(async )?def {m.group(2)}\(", text, re.M):
        return False
    if m.group(3) is None:
        return True
    if path.name == "test_reliability.py" and m.group(2) == "test_bad_input":
        return m.group(3) in CASES
    return m.group(3) in text   # a parametrize id or value of that module


def test_docs_table_matches_tests():
    rows = _doc_rows()
    assert len(rows) >= 80, len(rows)
    refs = [r[-1] for r in rows]
    missing = [r for r in refs if not _test_exists(r)]
    assert not missing, f"rows of docs/reliability.md name tests that do not exist: {missing}"
    for case in CASES:
        assert f"`tests/py/test_reliability.py::test_bad_input[{case}]`" in refs, f"no row for case {case}"
    assert len(set(refs)) == len(refs), "two rows name the same test"


def test_srun_launcher_without_slurm(cli, build, tmp_path, monkeypatch):
    """srun is installed but no Slurm controller answers (sinfo fails), outside an allocation: the
    campaign is refused before its directory exists, instead of failing every mpirun."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("srun", "sinfo"):
        (fake / name).write_text("#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("run", "--launcher", "srun", "-o", "out", "--quiet")
    assert code == 2 and err.count("\n") == 1
    assert "launcher 'srun' needs Slurm, but no Slurm controller answers here" in err
    assert not (tmp_path / "out").exists()
