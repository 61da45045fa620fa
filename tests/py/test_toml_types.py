"""Strict TOML types: every key of every TOML file mpitempo reads has one type (io/toml_schema.py),
and a value of another type is refused in one line naming the file, the key with its table path,
the value as given (escaped) and the type allowed, even where it could be converted (seed = "7",
nrep = 2.0, nrep = true, name = 3, per_rank = 1, ops = "allreduce").

The cases are enumerated from the schema itself, for every kind of run, at the top level and
inside a [[config]]: a key added to the campaign parser without a type fails
test_every_key_has_a_type, and a type without convertible wrong values fails test_every_type_has_bad_examples.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from mpitempo import kinds
from mpitempo.errors import MtError
from mpitempo.io import campaign as io_campaign
from mpitempo.io import toml_schema as ts
from mpitempo.io import tree as io_tree


def _toml(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{io_campaign._toml_key(k)} = {_toml(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return io_campaign._toml_value(v)


def _cases():
    out = []
    for kind in kinds.NAMES:
        ptypes = ts.param_types(kinds.get(kind))
        for level, types in (("top", {**ts.CAMPAIGN_TYPES, **ptypes}), ("config", {**ts.CONFIG_TYPES, **ptypes})):
            for key, t in sorted(types.items()):
                if key == "kind" or (level == "config" and key == "name" and kind != "bench"):
                    continue
                for i, bad in enumerate(t.bad_examples):
                    out.append(pytest.param(kind, level, key, t, bad, id=f"{kind}-{level}-{key}-{i}"))
    return out


@pytest.mark.parametrize("kind,level,key,t,bad", _cases())
def test_wrong_type_is_refused(kind, level, key, t, bad, tmp_path):
    f = tmp_path / "c.toml"
    if level == "top":
        text = f'kind = "{kind}"\n{key} = {_toml(bad)}\n'
        where = "" if key != "config" else None
    elif key == "name":
        text = f'kind = "{kind}"\n[[config]]\nname = {_toml(bad)}\n'
        where = None
    else:
        text = f'kind = "{kind}"\n[[config]]\nname = "a"\n{key} = {_toml(bad)}\n'
        where = " in [[config]] 'a'"
    f.write_text(text)
    with pytest.raises(MtError) as e:
        io_campaign.load_toml(f)
    msg = str(e.value)
    assert "\n" not in msg and e.value.code == 2, msg
    assert msg.startswith(f"campaign file '{f}': invalid "), msg
    assert f"expected {t.name}" in msg or "expected " + ts.ENV_VALUE.name in msg, msg
    if where is not None:
        path = f"value of env " if t is ts.ENV and isinstance(bad, dict) else f"{key}{where} "
        assert path in msg, msg
    if key == "name" and level == "config":
        assert "invalid name of [[config]] #1 " in msg, msg
    if not isinstance(bad, dict):
        assert ts.shown(bad) in msg, msg


def test_every_key_has_a_type():
    """The keys the campaign parser accepts are the keys the schema types, and every parameter of
    every kind has a type (a new params.def type without a TOML type is a KeyError here)."""
    assert set(ts.CAMPAIGN_TYPES) == set(io_campaign.CAMPAIGN_DEFAULTS) | {"config"}
    assert set(ts.CONFIG_TYPES) == io_campaign.CONFIG_BASE_KEYS
    assert set(ts.TREE_TYPES) == io_tree.TOML_KEYS
    for kind in kinds.NAMES:
        k = kinds.get(kind)
        assert set(ts.param_types(k)) == set(k.params()), kind


def test_every_type_has_bad_examples():
    types = {id(t): t for t in [*ts.CAMPAIGN_TYPES.values(), *ts.CONFIG_TYPES.values(), *ts.TREE_TYPES.values(),
                                *ts.PARAM_TYPES.values(), ts.STRINGS]}
    for t in types.values():
        assert t.bad_examples, t.name
        assert not any(t.ok(b) for b in t.bad_examples), t.name


@pytest.mark.parametrize("text", [
    'name = "x"\nnp = [2, 4]\nmpiruns = 2\nseed = 7\ntimeout_s = 10\nnrep = 5\nwarmup = "auto"\nrt_slack = 2\n'
    'msizes = [8, "1K"]\nops = ["allreduce"]\nper_rank = true\ncache_size = "4K"\nwindow = "20us"\n'
    'resync_age = 0\ndelay = "10us,20us"\nenv = { OMP_NUM_THREADS = 4, X = true, Y = "s" }\n',
    'msizes = "8-1K"\ntimeout_s = 1.5\nrt_slack = 2.5\ncache_size = 4096\n',
    '[[config]]\nname = "a"\nnrep = 5\nplatform_oversubscribe = false\nenv = { A = "1" }\n',
])
def test_right_types_are_accepted(text, tmp_path):
    """What a TOML user writes: a float key takes an integer (timeout_s = 10), env values may be
    numbers and booleans, sizes integers or strings, list parameters arrays or strings."""
    f = tmp_path / "c.toml"
    f.write_text(text)
    io_campaign.build_campaign(io_campaign.load_toml(f))


@pytest.mark.parametrize("kind", kinds.NAMES)
def test_written_campaign_toml_reads_back(kind):
    """campaign.toml as mpitempo writes it (to_toml: the canonical values) passes the type checks of
    the resume for every kind."""
    import tomllib

    k = kinds.get(kind)
    spec = {"kind": kind}
    if kind == "trace":
        spec["app"] = ["/bin/true"]
    c = io_campaign.build_campaign(spec, kind=kind)
    doc = tomllib.loads(c.to_toml())
    ts.check_campaign(doc, "campaign file 'x'", kind)
    assert set(ts.param_types(k)) >= {key for key in doc if key in k.params()}


def test_value_is_shown_escaped(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('seed = "7\\u001b[2J\\u202e"\n')
    with pytest.raises(MtError) as e:
        io_campaign.load_toml(f)
    assert "invalid seed '7\\x1b[2J\\u202e': expected an integer, not a string" in str(e.value)
    assert "\x1b" not in str(e.value) and "\u202e" not in str(e.value)


def test_shown():
    assert ts.shown(2.0) == "2.0" and ts.shown(True) == "true" and ts.shown("a'b\\") == "'a\\'b\\\\'"
    assert ts.shown(math.inf) == "inf" and ts.shown([1, "x"]) == "[1, 'x']" and ts.shown({"a b": 1}) == "{ 'a b' = 1 }"
    assert len(ts.shown("x" * 500)) == 60


@pytest.mark.parametrize("text,msg", [
    ('shape = "kary"\nk = "2"\n', "invalid k '2': expected an integer, not a string"),
    ('shape = "kary"\nk = 2.0\n', "invalid k 2.0: expected an integer, not a float"),
    ('shape = "fanout"\nfanout = "2,4"\n', "invalid fanout '2,4': expected an array of integers"),
    ('parents = [-1, 0.0]\n', "invalid parents [-1, 0.0]: expected an array of integers"),
    ('children = {0 = ["1"]}\n', "invalid children { 0 = ['1'] }: expected a table of arrays"),
    ('shape = "flat"\nranks = [0, true]\n', "invalid ranks [0, true]"),
    ('shape = "flat"\nhosts = "h1"\n', "invalid hosts 'h1': expected an array of strings"),
    ('shape = "flat"\nname = 3\n', "invalid name 3: expected a string, not an integer"),
    ('shape = "node"\ninter = 2\n', "invalid inter 2: expected a string"),
    ('shape = "flat"\ndown_order = true\n', "invalid down_order true"),
])
def test_tree_file_types(text, msg, tmp_path):
    f = tmp_path / "t.toml"
    f.write_text(text)
    with pytest.raises(MtError) as e:
        io_tree.load_toml(f)
    assert str(e.value).startswith(f"tree file '{f}': ") and msg in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_resume_refuses_a_stored_value_of_the_wrong_type(cli, tmp_path):
    """A campaign directory whose campaign.toml was edited to nrep = "5": the resume names the
    directory's file, the key and the value (it was read as 5)."""
    d = tmp_path / "camp"
    (d / "runs").mkdir(parents=True)
    (d / "campaign.toml").write_text('name = "c"\nnrep = "5"\n')
    code, out, err = cli("run", "--resume", str(d), "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert f"campaign file '{d / 'campaign.toml'}': invalid nrep '5': expected an integer, not a string" in err, err
