"""Error texts: one line that names the bad value and says what is allowed.

A representative set of bad inputs from every layer (click options, campaign keys, size and
duration lists, kinds, the C core's parser reached through the runner's dry run, resume). Each
case gives the text of the bad value as the user typed it and a phrase of what is allowed; the
error must be exactly one line on stderr starting with "mpitempo", hold both, not repeat the same
quoted value twice, and leave nothing behind. Rows of docs/reliability.md name these cases.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

# id -> (files {name: text}, argv, bad value as it must appear, phrase of what is allowed)
CASES = {
    "msizes-empty": ({}, ["run", "--msizes", "", "-o", "o"], "''", "give at least one size in bytes, e.g. 8,1K"),
    "msizes-comma": ({}, ["run", "--msizes", ",", "-o", "o"], "','", "give sizes in bytes such as 8,1K"),
    "msizes-unit": ({}, ["run", "--msizes", "8x", "-o", "o"], "'8x'", "optionally with K, M or G"),
    "ops-empty": ({}, ["run", "--ops", "", "-o", "o"], "--ops ''", "give one or more comma-separated items"),
    "ops-empty-item": ({}, ["run", "--ops", "allreduce,,bcast", "-o", "o"], "'allreduce,,bcast'",
                       "two commas in a row"),
    "delay-empty-item": ({}, ["run", "--ops", "delay", "--delay", "1s,,2s", "-o", "o"], "'1s,,2s'",
                         "two commas in a row"),
    "launcher-empty": ({}, ["run", "--launcher", "", "-o", "o"], "launcher ''",
                       "'mpiexec', 'srun' or a command template with {cmd}"),
    "toml-mpicc-blank": ({"c.toml": 'mpicc = " "\n'}, ["run", "c.toml", "-o", "o"], "mpicc ' '",
                         "the path or name of an MPI compiler wrapper"),
    "npp-sweep-word": ({}, ["pingpong", "--npp-sweep", "1,x"], "'x'", "integers >= 1, e.g. 1,2,4,8"),
    "clocks-wait-word": ({}, ["clocks", "--wait", "0,soon"], "'soon'", "seconds >= 0, e.g. 0,1,10"),
    # a long list of ops: the close matches and where every op is listed (the full list when short)
    "imbalance-op-unknown": ({}, ["imbalance", "--op", "allreduse"], "'allreduse'",
                             "did you mean allreduce, iallreduce or allreduce_init?; every op: "
                             "$(mpitempo which mpitempo-bench) --list"),
    "run-op-unknown": ({}, ["run", "--ops", "osu_bww", "-o", "o"], "'osu_bww'",
                       "did you mean osu_bw, osu_bibw or osu_put_bw?; every op: $(mpitempo which mpitempo-bench) "
                       "--list; OSU and IMB names: docs/methods.md#profiles-like-osu-and-like-imb"),
    "run-like-unknown": ({}, ["run", "--like", "osx", "-o", "o"], "'osx'", "allowed: osu, imb"),
    "run-like-contradicted": ({}, ["run", "--like", "imb", "--ops", "IMB:Uniband", "--bw-window", "64", "-o", "o"],
                              "--bw-window 64", "allowed with --like imb: --bw-window 256 or leave it out"),
    "sync-unknown": ({}, ["run", "--sync", "hca9", "-o", "o"], "'hca9'", "allowed: skampi, hoefler"),
    "sync-param": ({}, ["run", "--sync", "skampi:nope=1", "-o", "o"], "'nope'", "allowed: pp, offset"),
    "scheme-unknown": ({}, ["run", "--scheme", "windows", "-o", "o"], "'windows'", "allowed: barrier, loop"),
    "window-no-unit": ({}, ["run", "--scheme", "window", "--window", "20", "-o", "o"], "'20'",
                       "give a unit (s, ms, us or ns)"),
    "nrep-zero": ({}, ["run", "--nrep", "0", "-o", "o"], "--nrep 0", "an integer >= 1"),
    "root-too-large": ({}, ["run", "--root", "5", "-o", "o"], "root 5", "allowed: 0..1"),
    "datatype-too-big": ({}, ["run", "--datatype", "float", "--msizes", "3", "-o", "o"], "message size 3 B",
                         "one element of datatype 'float' (4 B"),
    "which-unknown": ({}, ["which", "mpitempo-bnech"], "'mpitempo-bnech'", "choose from mpitempo-bench"),
    "tune-op-unknown": ({}, ["tune", "--ops", "allreduse"], "'allreduse'", "allowed: barrier, bcast"),
    "variants-typo": ({}, ["imbalance", "--variants", "atuo"], "'atuo'", "did you mean 'auto'?"),
    # the options of the op families: checked by the core's dry run before anything is created
    "bw-window-zero": ({}, ["run", "--ops", "bw", "--bw-window", "0", "-o", "o"], "--bw-window 0",
                       "an integer >= 1 and <= 65536"),
    "bw-window-memory": ({}, ["run", "--ops", "bw", "--msizes", "1G", "--bw-window", "65536", "-o", "o"],
                         "--bw-window 65536 x message size 1073741824 B", "use a smaller window or message size"),
    "rma-sync-unknown": ({}, ["run", "--ops", "put", "--rma-sync", "lok", "-o", "o"], "'lok'",
                         "allowed: fence, lock, flush, lock_all, pscw, flush_local"),
    "rma-win-unknown": ({}, ["run", "--ops", "get", "--rma-win", "shared", "-o", "o"], "'shared'",
                        "allowed: create, allocate, dynamic"),
    "rma-window-scheme": ({}, ["run", "--ops", "put", "--scheme", "window", "--rma-win", "create", "-o", "o"],
                          "--rma-win create", "use --rma-win allocate, --rma-sync fence or pscw"),
    "rma-window-scheme-flush-local": ({}, ["run", "--ops", "get", "--scheme", "window", "--rma-sync", "flush_local",
                                           "--rma-win", "dynamic", "-o", "o"],
                                      "--rma-sync flush_local", "use --rma-win allocate, --rma-sync fence or pscw"),
    "rma-epochs-passive": ({}, ["run", "--ops", "put", "--rma-sync", "lock", "--rma-epochs", "2", "-o", "o"],
                           "--rma-epochs 2", "needs --rma-sync fence or pscw"),
    "rma-epochs-range": ({}, ["run", "--ops", "put", "--rma-sync", "fence", "--rma-epochs", "3", "-o", "o"],
                         "--rma-epochs", "3"),
    "put-bibw-passive": ({}, ["run", "--ops", "put_bibw", "--rma-sync", "lock", "-o", "o"], "'put_bibw'",
                         "needs --rma-sync fence or pscw"),
    "vcounts-unknown": ({}, ["run", "--ops", "gatherv", "--vcounts", "skew", "-o", "o"], "'skew'",
                        "allowed: uniform, skewed"),
    "in-place-skewed-alltoallv": ({}, ["run", "--ops", "alltoallv", "--in-place", "--vcounts", "skewed", "-o", "o"],
                                  "--vcounts skewed", "use --vcounts uniform with --in-place"),
    "overlap-compute-zero": ({}, ["run", "--ops", "iallreduce_overlap", "--overlap-compute", "0", "-o", "o"],
                             "'0'", "auto or a duration > 0 and <= 10s"),
    "neighbor-topo-unknown": ({}, ["run", "--ops", "neighbor_alltoall", "--neighbor-topo", "torus", "-o", "o"],
                              "'torus'", "allowed: cart, graph, ring"),
    "op-option-unused": ({}, ["run", "--ops", "allreduce", "--rma-sync", "lock", "-o", "o"], "--rma-sync",
                         "it applies to put, get"),
    "redop-unused": ({}, ["run", "--ops", "bcast", "--redop", "max", "-o", "o"], "--redop",
                     "it applies to reduce, allreduce"),
    "delay-unused": ({}, ["run", "--ops", "allreduce", "--delay", "7us", "-o", "o"], "--delay",
                     "it applies to delay"),
    "pairs-odd-ranks": ({}, ["run", "--ops", "mbw_mr", "-n", "3", "-o", "o"], "op 'mbw_mr'",
                        "needs an even number of ranks, but the job has 3"),
    "resume-flag-differs": ("camp", ["run", "--resume", "camp", "--nrep", "5"], "'nrep = 5' now",
                            "resume without changing the campaign"),
}


@pytest.fixture
def small_campaign(tmp_path):
    from mpitempo.io.synthetic import make_campaign

    return make_campaign(tmp_path / "camp", configs={"A": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=20)


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("case", list(CASES))
def test_error_text(case, cli, build, tmp_path, monkeypatch, small_campaign):
    files, argv, bad, allowed = CASES[case]
    monkeypatch.chdir(tmp_path)
    if isinstance(files, dict):
        for name, text in files.items():
            (tmp_path / name).write_text(text)
    before = _listing(tmp_path)
    code, out, err = cli(*argv)
    assert code == 2, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("mpitempo"), err
    assert bad in err, f"the error does not name the bad value {bad!r}: {err}"
    assert allowed in err, f"the error does not say what is allowed ({allowed!r}): {err}"
    quoted = re.findall(r"'[^']{3,}'", err)
    assert not [q for q in set(quoted) if quoted.count(q) > 1 and q != "''"], f"a value is repeated: {err}"
    assert _listing(tmp_path) == before, "something was created before the error"


CORE_CASES = {
    # the C core's own parser (what the runner's dry run and a user of the executable see)
    "core-list-empty": (["--ops="], "--ops ''", "give one or more comma-separated items"),
    "core-list-empty-item": (["--msizes", "8,,16"], "'8,,16'", "two commas in a row"),
    "core-sync-empty": (["--sync", "hca3", "--sync="], "--sync ''", "expected a value"),
    "core-size-suffix": (["--msizes", "8Q"], "'8Q'", "K, M or G"),
    "core-like-unknown": (["--like", "osx"], "--like 'osx'", "allowed: osu, imb"),
}


@pytest.mark.parametrize("case", list(CORE_CASES))
def test_core_error_text(case, build):
    argv, bad, allowed = CORE_CASES[case]
    r = subprocess.run([build.binary("mpitempo-bench"), "--check-args", *argv], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("mpitempo-bench: error: ") and bad in r.stderr and allowed in r.stderr, r.stderr


def test_docs_rows():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    for case in CASES:
        assert f"`tests/py/test_error_texts.py::test_error_text[{case}]`" in doc, f"no row for case {case}"
    for case in CORE_CASES:
        assert f"`tests/py/test_error_texts.py::test_core_error_text[{case}]`" in doc, f"no row for case {case}"


def test_which_help_names_every_executable(cli):
    from mpitempo.build import BINARIES

    code, out, _ = cli("which", "--help")
    flat = "".join(out.split())   # click may break a line after a hyphen
    assert code == 0 and all(b in flat for b in BINARIES), out
