"""Pure parts of the Python side: size lists, campaign validation, run plan."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpitempo.io.campaign import build_campaign
from mpitempo.kinds.bench import check_against_registry
from mpitempo.errors import MtError
from mpitempo.runner.execute import plan
from mpitempo.io.sizes import format_size, parse_size, parse_sizes


def test_sizes_basic():
    assert parse_sizes("8,1K,2M") == [8, 1024, 2 << 20]
    assert parse_sizes("8-64") == [8, 16, 32, 64]
    assert parse_sizes([8, "1K"]) == [8, 1024]
    assert parse_sizes("3-20") == [3, 6, 12]
    assert parse_size("4KiB") == 4096


@pytest.mark.parametrize("bad", ["0", "-8", "abc", "8X", "64-8", "8,,16", ""])
def test_sizes_bad(bad):
    with pytest.raises(MtError) as e:
        parse_sizes(bad)
    assert "size" in str(e.value)


@given(st.integers(min_value=1, max_value=1 << 40))
def test_format_parse_roundtrip(n):
    assert parse_size(format_size(n)) == n


@given(st.integers(0, 20), st.integers(0, 10))
def test_range_is_powers_of_two(a, k):
    lo, hi = 1 << a, 1 << (a + k)
    v = parse_sizes(f"{lo}-{hi}")
    assert v[0] == lo and v[-1] == hi and len(v) == k + 1
    assert all(y == 2 * x for x, y in zip(v, v[1:]))


def test_zero_sizes():
    """0 B is a size where it is allowed (a message of count 0; a range from 0 goes on with 1, 2, 4),
    refused elsewhere, never negative."""
    assert parse_sizes("0", allow_zero=True) == [0]
    assert parse_sizes("0-8,1K", allow_zero=True) == [0, 1, 2, 4, 8, 1024]
    assert parse_sizes([0, "64"], allow_zero=True) == [0, 64]
    for bad, msg in (("-4", "sizes cannot be negative"), ("0,0", "0 B is listed twice"), ("x", "expected a number")):
        with pytest.raises(MtError) as e:
            parse_sizes(bad, allow_zero=True)
        assert msg in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(MtError, match="at least 1 byte"):
        parse_sizes("0")
    # a bench campaign takes 0 (the core measures count 0), in ranges too
    assert build_campaign({"msizes": "0-4"}).msizes == [0, 1, 2, 4]


def test_campaign_defaults_and_overrides():
    c = build_campaign({"ops": ["bcast"], "mpiruns": 4}, {"nrep": 7, "np": 3})
    assert c.ops == ["bcast"] and c.mpiruns == 4 and c.nrep == 7 and c.np == [3]
    assert [x.name for x in c.configs] == ["default"]


@pytest.mark.parametrize("spec,msg", [
    ({"nrpe": 5}, "unknown key 'nrpe'"),
    ({"nrep": 0}, "invalid nrep 0"),
    ({"mpiruns": 0}, "invalid mpiruns 0"),
    ({"np": 0}, "invalid np 0"),
    ({"nrep": "many"}, "invalid nrep 'many'"),
    ({"msizes": "-8"}, "invalid size '-8': sizes cannot be negative"),
    ({"msizes": "0,8,0"}, "0 B is listed twice"),
    ({"order": "sorted"}, "invalid order 'sorted'"),
    ({"config": [{"name": "a"}, {"name": "a"}]}, "duplicate configuration name 'a'"),
    ({"config": [{"name": "a", "colour": 1}]}, "unknown key 'colour' in [[config]]"),
    ({"config": [{"mpicc": "x"}]}, "has no name"),
])
def test_campaign_bad(spec, msg):
    with pytest.raises(MtError) as e:
        build_campaign(spec)
    assert msg in str(e.value)


REG = {"ops": [{"name": "allreduce", "min_procs": 1}, {"name": "exscan", "min_procs": 2}],
       "schemes": [{"name": "barrier"}], "timers": [{"name": "monotonic"}], "datatypes": ["byte"],
       "redops": ["sum"]}


@pytest.mark.parametrize("over,msg", [
    ({"ops": "foo"}, "unknown op 'foo' (allowed: allreduce, exscan)"),
    ({"ops": "exscan", "np": 1}, "op 'exscan' needs at least 2 ranks"),
    ({"scheme": "magic"}, "unknown scheme 'magic' (allowed: barrier)"),
    ({"timer": "sundial"}, "unknown timer 'sundial'"),
    ({"root": 5}, "invalid root 5"),
])
def test_registry_checks(over, msg):
    c = build_campaign({}, over)
    with pytest.raises(MtError) as e:
        check_against_registry(c, REG)
    assert msg in str(e.value)


def test_plan_interleaves_configs():
    c = build_campaign({"mpiruns": 2, "config": [{"name": "A"}, {"name": "B"}]})
    assert [r.run_id for r in plan(c)] == ["A-000", "B-000", "A-001", "B-001"]
    c = build_campaign({"mpiruns": 5, "seed": 3, "order": "random", "config": [{"name": "A"}, {"name": "B"}]})
    ids = [r.run_id for r in plan(c)]
    assert sorted(ids) == sorted(f"{n}-{i:03d}" for n in "AB" for i in range(5))
    assert ids == [r.run_id for r in plan(c)]  # reproducible from the seed


def test_toml_roundtrip():
    import tomllib
    c = build_campaign({"name": "x", "ops": ["bcast", "reduce"], "msizes": "8-32", "seed": 5,
                        "config": [{"name": "A", "env": {"X_Y": "1 2"}, "launcher": "srun -n {np} {cmd}"}]})
    again = build_campaign(tomllib.loads(c.to_toml()))
    assert again == c
