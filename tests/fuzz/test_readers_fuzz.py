"""Fuzzing the readers of a campaign directory (Python, hypothesis), beside the C fuzzers.

Property: whatever bytes a campaign directory holds in meta.json, measurements.csv,
campaign.toml, failed.json or perrank.bin, reading it ends in a valid result or in one clean
MtError line (exit code 2 through the command line), never in another exception.

Inputs are random bytes and mutations of valid files (a byte flipped, a cut, a splice, deep
nesting, NaN, other encodings). The test suite runs the profile "fuzz-ci" (a bounded number of
examples: a few seconds per target); `HYPOTHESIS_PROFILE=fuzz-long pytest tests/fuzz` runs longer.
A failure found becomes a case of tests/py/test_nonsense.py.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpitempo.errors import MtError

settings.register_profile("fuzz-ci", max_examples=60, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("fuzz-long", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "fuzz-ci")
fuzz = settings.get_profile(PROFILE if PROFILE.startswith("fuzz") else "fuzz-ci")

VALID_META = json.dumps({"format_version": 1, "config": "A", "run_index": 0, "nprocs": 2,
                         "mpi": {"library": "X"}, "scheme": {"name": "barrier"},
                         "ranks": [{"rank": 0, "host": "h"}, {"rank": 1, "host": "h"}],
                         "experiments": [{"exp": 0, "op": "allreduce", "msize": 8}]}).encode()
VALID_TOML = (b'name = "c"\nnp = [2, 4]\nmpiruns = 3\nops = ["allreduce", "bcast"]\nmsizes = "8-1K"\n'
              b'[[config]]\nname = "a"\nenv = { X = "1" }\n[[config]]\nname = "b"\nnrep = 5\n')
VALID_CSV = (b"op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s\n"
             + b"".join(b"allreduce,8,2,barrier,0,%d,%s,1,%s\n" % (i, b"1.5e-06", b"1.4e-06") for i in range(8)))

SPECIALS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"[" * 5000, b"{" * 3000, b"\xff\xfe", b"\x00",
            b"\xef\xbb\xbf", b'"', b"\\", b"\n", b",", b"null", b"[]", b"{}", b'"x"', b"-1", b"99999999999999999999"]


def mutated(valid: bytes):
    """Random bytes, or the valid file with random edits."""
    edit = st.tuples(st.integers(0, len(valid)), st.integers(0, 40),
                     st.one_of(st.binary(max_size=24), st.sampled_from(SPECIALS)))

    def apply(edits):
        b = valid
        for pos, cut, ins in edits:
            pos = min(pos, len(b))
            b = b[:pos] + ins + b[pos + cut:]
        return b

    return st.one_of(st.binary(max_size=400), st.lists(edit, min_size=1, max_size=4).map(apply),
                     st.sampled_from([valid.decode("utf-8").encode(e) for e in ("utf-16", "utf-32", "latin-1")]))


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    from mpitempo.io.synthetic import make_campaign

    return make_campaign(tmp_path_factory.mktemp("fz") / "camp", configs={"A": 1.0}, runs=2, ops=("allreduce",),
                         msizes=(8,), nrep=8)


@fuzz
@given(data=mutated(VALID_META))
def test_meta_json(tmp_path_factory, data):
    from mpitempo.io.rundir import FACTORS, load_meta

    p = tmp_path_factory.mktemp("m") / "meta.json"
    p.write_bytes(data)
    try:
        meta = load_meta(p)
    except MtError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(meta, dict)
    for f in FACTORS.values():   # every factor reads from any accepted meta.json
        f(meta)


@fuzz
@given(data=mutated(VALID_TOML))
def test_campaign_toml(tmp_path_factory, data):
    from mpitempo.io.campaign import build_campaign, load_toml

    p = tmp_path_factory.mktemp("t") / "campaign.toml"
    p.write_bytes(data)
    try:
        c = build_campaign(load_toml(p))
    except MtError as e:
        assert "\n" not in str(e)
        return
    assert c.configs and c.np and c.to_toml()


@fuzz
@given(data=mutated(VALID_CSV), meta=st.one_of(st.just(None), mutated(VALID_META)),
       failed=st.one_of(st.just(None), st.binary(max_size=60)))
def test_campaign_readers_through_the_cli(tmp_path_factory, campaign, capsys, data, meta, failed):
    """summary --json over a campaign whose first run has these files: exit 0 with JSON, or exit 2
    with one line."""
    from mpitempo.cli import main

    root = tmp_path_factory.mktemp("c") / "camp"
    shutil.copytree(campaign, root)
    run = sorted((root / "runs").iterdir())[0]
    (run / "measurements.csv").write_bytes(data)
    if meta is not None:
        (run / "meta.json").write_bytes(meta)
    if failed is not None:
        (sorted((root / "runs").iterdir())[1] / "failed.json").write_bytes(failed)
    capsys.readouterr()
    code = main(["summary", "--json", str(root)])
    out, err = capsys.readouterr()
    if code == 0:
        json.loads(out)
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("mpitempo"), err


@fuzz
@given(data=st.one_of(st.binary(max_size=300), st.binary(min_size=40, max_size=300).map(
    lambda b: b"MTPRANK1" + b[8:])))
def test_perrank_bin(tmp_path_factory, data):
    from mpitempo.io.perrank import read_perrank

    p = tmp_path_factory.mktemp("p") / "perrank.bin"
    p.write_bytes(data)
    try:
        read_perrank(p)
    except MtError as e:
        assert "\n" not in str(e)


def test_profiles_are_bounded():
    """The suite's profile is bounded (a few seconds per target)."""
    assert settings.get_profile("fuzz-ci").max_examples <= 100
