"""--like osu|imb and OSU/IMB benchmark names as ops (io/opnames.py, io/profiles.py): the table against the
core's registry and the suites' own benchmark lists, what a profile sets, what it refuses (one line,
nothing created), the round trip through campaign.toml, and "did you mean" for unknown ops."""
from __future__ import annotations

import itertools
import tomllib

import pytest
from hypothesis import given, settings, strategies as st

from mpitempo import kinds
from mpitempo.errors import MtError
from mpitempo.io import opnames
from mpitempo.io.campaign import build_campaign
from mpitempo.kinds.bench import check_against_registry, resolve_op, unknown_op

IMPLEMENTED = [b for b in opnames.BENCHMARKS if b.ops]

# The benchmarks the suites build, from their sources (facts, for completeness): OSU 7.4 c/mpi/**/Makefile.am
# *_PROGRAMS; IMB 2021.11 src_cpp/*/..._benchmark.cpp and src_c/IMB_bnames_*.h
OSU_74 = """osu_bibw osu_bw osu_latency osu_mbw_mr osu_multi_lat osu_latency_mt osu_latency_mp osu_bibw_persistent
osu_bw_persistent osu_latency_persistent osu_bw_fan_out osu_bw_fan_in osu_alltoallv osu_alltoallw osu_allgatherv
osu_scatterv osu_gatherv osu_reduce_scatter osu_barrier osu_reduce osu_allreduce osu_alltoall osu_bcast osu_gather
osu_allgather osu_scatter osu_reduce_scatter_block osu_neighbor_allgather osu_neighbor_allgatherv
osu_neighbor_alltoall osu_neighbor_alltoallv osu_neighbor_alltoallw osu_ineighbor_allgather osu_ineighbor_allgatherv
osu_ineighbor_alltoall osu_ineighbor_alltoallv osu_ineighbor_alltoallw osu_iallgather osu_ibcast osu_ialltoall
osu_ibarrier osu_igather osu_iscatter osu_iscatterv osu_igatherv osu_iallgatherv osu_ialltoallv osu_ialltoallw
osu_ireduce osu_iallreduce osu_ireduce_scatter osu_ireduce_scatter_block osu_allgather_persistent
osu_allgatherv_persistent osu_allreduce_persistent osu_alltoall_persistent osu_alltoallv_persistent
osu_alltoallw_persistent osu_barrier_persistent osu_bcast_persistent osu_gather_persistent osu_gatherv_persistent
osu_reduce_persistent osu_reduce_scatter_persistent osu_scatter_persistent osu_scatterv_persistent osu_acc_latency
osu_get_bw osu_get_latency osu_put_bibw osu_put_bw osu_put_latency osu_get_acc_latency osu_fop_latency
osu_cas_latency osu_init osu_hello""".split()
IMB_2021 = """PingPong PingPongSpecificSource PingPongAnySource PingPing PingPingSpecificSource PingPingAnySource Sendrecv
Exchange Allreduce Reduce Reduce_local Reduce_scatter Reduce_scatter_block Allgather Allgatherv Gather Gatherv Scatter
Scatterv Alltoall Alltoallv Bcast Barrier Uniband Biband Ibcast Ibcast_pure Iallgather Iallgather_pure Iallgatherv
Iallgatherv_pure Igather Igather_pure Igatherv Igatherv_pure Iscatter Iscatter_pure Iscatterv Iscatterv_pure Ialltoall
Ialltoall_pure Ialltoallv Ialltoallv_pure Ireduce Ireduce_pure Ireduce_scatter Ireduce_scatter_pure Iallreduce
Iallreduce_pure Ibarrier Ibarrier_pure Unidir_put Unidir_get Bidir_put Bidir_get One_put_all One_get_all All_put_all
All_get_all Put_local Get_local Put_all_local Get_all_local Exchange_put Exchange_get Accumulate Get_accumulate
Fetch_and_op Compare_and_swap Truly_passive_put Bcast_persist Bcast_persist_pure Allgather_persist
Allgather_persist_pure Allgatherv_persist Allgatherv_persist_pure Gather_persist Gather_persist_pure Gatherv_persist
Gatherv_persist_pure Scatter_persist Scatter_persist_pure Scatterv_persist Scatterv_persist_pure Alltoall_persist
Alltoall_persist_pure Alltoallv_persist Alltoallv_persist_pure Reduce_persist Reduce_persist_pure
Reduce_scatter_persist Reduce_scatter_persist_pure Allreduce_persist Allreduce_persist_pure Barrier_persist
Barrier_persist_pure""".split()


@pytest.fixture(scope="module")
def registry(build):
    from mpitempo.build import list_registry

    return list_registry(build)


# ---- the table -------------------------------------------------------------------------------------

def test_every_name_resolves_to_registered_ops(registry):
    """Every accepted OSU/IMB name measures ops the core has; its settings are parameters of a bench
    campaign with values the core accepts."""
    ops = {o["name"] for o in registry["ops"]}
    schemes = {s["name"] for s in registry["schemes"]}
    k = kinds.get("bench")
    for b in IMPLEMENTED:
        assert set(b.ops) <= ops, b.op_name
        assert b.source and not b.why, b.op_name
        for key, v in b.settings.items():
            assert key in k.params(), (b.op_name, key)
            assert k.normalise(key, v) is not None or isinstance(v, bool), (b.op_name, key)
        assert b.settings.get("scheme") in schemes
        if "datatype" in b.settings:
            assert b.settings["datatype"] in registry["datatypes"]
        if "redop" in b.settings:
            assert b.settings["redop"] in registry["redops"]


def test_names_are_unique_and_case_insensitive():
    names = [b.op_name.lower() for b in opnames.BENCHMARKS]
    assert len(names) == len(set(names))
    for b in opnames.BENCHMARKS:
        for variant in (b.op_name, b.op_name.upper(), b.op_name.lower(), f"  {b.op_name} "):
            assert opnames.lookup(variant) is b
    assert opnames.lookup("bw") is None and opnames.lookup("PingPong") is None   # IMB names need IMB:


@pytest.mark.parametrize("suite,names", [("osu", OSU_74), ("imb", IMB_2021)])
def test_every_benchmark_of_the_suites_is_in_the_table(suite, names):
    """Each benchmark the suite builds is either measured or refused with why; nothing else is listed."""
    table = {b.name for b in opnames.BENCHMARKS if b.suite == suite}
    assert set(names) == table
    for b in opnames.BENCHMARKS:
        assert bool(b.ops) != bool(b.why), b.op_name


def test_suite_definitions_read_from_the_sources():
    """Spot checks of values read from OSU 7.4 and IMB 2021.11 (docs/methods.md, the profiles table)."""
    lk = opnames.lookup
    assert lk("osu_bw").settings == {"scheme": "loop", "datatype": "char", "cache": "warm", "bw_rbuf": "single",
                                     "bw_window": 64, "inner_min_time": "1ms", "warmup_max_time": "10ms"}
    assert lk("osu_bw").np == "2" and lk("osu_mbw_mr").np == "even"
    assert lk("osu_mbw_mr").settings["scheme"] == "barrier"       # a barrier before every window
    assert lk("osu_latency").settings["scheme"] == "loop" and lk("osu_multi_lat").settings["scheme"] == "barrier"
    assert lk("osu_allreduce").settings == {"scheme": "barrier", "datatype": "char", "cache": "warm", "redop": "sum",
                                            "warmup_max_time": "10ms"}
    assert lk("osu_iallreduce").ops == ("iallreduce_overlap", "iallreduce")
    assert lk("IMB:Uniband").settings["bw_window"] == 256 and lk("IMB:Uniband").ops == ("mbw_mr",)
    assert lk("IMB:Allreduce").settings["datatype"] == "float" and lk("IMB:Bcast").settings["datatype"] == "byte"
    assert lk("IMB:PingPong").settings["scheme"] == "loop" and lk("IMB:Allreduce").settings["scheme"] == "barrier"
    assert lk("IMB:Unidir_put").settings["rma_sync"] == "flush" and lk("IMB:Unidir_put").settings["rma_win"] == "create"
    assert "datatype" not in lk("osu_barrier").settings


# ---- what a profile sets -----------------------------------------------------------------------------

@pytest.mark.parametrize("bench", IMPLEMENTED, ids=lambda b: b.op_name)
@pytest.mark.parametrize("np", [2, 3, 4])
def test_a_name_sets_its_profile_or_is_refused(bench, np):
    why = bench.np_problem(np)
    if why:
        with pytest.raises(MtError, match=f"{bench.op_name} runs on {why}") as e:
            build_campaign(None, {"ops": bench.op_name, "np": np})
        assert "\n" not in str(e.value)
        return
    c = build_campaign(None, {"ops": bench.op_name, "np": np})
    assert c.params["like"] == bench.suite and c.params["ops"] == list(bench.ops)
    k = kinds.get("bench")
    for key, v in bench.settings.items():
        assert c.params[key] == (v if isinstance(v, bool) else k.normalise(key, v)), key


def test_plain_ops_under_a_profile_and_defaults_untouched():
    base = build_campaign(None, {"ops": "bw"})
    c = build_campaign(None, {"ops": "bw", "like": "OSU"})
    assert c.params["like"] == "osu" and c.params["scheme"] == "loop" and c.params["bw_rbuf"] == "single"
    # what the profile does not set keeps its default
    for key in ("nrep", "warmup", "inner", "msizes", "rma_sync", "root", "timer", "sync"):
        assert c.params[key] == base.params[key], key
    assert base.params["like"] is None
    # multi_lat is osu_multi_lat, or osu_latency when the scheme given says so (2 ranks)
    assert build_campaign(None, {"ops": "multi_lat", "like": "osu"}).params["scheme"] == "barrier"
    assert build_campaign(None, {"ops": "multi_lat", "like": "osu", "scheme": "loop"}).params["scheme"] == "loop"
    # names of one definition: the op once
    assert build_campaign(None, {"ops": "IMB:PingPong,IMB:PingPongSpecificSource"}).params["ops"] == ["multi_lat"]
    # osu_iallreduce and iallreduce: the pure op once
    assert build_campaign(None, {"ops": "osu_iallreduce,iallreduce"}).params["ops"] == ["iallreduce_overlap",
                                                                                     "iallreduce"]
    # a value equal to the profile's is no contradiction; the suites' own options stay free
    assert build_campaign(None, {"ops": "osu_bw", "bw_rbuf": "single", "msizes": "1-4M"}).params["bw_rbuf"] == "single"
    assert build_campaign(None, {"ops": "osu_put_latency", "rma_sync": "fence"}).params["rma_sync"] == "fence"


REFUSALS = [
    ({"ops": "bw", "like": "osu", "bw_rbuf": "window"},
     "--bw-rbuf window contradicts --like osu: osu_bw receives every message of a window into one buffer "
     "(allowed with --like osu: --bw-rbuf single or leave it out; or drop --like)"),
    ({"ops": "IMB:Uniband", "bw_window": "64"},
     "--bw-window 64 contradicts --like imb: IMB:Uniband keeps 256 messages in flight per window"),
    ({"ops": "bw", "like": "osx"}, "unknown profile --like 'osx' (allowed: osu, imb"),
    ({"ops": "osu_bw", "like": "imb"}, "osu_bw is an OSU Micro-Benchmarks 7.4 benchmark but the profile is --like imb"),
    ({"ops": "osu_bw,IMB:PingPong"}, "ops mix OSU and IMB names (osu_bw, IMB:PingPong)"),
    ({"ops": "osu_bw,osu_allreduce"}, "--like osu: osu_bw and osu_allreduce need different --scheme (loop, barrier)"),
    ({"ops": "IMB:Allreduce,IMB:Bcast"}, "need different --datatype (float, byte)"),
    ({"ops": "osu_latency,osu_multi_lat"}, "osu_latency and osu_multi_lat both measure op 'multi_lat' with "
                                           "different definitions: give one of them"),
    ({"ops": "osu_latency_mt"}, "osu_latency_mt: not implemented (a multi-threaded ping-pong"),
    ({"ops": "imb:pingponganysource"}, "IMB:PingPongAnySource: not implemented (receives with MPI_ANY_SOURCE"),
    ({"ops": "osu_latency", "np": 4}, "osu_latency runs on exactly 2 ranks in OSU, but np is 4"),
    ({"ops": "IMB:Uniband", "np": 3}, "IMB:Uniband runs on an even number of ranks in IMB, but np is 3"),
    ({"ops": "multi_lat", "like": "osu", "scheme": "loop", "np": 4},
     "--scheme loop contradicts --like osu: osu_multi_lat times every call on its own"),
    ({"ops": "scan", "like": "osu"}, "op 'scan' has no OSU Micro-Benchmarks 7.4 counterpart"),
    ({"ops": "put_bw", "like": "imb"}, "op 'put_bw' has no Intel MPI Benchmarks 2021.11 counterpart"),
    ({"ops": "IMB:Unidir_put", "rma_sync": "lock"}, "--rma-sync lock contradicts --like imb"),
    ({"ops": "osu_allreduce", "scheme": "roundtime"}, "--scheme roundtime contradicts --like osu"),
    ({"ops": "IMB:Allreduce", "in_place": True},
     "--in-place on contradicts --like imb: IMB:Allreduce uses separate send and receive buffers (allowed with "
     "--like imb: leave --in-place out; or drop --like)"),
    ({"ops": "IMB:Allreduce", "datatype": "double"}, "--datatype double contradicts --like imb: IMB:Allreduce "
                                                    "reduces MPI_FLOAT"),
]


@pytest.mark.parametrize("over,msg", REFUSALS, ids=[m[:40] for _, m in REFUSALS])
def test_refusals_name_both_sides(over, msg):
    with pytest.raises(MtError) as e:
        build_campaign(None, over)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_refusals_in_a_campaign_file():
    with pytest.raises(MtError, match=r"bw_rbuf = window in \[\[config\]\] 'b' contradicts --like osu"):
        build_campaign({"like": "osu", "ops": ["bw"], "config": [{"name": "a"}, {"name": "b", "bw_rbuf": "window"}]})
    with pytest.raises(MtError, match="bw_rbuf = window in the campaign file contradicts --like osu"):
        build_campaign({"like": "osu", "ops": ["bw"], "bw_rbuf": "window"})
    with pytest.raises(MtError, match=r"unknown profile like = 'omb' in \[\[config\]\] 'a' \(allowed: osu, imb"):
        build_campaign({"config": [{"name": "a", "like": "omb"}]})
    for kind in ("imbalance", "barrier", "tune"):
        with pytest.raises(MtError, match=f"applies to campaigns of kind bench .* and pingpong, not '{kind}'"):
            build_campaign({"kind": kind, "like": "osu"})


@pytest.mark.parametrize("argv", [
    ["run", "--like", "osx"],
    ["run", "--ops", "osu_bw", "--bw-rbuf", "window"],
    ["run", "--like", "imb", "--ops", "IMB:Uniband", "--bw-window", "64"],
    ["run", "--ops", "osu_bw,IMB:PingPong"],
    ["run", "--ops", "osu_latency", "-n", "4"],
    ["pingpong", "--like", "imb"],
    ["pingpong", "--like", "osu", "--loop-iters", "500"],
])
def test_cli_refuses_before_anything_is_created(cli, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(*argv, "-o", tmp_path / "out")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


# ---- recorded: campaign.toml and back ---------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    {"ops": ["osu_bw", "osu_bibw"]},
    {"ops": ["osu_latency"]},
    {"ops": ["IMB:Allreduce", "IMB:Reduce_scatter"]},
    {"ops": ["bw"], "config": [{"name": "osu", "like": "osu"}, {"name": "plain"}]},
    {"ops": ["osu_bw"], "config": [{"name": "a", "ops": ["osu_allreduce"]}, {"name": "b"}]},
])
def test_profile_survives_campaign_toml(spec):
    """campaign.toml records like and every value it set; reading it again (resume) changes nothing and
    refuses nothing."""
    c = build_campaign(spec)
    text = c.to_toml()
    assert 'like = "' in text
    again = build_campaign(tomllib.loads(text))
    assert again == c


def test_pingpong_profile():
    c = build_campaign(None, {"like": "osu"}, kind="pingpong")
    assert c.params["like"] == "osu" and c.params["loop"] is True and c.params["loop_iters"] is None
    assert build_campaign(tomllib.loads(c.to_toml())) == c
    with pytest.raises(MtError, match="--loop-iters 500 contradicts --like osu: osu_latency repeats 10000 times"):
        build_campaign(None, {"like": "osu", "loop_iters": 500}, kind="pingpong")
    with pytest.raises(MtError, match="pingpong --like imb: not implemented .*use mpitempo run --ops IMB:PingPong"):
        build_campaign(None, {"like": "imb"}, kind="pingpong")
    assert build_campaign(None, {}, kind="pingpong").params["like"] is None


NAMES_BY_SUITE = {s: [b.op_name for b in IMPLEMENTED if b.suite == s] for s in opnames.PROFILES}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(opnames.PROFILES)).flatmap(
    lambda s: st.lists(st.sampled_from(NAMES_BY_SUITE[s]), min_size=1, max_size=4, unique=True)),
    st.sampled_from([2, 4]))
def test_any_set_of_names_is_applied_whole_or_refused(names, np):
    """Property: a list of one suite's names is either refused in one line, or every benchmark's every
    setting holds in the campaign and the ops are the names' ops, each once."""
    try:
        c = build_campaign(None, {"ops": ",".join(names), "np": np})
    except MtError as e:
        assert "\n" not in str(e) and any(n in str(e) for n in names + ["--like"]), str(e)
        return
    k = kinds.get("bench")
    ops = list(dict.fromkeys(itertools.chain.from_iterable(opnames.lookup(n).ops for n in names)))
    assert c.params["ops"] == ops
    for n in names:
        for key, v in opnames.lookup(n).settings.items():
            assert c.params[key] == (v if isinstance(v, bool) else k.normalise(key, v)), (n, key)


# ---- did you mean -------------------------------------------------------------------------------------

SHORT_REG = {"ops": [{"name": "allreduce", "min_procs": 1}, {"name": "exscan", "min_procs": 2}],
             "schemes": [{"name": "barrier"}], "timers": [{"name": "monotonic"}], "datatypes": ["byte"],
             "redops": ["sum"]}


def test_did_you_mean_short_list():
    c = build_campaign({}, {"ops": "alreduce"})
    with pytest.raises(MtError) as e:
        check_against_registry(c, SHORT_REG)
    assert str(e.value) == "unknown op 'alreduce' (did you mean allreduce?; allowed: allreduce, exscan)"
    c = build_campaign({}, {"ops": "zzz"})
    with pytest.raises(MtError) as e:
        check_against_registry(c, SHORT_REG)
    assert str(e.value) == "unknown op 'zzz' (allowed: allreduce, exscan)"


def test_did_you_mean_over_ops_and_suite_names(registry):
    ops = {o["name"]: o for o in registry["ops"]}
    msg = str(unknown_op(ops, "osu_bww", aliases=True))
    assert msg.startswith("unknown op 'osu_bww' (did you mean osu_bw")
    assert "every op: $(mpitempo which mpitempo-bench) --list" in msg and "\n" not in msg
    assert "IMB:PingPong" in str(unknown_op(ops, "IMB:PingPog", aliases=True))
    assert "allreduce" in str(unknown_op(ops, "alreduce", aliases=True))
    # where suite names are not accepted (imbalance, tune): neither suggested nor taken
    assert "osu_" not in str(unknown_op(ops, "osu_allredce", aliases=False)).split("(", 1)[1].split(";")[0]
    with pytest.raises(MtError, match="'osu_allreduce' is an OSU Micro-Benchmarks 7.4 benchmark name, accepted by "
                                      "mpitempo run --ops; its op: allreduce"):
        resolve_op(ops, "osu_allreduce")
    # family ops are suggested with their :N
    assert "barrier:combining:N" in str(unknown_op(ops, "barrier:combinig:4"))


# ---- a factor of compare and the store --------------------------------------------------------------

def _two_profiles(root):
    import numpy as np

    from mpitempo.io.synthetic import write_run

    rng = np.random.default_rng(1)
    for i in range(5):
        for cfg, like, t in (("osu", "osu", 9e-6), ("plain", None, 10e-6)):
            write_run(root, f"{cfg}-{i:03d}", cfg, i, "bw", 8, t * (1 + 0.01 * rng.random(20)),
                      meta={"like": like} if like else None)


def test_compare_by_like_and_the_store_migration(tmp_path, cli):
    import duckdb

    from mpitempo.analysis.comparison import allowed_factors

    assert "like" in allowed_factors()
    camp = tmp_path / "c"
    _two_profiles(camp)
    code, out, err = cli("compare", camp, "--by", "like", "--json")
    assert code == 0, err
    import json

    rows = json.loads(out)
    assert {(r["factor"], r["a"], r["b"]) for r in rows} == {("like", "none", "osu")}
    assert rows[0]["delta_pct"] < -5     # osu's runs are 10% faster by construction
    # a store written before the profile column (schema 2) gains it, 'none' for its runs
    db = tmp_path / "s.duckdb"
    assert cli("ingest", camp, "--db", db)[0] == 0
    con = duckdb.connect(str(db))
    con.execute('ALTER TABLE runs DROP COLUMN "like"')
    con.execute("UPDATE mt_schema SET version = 2")
    con.close()
    code, out, err = cli("compare", db, "--by", "like")     # read as it is: every run 'none'
    assert code == 2 and "factor 'like' has only one level ('none')" in err, err
    assert cli("ingest", camp, "--db", db)[0] == 0
    con = duckdb.connect(str(db))
    assert con.execute("SELECT max(version) FROM mt_schema").fetchone()[0] == 3
    assert sorted(r[0] for r in con.execute('SELECT DISTINCT "like" FROM runs').fetchall()) == ["none", "osu"]
    con.close()
    code, out, err = cli("compare", db, "--by", "like")
    assert code == 0 and "osu" in out, err
