"""Exit-imbalance analysis and algorithm-variant discovery (pure parts)."""
import numpy as np
import pytest

from mpitempo.analysis.imbalance import load_exits
from mpitempo.stats import imbalance as imb
from mpitempo.errors import MtError
from mpitempo.mpilib.mpich import parse_mpich_mpivars
from mpitempo.mpilib.openmpi import parse_ompi_info
from mpitempo.mpilib.variants import parse_variants

MPIVARS = """\tMPIR_CVAR_BARRIER_INTRA_ALGORITHM=0\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tVariable to select barrier algorithm
auto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)
nb            - Force nonblocking algorithm
smp           - Force smp algorithm
k_dissemination - Force high radix dissemination algorithm
recexch       - Force recursive exchange algorithm
\tMPIR_CVAR_BARRIER_INTER_ALGORITHM=0\tSCOPE_ALL_EQ\tNo-object
auto - Internal algorithm selection
bcast - Force bcast algorithm
"""

OMPI = '''          MCA coll tuned: parameter "coll_tuned_barrier_algorithm" (current value: "ignore", data source: default)
                          Which barrier algorithm is used.
                          Valid values: 0|ignore, 1|linear, 2|double_ring, 3|recursive_doubling, 4|bruck, 5|two_proc, 6|tree
          MCA coll tuned: parameter "coll_tuned_bcast_algorithm" (current value: "ignore")
                          Valid values: 0|ignore, 1|basic_linear, 2|chain
'''


def test_parse_mpich():
    assert parse_mpich_mpivars(MPIVARS, "barrier") == ["auto", "nb", "smp", "k_dissemination", "recexch"]
    assert parse_mpich_mpivars(MPIVARS, "allreduce") == []


def test_parse_ompi():
    assert parse_ompi_info(OMPI, "barrier") == ["ignore", "linear", "double_ring", "recursive_doubling", "bruck",
                                                "two_proc", "tree"]
    assert parse_ompi_info(OMPI, "bcast") == ["ignore", "basic_linear", "chain"]
    assert parse_ompi_info(OMPI, "scan") == []


# Open MPI 4.1.4 (Debian's ompi_info --param coll tuned --level 9), recorded on this machine
OMPI4 = '''          MCA coll tuned: parameter "coll_tuned_barrier_algorithm" (current value: "ignore", data source: default, level: 5 tuner/detail, type: int)
                          Which barrier algorithm is used. Can be locked down to choice of: 0 ignore, 1 linear, 2 double ring, 3: recursive doubling 4: bruck, 5: two proc only, 6: tree. Only relevant if coll_tuned_use_dynamic_rules is true.
                          Valid values: 0:"ignore", 1:"linear", 2:"double_ring", 3:"recursive_doubling", 4:"bruck", 5:"two_proc", 6:"tree"
          MCA coll tuned: informational "coll_tuned_bcast_algorithm_count" (current value: "10", data source: default, level: 5 tuner/detail, type: int)
                          Number of bcast algorithms available
          MCA coll tuned: parameter "coll_tuned_bcast_algorithm" (current value: "ignore", data source: default, level: 5 tuner/detail, type: int)
                          Valid values: 0:"ignore", 1:"basic_linear", 2:"chain", 3:"pipeline", 4:"split_binary_tree", 5:"binary_tree", 6:"binomial", 7:"knomial", 8:"scatter_allgather", 9:"scatter_allgather_ring"
'''


def test_parse_ompi4():
    """Open MPI 4 writes the valid values as 0:"ignore", Open MPI 5 as 0|ignore."""
    assert parse_ompi_info(OMPI4, "barrier") == ["ignore", "linear", "double_ring", "recursive_doubling", "bruck",
                                                 "two_proc", "tree"]
    assert parse_ompi_info(OMPI4, "bcast")[-2:] == ["scatter_allgather", "scatter_allgather_ring"]
    assert len(parse_ompi_info(OMPI4, "bcast")) == 10


def test_parse_variants():
    v = parse_variants("base;smp:MPIR_CVAR_BARRIER_INTRA_ALGORITHM=smp,X=1")
    assert [x.name for x in v] == ["base", "smp"]
    assert v[0].env == {} and v[1].env == {"MPIR_CVAR_BARRIER_INTRA_ALGORITHM": "smp", "X": "1"}


@pytest.mark.parametrize("bad,msg", [
    ("a;a", "given twice"), ("x:NOVALUE", "expected VAR=VALUE"), ("bad name:X=1", "invalid variant name"),
    (";", "expected NAME:VAR=VAL"), ("x:1X=2", "expected VAR=VALUE"),
])
def test_parse_variants_bad(bad, msg):
    with pytest.raises(MtError) as e:
        parse_variants(bad)
    assert msg in str(e.value)


def test_exit_stats_known_values():
    ends = np.array([[10.0, 10.5, 11.0], [20.2, 20.0, 20.1]])
    s = imb.exit_stats(ends)
    assert np.allclose(s["skew_s"], [1.0, 0.2])
    assert np.allclose(s["offsets_s"], [[0, 0.5, 1.0], [0.2, 0, 0.1]])
    summ = imb.summarize(s["skew_s"], s["offsets_s"])
    assert summ["n"] == 2 and summ["median_skew_s"] == pytest.approx(0.6) and summ["max_skew_s"] == 1.0
    assert summ["per_rank"][2]["last_to_exit_fraction"] == 0.5
    assert summ["per_rank"][0]["last_to_exit_fraction"] == 0.5
    assert imb.summarize(np.empty(0), np.empty((0, 0))) == {"n": 0}


def test_load_exits_reads_valid_rows_only(tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timestamps.csv").write_text(
        "op,msize,exp,rep,rank,start_s,end_s,valid\n"
        "barrier,0,0,0,0,1.0,1.5,1\nbarrier,0,0,0,1,1.0,1.7,1\n"
        "barrier,0,0,1,0,2.0,2.5,0\nbarrier,0,0,1,1,2.0,9.9,0\n"
        "barrier,0,0,2,0,3.0,3.4,1\nbarrier,0,0,2,1,3.0,3.1,1\n")
    ex = load_exits([d])
    assert ex["nprocs"] == 2
    assert np.allclose(sorted(ex["skew_s"]), [0.2, 0.3])
