"""Property tests (hypothesis) of the campaign-file parser and the run-file readers: any input is
either accepted or refused with an MtError (a one-line message), never another exception; what is
accepted survives the round trip through campaign.toml; data that differs from its meta.json
record is never read as if it were whole."""
from __future__ import annotations

import json
import math
import shutil
import sys

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mpitempo.errors import MtError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = ["name", "kind", "np", "mpiruns", "seed", "order", "timeout_s", "launcher", "mpicc", "env", "ops", "msizes",
        "nrep", "scheme", "window", "time_slice", "delay", "sync", "rt_slack", "root", "resync_age", "timestamps",
        "nonsense"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=12), st.sampled_from(["8", "1K", "20us", "0", "inf", "2", "hca3", "bcast", "h2:a/b",
                                                           "1e10s", "barrier", "window", "X=1"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                      max_leaves=6)
configs = st.lists(st.dictionaries(st.sampled_from(["name", "env", "mpicc", "launcher", "description", "nrep",
                                                    "scheme", "bogus"]), values, max_size=4), max_size=3)


def _no_none(d):
    """TOML has no null: drop None as the file would not hold it."""
    if isinstance(d, dict):
        return {k: _no_none(v) for k, v in d.items() if v is not None}
    if isinstance(d, list):
        return [_no_none(v) for v in d if v is not None]
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.dictionaries(st.sampled_from(KEYS), values, max_size=6), cfgs=st.one_of(st.none(), configs))
@example(spec={"launcher": "\x1b"}, cfgs=None)   # a control character must be escaped in the TOML written
@example(spec={"name": "a\x7fb\x00"}, cfgs=[{"name": "x\ty", "description": "q\"\\"}])
def test_campaign_parser_accepts_or_refuses(spec, cfgs):
    from mpitempo.io.campaign import build_campaign

    spec = _no_none(spec)
    if cfgs is not None:
        spec["config"] = _no_none(cfgs)
    try:
        c = build_campaign(spec)
    except MtError as e:
        assert "\n" not in str(e) and str(e)
        return
    text = c.to_toml()                                    # what is accepted is written and read back the same
    again = build_campaign(tomllib.loads(text))
    assert again.to_toml() == text
    assert all(isinstance(k, str) and isinstance(v, str) and "\0" not in v for cfg in c.configs
               for k, v in cfg.env.items())
    assert len(set(c.np)) == len(c.np) and math.isfinite(c.timeout_s)


meta_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                                     st.text(max_size=8)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(meta=st.dictionaries(st.sampled_from(["format_version", "config", "nprocs", "run_index", "ranks", "mpi",
                                             "timer", "scheme", "clock", "build", "machine", "files", "start_time",
                                             "cache_policy"]), meta_values, max_size=8))
def test_meta_readers_accept_or_refuse(tmp_path_factory, meta):
    from mpitempo.analysis.factors import flatten
    from mpitempo.io.integrity import verify_run
    from mpitempo.io.rundir import FACTORS, load_meta

    d = tmp_path_factory.mktemp("run")
    (d / "meta.json").write_text(json.dumps(meta))
    (d / "measurements.csv").write_text("op,msize\n")
    try:
        m = load_meta(d / "meta.json")
    except MtError:
        return
    for f in FACTORS.values():
        f(m)
    flatten(m)
    problem = verify_run(d, m, ("measurements.csv",))
    assert problem is None or isinstance(problem, str)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 2000), flip=st.integers(0, 2000))
def test_damaged_data_is_never_read_as_whole(tmp_path_factory, cut, flip):
    """Cut the data file of one run at any byte, or change any one byte: the readers refuse the run
    (or, when the change is no change, read it as before)."""
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.io.synthetic import make_campaign

    from test_reliability import _seal

    root = tmp_path_factory.mktemp("c") / "camp"
    make_campaign(root, configs={"A": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=10)
    for run in (root / "runs").iterdir():
        _seal(run)
    csv = root / "runs" / "A-001" / "measurements.csv"
    data = bytearray(csv.read_bytes())
    changed = bytearray(data[:cut % (len(data) + 1)])
    if flip % 2 and changed:
        i = flip % len(changed)
        changed[i] = (changed[i] + 1 + flip % 200) % 256
    csv.write_bytes(bytes(changed))
    try:
        data_ = open_campaigns([root])
        n = data_.con.execute("SELECT count(*) FROM meas").fetchone()[0]
        assert bytes(changed) == bytes(data) and n == 20
    except MtError as e:
        assert bytes(changed) != bytes(data) and "\n" not in str(e)
    shutil.rmtree(root.parent)
