"""`export --osu/--imb` against the output of the real programs: OSU Micro-Benchmarks 7.4
(configure-built) and IMB 2021.11, recorded on 2 ranks by bench/peers_record.sh into
tests/data/peers/ (commands and load in commands.txt).

Every line a peer prints before and around its numbers is compared with ours line by line: the
leading empty line, the title, ``# Datatype: <type>.`` (ours names the type the op really used,
checked separately), the window / synchronisation lines, the column header byte for byte, and the
column positions of every data row (numbers differ, their fields end where the peer's end). IMB:
the preamble (values masked, trailing blanks kept: they differ between IMB's parts), the benchmark
list, bars, "# Benchmarking", "#processes", MODE lines, the column header and the closing line.
OSU's neighbourhood tests print their topology before the header ("Dimensions size = ...", the
time to build it): mpitempo has neither number and writes neither line; that layout is not among
the recordings.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mpitempo.io.synthetic import op_info, write_run

PEERS = Path(__file__).resolve().parents[1] / "data" / "peers"
SIZES = (8, 64, 1024)


def _params(**kw):
    return {"datatype": "char", "datatype_size": 1, "redop": "sum", "bw_window": 64, "bw_rbuf": "single",
            "rma_sync": "flush", "rma_win": "allocate", "overlap_compute": "auto", **kw}


def bench_campaign(root: Path, cfg: str, ops: dict, params: dict, runs: int = 3, nprocs: int = 2,
                   exp_extra: dict | None = None):
    """A campaign configuration with constant times (ops: op -> seconds at 1 KiB, scaled by size);
    exp_extra: op -> more keys of its experiments in meta.json."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "campaign.toml").write_text('name = "peers"\n')
    for i in range(runs):
        o, m, t = [], [], []
        for op, base in ops.items():
            for s in ((0,) if op in ("barrier", "barrier_init", "ibarrier", "ibarrier_overlap") else SIZES):
                o += [op] * 6
                m += [s] * 6
                t += [base * (1 + s / 1024) * (1 + 0.01 * k) for k in range(6)]

        def em(op, s):
            d = op_info(op, s, nprocs, params["bw_window"])
            k = {"bw_persistent": 1, "bibw_persistent": 2, "put_bibw": 2}.get(op)
            if k:                    # as the core declares them: k x window messages of s bytes
                d = {"bytes_per_call": float(k * params["bw_window"] * s), "msgs_per_call": float(k * params["bw_window"])}
            d.update((exp_extra or {}).get(op, {}))
            if op.endswith("_overlap"):
                d["overlap"] = {"compute_target_s": 2e-6, "compute_median_s": 2e-6, "compute_min_s": 2e-6,
                                "compute_max_s": 2e-6, "pure_s": 1.5e-6, "compute_calls": 10}
            return d
        write_run(root, f"{cfg}-{i:03d}", cfg, i, o, m, t, nprocs=nprocs, exp_meta=em,
                  meta={"operation_params": params, "machine": {"arch": "x86_64", "kernel": "6.1"},
                        "build": {"mpi_header_version": 4, "mpi_header_subversion": 1}})
    return root


def pingpong_campaign(root: Path, runs=3, sizes=(0, 8, 1024), ntrial=20, loop_reps=5, iters=1000, buffers=None):
    """A campaign of the ping-pong kind (timings.csv as mpitempo-pingpong writes it)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "runs").mkdir(exist_ok=True)
    (root / "campaign.toml").write_text('name = "pp"\nkind = "pingpong"\n')
    rng = np.random.default_rng(1)
    for i in range(runs):
        d = root / "runs" / f"default-{i:03d}"
        d.mkdir()
        lines = ["kind,msize,npp,trial,ticks,time_s"]
        for m in sizes:
            for k, npp, n in (("pingpong", 1, ntrial), ("loop", iters, loop_reps)):
                for t in range(n):
                    ticks = int(2 * npp * (1000 + m) * rng.uniform(1, 1.2))
                    lines.append(f"{k},{m},{npp},{t},{ticks},{ticks * 1e-9 / (2 * npp)!r}")
        (d / "timings.csv").write_text("\n".join(lines) + "\n")
        pp = {"source": 0, "dest": 1, "ntrial": ntrial, "loop": True, "loop_reps": loop_reps, "loop_iters": 0,
              "datatype": "MPI_BYTE", "msizes": list(sizes)}
        if buffers:
            pp["buffers"] = buffers
        (d / "meta.json").write_text(json.dumps({
            "format_version": 1, "tool": "mpitempo-pingpong", "kind": "pingpong", "config": "default",
            "run_index": i, "start_time": f"2025-01-01T00:00:0{i}Z", "nprocs": 2,
            "timer": {"name": "monotonic", "s_per_tick": 1e-9}, "pingpong": pp}))
    return root


OPS = {"bw": 10e-6, "bibw": 12e-6, "mbw_mr": 11e-6, "multi_lat": 3e-6, "allreduce": 2e-6, "bcast": 1.5e-6,
       "barrier": 1.2e-6, "allreduce_init": 2.2e-6, "barrier_init": 1.3e-6, "iallreduce": 1.5e-6,
       "iallreduce_overlap": 3e-6, "ibarrier": 1.4e-6, "ibarrier_overlap": 2.5e-6, "ibcast": 1.5e-6,
       "ibcast_overlap": 3e-6, "pingping": 2e-6, "sendrecv": 2.5e-6, "exchange": 4e-6, "put": 1e-6,
       "put_bw": 20e-6, "get": 1.1e-6, "get_bw": 22e-6, "acc": 1.3e-6, "fop": 1.2e-6,
       # ops of a core with the persistent point-to-point ops and put_bibw
       "bw_persistent": 10e-6, "bibw_persistent": 12e-6, "multi_lat_persistent": 3e-6}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("peers")
    camp = d / "camp"
    bench_campaign(camp, "flush", OPS, _params())
    bench_campaign(camp, "lock", {"put": 1e-6, "put_bw": 20e-6, "get": 1.1e-6}, _params(rma_sync="lock"))
    bench_campaign(camp, "fence", {"put": 1e-6}, _params(rma_sync="fence"))
    bench_campaign(camp, "flush_local", {"put": 1e-6}, _params(rma_sync="flush_local"))
    bench_campaign(camp, "pscw", {"put_bibw": 30e-6}, _params(rma_sync="pscw"))
    pp = pingpong_campaign(d / "pp")
    for src, name in ((camp, "c"), (pp, "p")):
        assert main(["export", str(src), "--osu", str(d / f"osu-{name}"), "--imb", str(d / f"imb-{name}")]) == 0
    return d


def _read(p: Path) -> list[str]:
    return p.read_text().split("\n")


def split_osu(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(header lines, data rows, the rest) of one OSU output."""
    i = 0
    while i < len(lines) and (lines[i] == "" or lines[i].startswith("#")):
        i += 1
    j = i
    while j < len(lines) and lines[j] and not lines[j].startswith("#"):
        j += 1
    return lines[:i], lines[i:j], lines[j:]


def shape(row: str) -> list[int]:
    """Where the fields of a row are: the start of a left-aligned first field (OSU's size), else
    the end column of every field."""
    toks = list(re.finditer(r"\S+", row))
    return [0 if row[:1] != " " else toks[0].end()] + [m.end() for m in toks[1:]]


# fixture -> (our file, the datatype the op used)
OSU_CASES = {
    "osu_latency.txt": ("osu-p/osu_latency.default.np2.txt", "MPI_BYTE"),
    "osu_bw.txt": ("osu-c/osu_bw.flush.np2.txt", "MPI_CHAR"),
    "osu_bibw.txt": ("osu-c/osu_bibw.flush.np2.txt", "MPI_CHAR"),
    "osu_mbw_mr.txt": ("osu-c/osu_mbw_mr.flush.np2.txt", "MPI_CHAR"),
    "osu_multi_lat.txt": ("osu-c/osu_multi_lat.flush.np2.txt", "MPI_CHAR"),
    "osu_latency_persistent.txt": ("osu-c/osu_latency_persistent.flush.np2.txt", "MPI_CHAR"),
    "osu_bw_persistent.txt": ("osu-c/osu_bw_persistent.flush.np2.txt", "MPI_CHAR"),
    "osu_bibw_persistent.txt": ("osu-c/osu_bibw_persistent.flush.np2.txt", "MPI_CHAR"),
    "osu_put_latency_flush_local.txt": ("osu-c/osu_put_latency.flush_local.np2.txt", "MPI_CHAR"),
    "osu_put_bibw_pscw.txt": ("osu-c/osu_put_bibw.pscw.np2.txt", "MPI_CHAR"),
    "osu_allreduce_f.txt": ("osu-c/osu_allreduce.flush.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_bcast_f.txt": ("osu-c/osu_bcast.flush.np2.txt", "MPI_CHAR"),
    "osu_barrier_f.txt": ("osu-c/osu_barrier.flush.np2.txt", None),
    "osu_allreduce_persistent_f.txt": ("osu-c/osu_allreduce_persistent.flush.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_barrier_persistent_f.txt": ("osu-c/osu_barrier_persistent.flush.np2.txt", None),
    "osu_iallreduce.txt": ("osu-c/osu_iallreduce.flush.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_ibarrier.txt": ("osu-c/osu_ibarrier.flush.np2.txt", None),
    "osu_ibcast.txt": ("osu-c/osu_ibcast.flush.np2.txt", "MPI_CHAR"),
    "osu_put_latency_flush.txt": ("osu-c/osu_put_latency.flush.np2.txt", "MPI_CHAR"),
    "osu_put_latency_lock.txt": ("osu-c/osu_put_latency.lock.np2.txt", "MPI_CHAR"),
    "osu_put_latency_fence.txt": ("osu-c/osu_put_latency.fence.np2.txt", "MPI_CHAR"),
    "osu_put_bw_flush.txt": ("osu-c/osu_put_bw.flush.np2.txt", "MPI_CHAR"),
    "osu_put_bw_lock.txt": ("osu-c/osu_put_bw.lock.np2.txt", "MPI_CHAR"),
    "osu_get_latency_flush.txt": ("osu-c/osu_get_latency.flush.np2.txt", "MPI_CHAR"),
    "osu_get_latency_lock.txt": ("osu-c/osu_get_latency.lock.np2.txt", "MPI_CHAR"),
    "osu_get_bw_flush.txt": ("osu-c/osu_get_bw.flush.np2.txt", "MPI_CHAR"),
    "osu_acc_latency_flush.txt": ("osu-c/osu_acc_latency.flush.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_fop_latency_flush.txt": ("osu-c/osu_fop_latency.flush.np2.txt", "MPI_INT64_T"),
}


# -z recordings -> our file of `export --osu --tail` (per-rank data), the datatype the op used
OSU_Z_CASES = {
    "osu_bw_z.txt": ("osu_bw.lock.np2.txt", "MPI_CHAR"),
    "osu_bibw_z.txt": ("osu_bibw.lock.np2.txt", "MPI_CHAR"),
    "osu_mbw_mr_z.txt": ("osu_mbw_mr.lock.np2.txt", "MPI_CHAR"),
    "osu_latency_z.txt": ("osu_multi_lat.lock.np2.txt", "MPI_CHAR"),
    "osu_allreduce_z.txt": ("osu_allreduce.lock.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_iallreduce_z.txt": ("osu_iallreduce.lock.np2.txt", "MPI_SIGNED_CHAR"),
    "osu_put_latency_lock_z.txt": ("osu_put_latency.lock.np2.txt", "MPI_CHAR"),
    "osu_put_latency_fence_z.txt": ("osu_put_latency.fence.np2.txt", "MPI_CHAR"),
    "osu_put_bw_lock_z.txt": ("osu_put_bw.lock.np2.txt", "MPI_CHAR"),
}


def test_every_recorded_osu_layout_has_a_case():
    recorded = {p.name for p in PEERS.glob("osu_*.txt")}
    # osu_allreduce.txt (no -f, no -z) is a layout mpitempo does not write: it writes the -f columns of the
    # collectives, or the -z ones with --tail; it stays as recorded data of that run
    assert recorded - set(OSU_CASES) - set(OSU_Z_CASES) == {"osu_allreduce.txt"}


def _with_perrank(root: Path, skew: float = 0.9) -> None:
    """perrank.bin for every run of a synthetic campaign: rank 0 takes each measurement's runtime_s,
    rank 1 skew x it; one call per measurement (the layout of io/perrank.py)."""
    import csv
    import struct

    for d in sorted((root / "runs").iterdir()):
        with open(d / "measurements.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        recs, t = [], 1.0
        for r in rows:
            rt = float(r["runtime_s"])
            recs.append(struct.pack("<4I", int(r["exp"]), int(r["rep"]), int(r["valid"]), 0)
                        + struct.pack("<4d", t, t, t + rt, t + skew * rt))
            t += 2 * rt
        (d / "perrank.bin").write_bytes(b"MTPRANK1" + struct.pack("<6I", 48, 1, 2, 1, 0, 0x01020304)
                                        + struct.pack("<2Q", len(recs), 16 + 16 * 2) + b"".join(recs))


@pytest.fixture(scope="module")
def exported_tail(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("peers_z")
    camp = d / "camp"
    bench_campaign(camp, "lock", {"bw": 10e-6, "bibw": 12e-6, "mbw_mr": 11e-6, "multi_lat": 3e-6, "allreduce": 2e-6,
                                  "iallreduce": 1.5e-6, "iallreduce_overlap": 3e-6, "put": 1e-6, "put_bw": 20e-6},
                   _params(rma_sync="lock"))
    bench_campaign(camp, "fence", {"put": 1e-6}, _params(rma_sync="fence"))
    _with_perrank(camp)
    assert main(["export", str(camp), "--osu", str(d / "osu"), "--tail"]) == 0
    return d / "osu"


@pytest.mark.parametrize("fixture", sorted(OSU_Z_CASES))
def test_osu_tail_columns_as_osu_prints_them_with_z(exported_tail, fixture):
    ours_path, dtype = OSU_Z_CASES[fixture]
    theirs_h, theirs_rows, theirs_rest = split_osu(_read(PEERS / fixture))
    ours_h, ours_rows, ours_rest = split_osu(_read(exported_tail / ours_path))
    typed = re.compile(r"^# Datatype: (\S+)\.$")
    ours_h = [typed.sub("# Datatype: T.", ln) for ln in ours_h]
    theirs_h = [typed.sub("# Datatype: T.", ln) for ln in theirs_h]
    if fixture == "osu_latency_z.txt":      # osu_latency's title; mpitempo's op of it is multi_lat
        theirs_h = [ln.replace("OSU MPI Latency Test", "OSU MPI Multi Latency Test") for ln in theirs_h]
    assert ours_h == theirs_h
    assert theirs_rows and ours_rows
    assert {tuple(shape(r)) for r in ours_rows} == {tuple(shape(r)) for r in theirs_rows}
    assert any(ln.startswith("# P50 / P90 / P99 Tail = OSU's -z percentiles") for ln in ours_rest)


def test_osu_tail_values_are_osu_percentiles(exported_tail):
    """allreduce: each measurement's time is the mean over the ranks ((1 + 0.9) / 2 of runtime_s);
    bw: rank 0's; P50 is the element at round(n x 0.5) - 1 of the sorted per-run values, median over
    the runs (all runs alike here)."""
    def row(path, size):
        _, rows, _ = split_osu(_read(exported_tail / path))
        return [float(x) for x in next(r for r in rows if int(r.split()[0]) == size).split()[1:]]

    # bench_campaign: 6 measurements per size of base x (1 + s / 1024) x (1 + 0.01 k), k = 0..5
    t = [2e-6 * (1 + 64 / 1024) * (1 + 0.01 * k) for k in range(6)]
    mean = sorted(x * (1 + 0.9) / 2 for x in t)
    got = row("osu_allreduce.lock.np2.txt", 64)
    assert got[1:] == [round(mean[2] * 1e6, 2), round(mean[4] * 1e6, 2), round(mean[5] * 1e6, 2)]
    tb = sorted(10e-6 * (1 + 1024 / 1024) * (1 + 0.01 * k) for k in range(6))
    rates = sorted(64 * 1024 / x / 1e6 for x in tb)           # MB/s of one window of 64 messages
    got = row("osu_bw.lock.np2.txt", 1024)
    assert got[1:] == [round(rates[2], 2), round(rates[4], 2), round(rates[5], 2)]


@pytest.mark.parametrize("argv, msg", [
    (["--imb", "-", "--tail"], "--tail adds OSU's -z columns: it needs --osu"),
    (["--osu", "-", "--tail", "--values", "runs"], "--tail needs per-rank raw times (--values auto or ranks), not "
                                                   "--values runs"),
])
def test_tail_bad_combinations(cli, exported, argv, msg):
    code, out, err = cli("export", exported / "camp", *argv)
    assert code == 2 and msg in err and out == ""


def test_tail_refused_without_per_rank_data(cli, exported):
    code, out, err = cli("export", exported / "camp", "--osu", "-", "--tail", "--op", "bw")
    assert code == 2 and "--tail needs per-rank raw times (perrank.bin)" in err and "leave out --tail" in err, err


@pytest.mark.parametrize("fixture", sorted(OSU_CASES))
def test_osu_header_and_rows_as_osu_prints_them(exported, fixture):
    ours_path, dtype = OSU_CASES[fixture]
    theirs_h, theirs_rows, theirs_rest = split_osu(_read(PEERS / fixture))
    ours_h, ours_rows, ours_rest = split_osu(_read(exported / ours_path))
    typed = re.compile(r"^# Datatype: (\S+)\.$")
    assert [typed.sub("# Datatype: T.", ln) for ln in ours_h] == [typed.sub("# Datatype: T.", ln) for ln in theirs_h]
    got = [typed.match(ln).group(1) for ln in ours_h if typed.match(ln)]
    assert got == ([dtype] if dtype else [])
    assert theirs_rows and ours_rows
    assert {tuple(shape(r)) for r in ours_rows} == {tuple(shape(r)) for r in theirs_rows}
    assert theirs_rest == [""]                                  # OSU's output ends with its last row
    assert ours_rest[0].startswith("# mpitempo ") and all(ln.startswith("#") for ln in ours_rest[:-1])


def test_osu_stdout_is_the_outputs_one_after_the_other(cli, exported):
    code, out, err = cli("export", exported / "camp", "--osu", "-", "--op", "bw,put", "--config", "flush")
    assert code == 0, err
    files = [exported / "osu-c" / "osu_bw.flush.np2.txt", exported / "osu-c" / "osu_put_latency.flush.np2.txt"]
    assert out == "".join(f.read_text() for f in files)


# --- IMB -----------------------------------------------------------------------------------------

def split_imb(lines: list[str]):
    """(preamble up to and with "# List of Benchmarks to run:", benchmark names, {(name, mode):
    block lines from the bar to the last row}, closing lines after the last block)."""
    i = lines.index("# List of Benchmarks to run:") + 1
    pre = lines[:i]
    assert lines[i] == ""
    j = i + 1
    names = []
    while lines[j].startswith("# "):
        names.append(lines[j][2:])
        j += 1
    blocks, tail = {}, []
    while j < len(lines):
        assert lines[j] == "", (j, lines[j])
        if not lines[j + 1].startswith("#-"):
            tail = lines[j:]
            break
        k = j + 1
        while k < len(lines) and lines[k] != "":
            k += 1
        blk = lines[j + 1:k]
        name = blk[1][len("# Benchmarking "):].strip()
        mode = next((ln.split(":")[1].strip() for ln in blk if ln.startswith("#    MODE:")), None)
        blocks[(name, mode)] = blk
        j = k
    return pre, names, blocks, tail


def mask(line: str) -> str:
    """A preamble line with its value masked and its trailing blank kept."""
    trail = " " if line.endswith(" ") else ""
    for pat in (r"^(# (?:Date|Machine|System|Release|Version|MPI Version) +: ).+$",
                r"^(# MPI_Datatype(?: for reductions)? +:   )\S+ ?$", r"^(# MPI_Op +:   )\S+ *$",
                r"^(# (?:Minimum|Maximum) message length in bytes:   )\d+$"):
        m = re.match(pat, line)
        if m:
            return m.group(1) + "<v>" + (line[len(line.rstrip()):] if "MPI_Op" in pat else trail)
    return line


IMB_CASES = {   # (fixture, benchmark, mode) -> our file
    ("IMB-MPI1.txt", "PingPong", None): "imb-c/IMB-MPI1_PingPong.flush.np2.txt",
    ("IMB-MPI1.txt", "PingPing", None): "imb-c/IMB-MPI1_PingPing.flush.np2.txt",
    ("IMB-MPI1.txt", "Uniband", None): "imb-c/IMB-MPI1_Uniband.flush.np2.txt",
    ("IMB-MPI1.txt", "Biband", None): "imb-c/IMB-MPI1_Biband.flush.np2.txt",
    ("IMB-MPI1.txt", "Sendrecv", None): "imb-c/IMB-MPI1_Sendrecv.flush.np2.txt",
    ("IMB-MPI1.txt", "Exchange", None): "imb-c/IMB-MPI1_Exchange.flush.np2.txt",
    ("IMB-MPI1.txt", "Allreduce", None): "imb-c/IMB-MPI1_Allreduce.flush.np2.txt",
    ("IMB-MPI1.txt", "Barrier", None): "imb-c/IMB-MPI1_Barrier.flush.np2.txt",
    ("IMB-NBC.txt", "Iallreduce", None): "imb-c/IMB-NBC_Iallreduce.flush.np2.txt",
    ("IMB-NBC.txt", "Ibarrier", None): "imb-c/IMB-NBC_Ibarrier.flush.np2.txt",
    ("IMB-RMA.txt", "Unidir_put", "NON-AGGREGATE"): "imb-c/IMB-RMA_Unidir_put.flush.np2.txt",
    ("IMB-RMA.txt", "Unidir_put", "AGGREGATE"): "imb-c/IMB-RMA_Unidir_put_aggregate.flush.np2.txt",
    ("IMB-RMA.txt", "Unidir_get", "NON-AGGREGATE"): "imb-c/IMB-RMA_Unidir_get.flush.np2.txt",
    ("IMB-RMA.txt", "Unidir_get", "AGGREGATE"): "imb-c/IMB-RMA_Unidir_get_aggregate.flush.np2.txt",
    ("IMB-MPI4.txt", "Allreduce_persist_pure", None): "imb-c/IMB-MPI4_Allreduce_persist_pure.flush.np2.txt",
    ("IMB-MPI4.txt", "Barrier_persist_pure", None): "imb-c/IMB-MPI4_Barrier_persist_pure.flush.np2.txt",
    ("IMB-MPI1.txt", "PingPong", "kind"): "imb-p/IMB-MPI1_PingPong.default.np2.txt",
}


def test_every_recorded_imb_benchmark_has_a_case():
    for f in PEERS.glob("IMB-*.txt"):
        _, names, blocks, _ = split_imb(_read(f))
        for name, mode in blocks:
            assert (f.name, name, mode) in IMB_CASES, (f.name, name, mode)


@pytest.mark.parametrize("case", sorted(IMB_CASES, key=str))
def test_imb_layout_as_imb_prints_it(exported, case):
    fixture, name, mode = case
    t_pre, t_names, t_blocks, t_tail = split_imb(_read(PEERS / fixture))
    ours = _read(exported / IMB_CASES[case])
    o_pre, o_names, o_blocks, o_tail = split_imb(ours)
    # the calling-sequence line: ours names what wrote it; IMB's trailing blank of that part is kept
    k = t_pre.index("# Calling sequence was: ") + 2
    assert o_pre[k].startswith("# mpitempo export") and o_pre[k].endswith(" ") == t_pre[k].endswith(" ")
    o_pre[k], t_pre[k] = "# <cmd>", "# <cmd>"
    assert [mask(x) for x in o_pre] == [mask(x) for x in t_pre]
    assert o_names == [name] and name in t_names
    (key, ob), = o_blocks.items()
    tb = t_blocks[(name, None if mode == "kind" else mode)]
    nhead = next(i for i, ln in enumerate(tb) if not ln.startswith("#") and "#bytes" not in ln
                 and "#repetitions" not in ln)
    assert ob[:nhead] == tb[:nhead]                    # bars, name, processes, mode, column header
    assert {tuple(shape(r)) for r in ob[nhead:]} == {tuple(shape(r)) for r in tb[nhead:]}
    assert t_tail == ["", "", "# All processes entering MPI_Finalize", "", ""]
    assert o_tail[-5:] == t_tail and o_tail[0] == ""
    notes = o_tail[1:-5]
    assert notes[0].startswith("# mpitempo ") and all(n.startswith("#") for n in notes if n)


def test_imb_datatypes_are_the_ones_used(exported):
    pre = _read(exported / "imb-c/IMB-MPI1_Allreduce.flush.np2.txt")
    assert "# MPI_Datatype                   :   MPI_CHAR " in pre
    assert "# MPI_Datatype for reductions    :   MPI_SIGNED_CHAR " in pre
    assert "#   IMB Allreduce: reduces MPI_SIGNED_CHAR (MPI_FLOAT)" in pre


def test_reframe_reads_osu_latency_of_the_ping_pong_kind(cli, exported):
    """hpctestlib's osu_latency check: ``extractsingle(rf'^{size}\\s+(\\S+)', stdout, 1, float)``, the
    median of the run medians of pingpong-loop (osu_latency's loop) and of pingpong rounded as OSU."""
    sn = pytest.importorskip("reframe.utility.sanity", reason="reframe-hpc is not installed (pip install '.[test]')")
    code, out, err = cli("summary", exported / "pp", "--json")
    assert code == 0, err
    med = {(r["op"], r["msize"]): r["median_s"] for r in json.loads(out)}
    for op, name in (("pingpong-loop", "osu_latency"), ("pingpong", "osu_latency-pingpong")):
        f = str(exported / "osu-p" / f"{name}.default.np2.txt")
        for size in (0, 8, 1024):
            assert sn.evaluate(sn.assert_found(rf"^{size}", f))
            assert sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)", f, 1, float)) == round(med[(op, size)] * 1e6, 2)
