"""Hostile directories of the kinds whose files the measurement query reads by column position
(pingpong: timings.csv, logp: logp.csv): `summary` (also compare, report, export: one store) and
`pingpong --from` read every complete run through the strict reader of io/kindcsv.py first. Each
damage is one line naming the file (and line), the value and what is allowed; exit 2."""
from __future__ import annotations

import json
import os

import pytest

SPT = 1e-9


def _pp_row(kind, msize, npp, trial, ticks):
    return f"{kind},{msize},{npp},{trial},{ticks},{ticks * SPT / (2.0 * npp)!r}"


def _pp_campaign(root, nrows=20):
    d = root / "runs" / "a-000"
    d.mkdir(parents=True)
    (root / "campaign.toml").write_text('kind = "pingpong"\nname = "p"\n[[config]]\nname = "a"\n')
    meta = {"kind": "pingpong", "config": "a", "nprocs": 2, "pingpong": {"source": 0, "dest": 1, "ntrial": 20, "npp": None, "npp_sweep": None, "npp_init": 1,
                                                                  "npptrial": 10, "res_npp": 100.0},
            "timer": {"name": "clock_gettime", "s_per_tick": SPT,
                      "study": {"n": 100, "seconds": 0.1, "res_timing_s": 2e-8, "min_ov_s": 1e-8,
                                "freq": [[20, 90], [21, 10]]}},
            "results": [{"msize": 8, "npp_estimate": {"npp_calculated": 1, "median_ppt_s": 1e-6}}]}
    (d / "meta.json").write_text(json.dumps(meta))
    rows = [_pp_row("pingpong", 8, 1, i, 1000 + i) for i in range(nrows)]
    (d / "timings.csv").write_text("kind,msize,npp,trial,ticks,time_s\n" + "\n".join(rows) + "\n")
    return d


def _lp_campaign(root, nrows=20):
    d = root / "runs" / "a-000"
    d.mkdir(parents=True)
    (root / "campaign.toml").write_text('kind = "logp"\nname = "l"\n[[config]]\nname = "a"\n')
    (d / "meta.json").write_text(json.dumps({"kind": "logp", "config": "a", "nprocs": 2, "logp": {"L_s": 1e-6}}))
    rows = [f"0,1,rtt,{i},{2e-6 + i * 1e-9!r}" for i in range(nrows)]
    (d / "logp.csv").write_text("rank_a,rank_b,quantity,rep,value_s\n" + "\n".join(rows) + "\n")
    return d


def _edit(name, fn):
    def f(d):
        p = d / name
        p.write_text("\n".join(fn(p.read_text().split("\n")[:-1])) + "\n")
    return f


def _row(name, row, line):     # line number `row` (1: the header) replaced
    return _edit(name, lambda ls: ls[:row - 1] + [line] + ls[row:])


def _write(name, text):
    return lambda d: (d / name).write_text(text)


def _fifo(name):
    def f(d):
        (d / name).unlink()
        os.mkfifo(d / name)
    return f


def _link(name):
    def f(d):
        (d / "elsewhere.csv").write_text((d / name).read_text())
        (d / name).unlink()
        (d / name).symlink_to(d / "elsewhere.csv")
    return f


def _meta(**keys):
    def f(d):
        m = json.loads((d / "meta.json").read_text())
        for k, v in keys.items():
            a, _, b = k.partition(".")
            if b:
                m[a][b] = v
            elif v is None:
                m.pop(a)
            else:
                m[a] = v
        (d / "meta.json").write_text(json.dumps(m))
    return f


T = "timings.csv"
PP_HOSTILE = {
    # columns reordered: DuckDB read time_s as ticks (a median of 0: silently wrong)
    "swapped-columns": (_edit(T, lambda ls: [",".join(x.split(",")[:4] + x.split(",")[5:] + [x.split(",")[4]])
                                             for x in ls]),
                        "timings.csv':1: header has the columns in another order"),
    "values-swapped": (_row(T, 2, "pingpong,8,1,0,5e-07,1000"), "timings.csv':2: column ticks is '5e-07'"),
    "renamed-column": (_row(T, 1, "kind,msize,npp,trial,cycles,time_s"), "timings.csv':1: header is"),
    "time-disagrees": (_row(T, 2, "pingpong,8,1,0,1000,0.5"), "timings.csv':2: time_s is 0.5, but ticks"),
    "empty": (_write(T, ""), "timings.csv' is empty: expected the header"),
    "header-only": (_write(T, "kind,msize,npp,trial,ticks,time_s\n"), "timings.csv' has only its header"),
    "cut-mid-line": (lambda d: (d / T).write_text((d / T).read_text()[:-7]), "the file is cut short"),
    "nan": (_row(T, 3, "pingpong,8,1,1,1001,nan"), "timings.csv':3: column time_s is 'nan'"),
    "inf": (_row(T, 3, "pingpong,8,1,1,1001,1e999"), "timings.csv':3: time_s is '1e999', expected a finite"),
    "negative-msize": (_row(T, 2, _pp_row("pingpong", -8, 1, 0, 1000)), "timings.csv':2: msize is -8"),
    "npp-zero": (_row(T, 2, "pingpong,8,0,0,1000,5e-07"), "timings.csv':2: npp is 0, expected an integer >= 1"),
    "huge-int": (_row(T, 2, "pingpong,8,1,0,99999999999999999999,5e-07"), "column ticks is '99999999999999999999'"),
    "unknown-kind": (_row(T, 2, _pp_row("\x1b[2Jping", 8, 1, 0, 1000)), "column kind is '\\x1b[2Jping'"),
    "duplicated": (_edit(T, lambda ls: ls + [ls[1]]), "timings.csv':22: timing (pingpong, msize 8, npp 1, trial 0) "
                                                      "repeats line 2"),
    "fifo": (_fifo(T), "timings.csv': it is a FIFO"),
    "symlink": (_link(T), "timings.csv': it is a symbolic link"),
    "meta-no-timer": (_meta(timer=None), "timer is missing, expected an object with s_per_tick"),
    "meta-spt-string": (_meta(**{"timer.s_per_tick": "1e-9"}), "timer.s_per_tick is '1e-9', expected a finite "
                                                               "number > 0"),
    "meta-spt-zero": (_meta(**{"timer.s_per_tick": 0}), "timer.s_per_tick is 0, expected a finite number > 0"),
    "meta-nprocs-1": (_meta(nprocs=1), "nprocs is 1, expected an integer >= 2"),
    "meta-other-kind": (_meta(kind="tree"), "is a run of kind 'tree', not of mpitempo pingpong"),
}

L = "logp.csv"
LP_HOSTILE = {
    # columns reordered: DuckDB read rep as value_s (a median of 9.5 s: silently wrong)
    "swapped-columns": (_edit(L, lambda ls: [",".join(x.split(",")[:3] + x.split(",")[3:][::-1]) for x in ls]),
                        "logp.csv':1: header has the columns in another order"),
    "renamed-column": (_row(L, 1, "rank_a,rank_b,quantity,rep,time_s"), "logp.csv':1: header is"),
    "empty": (_write(L, ""), "logp.csv' is empty"),
    "header-only": (_write(L, "rank_a,rank_b,quantity,rep,value_s\n"), "logp.csv' has only its header"),
    "cut-mid-line": (lambda d: (d / L).write_text((d / L).read_text()[:-4]), "the file is cut short"),
    "rank-out-of-range": (_row(L, 2, "0,99999,rtt,0,2e-06"), "logp.csv':2: rank_b is 99999, not a rank of the run "
                                                             "(allowed: 0..1"),
    "negative-rank": (_row(L, 2, "-1,1,rtt,0,2e-06"), "logp.csv':2: rank_a is -1"),
    "same-ranks": (_row(L, 2, "1,1,rtt,0,2e-06"), "rank_a and rank_b are both 1"),
    "nan": (_row(L, 2, "0,1,rtt,0,nan"), "logp.csv':2: column value_s is 'nan'"),
    "huge": (_row(L, 2, "0,1,rtt,0,1e300"), "logp.csv':2: value_s is '1e300', expected a finite time"),
    "unknown-quantity": (_row(L, 2, "0,1,L,0,2e-06"), "quantity is 'L', expected one of rtt"),
    "negative-rep": (_row(L, 2, "0,1,rtt,-3,2e-06"), "rep is -3, expected an integer >= 0"),
    "duplicated": (_edit(L, lambda ls: ls + [ls[1]]), "logp.csv':22: timing (ranks 0-1, rtt, rep 0) repeats line 2"),
    "fifo": (_fifo(L), "logp.csv': it is a FIFO"),
    "symlink": (_link(L), "logp.csv': it is a symbolic link"),
    "meta-nprocs-string": (_meta(nprocs="2"), "key 'nprocs' is str"),
    "meta-nprocs-missing": (_meta(nprocs=None), "nprocs is missing, expected an integer >= 2"),
}


def _one_line(code, err, msg, case):
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (case, err)


def test_sound_campaigns_are_summarised(cli, tmp_path):
    _pp_campaign(tmp_path / "pp")
    _lp_campaign(tmp_path / "lp")
    code, out, err = cli("summary", tmp_path / "pp", "--json")
    assert code == 0, err
    r = json.loads(out)[0]
    assert r["op"] == "pingpong" and r["median_s"] == pytest.approx(1009.5 * SPT / 2)
    code, out, err = cli("summary", tmp_path / "lp", "--json")
    assert code == 0, err
    r = json.loads(out)[0]
    assert r["op"] == "logp:rtt" and r["median_s"] == pytest.approx(2e-6 + 9.5e-9)
    code, out, err = cli("pingpong", "--from", tmp_path / "pp", "--json")
    assert code == 0, err


@pytest.mark.parametrize("case", sorted(PP_HOSTILE))
def test_summary_of_a_hostile_pingpong_campaign(cli, tmp_path, case):
    damage, msg = PP_HOSTILE[case]
    camp = tmp_path / "c"
    damage(_pp_campaign(camp))
    code, out, err = cli("summary", camp)
    _one_line(code, err, msg, case)


@pytest.mark.parametrize("case", sorted(PP_HOSTILE))
def test_pingpong_from_a_hostile_campaign(cli, tmp_path, case):
    damage, msg = PP_HOSTILE[case]
    camp = tmp_path / "c"
    damage(_pp_campaign(camp))
    code, out, err = cli("pingpong", "--from", camp)
    _one_line(code, err, msg, case)


@pytest.mark.parametrize("case", sorted(LP_HOSTILE))
def test_summary_of_a_hostile_logp_campaign(cli, tmp_path, case):
    damage, msg = LP_HOSTILE[case]
    camp = tmp_path / "c"
    damage(_lp_campaign(camp))
    code, out, err = cli("summary", camp)
    _one_line(code, err, msg, case)


PP_META_HOSTILE = {
    "study-missing": (_meta(**{"timer.study": None}), "timer.study is missing, expected an object"),
    "study-n-string": (_meta(**{"timer.study": {"n": "x", "seconds": 1, "res_timing_s": 0, "min_ov_s": 0}}),
                       "timer.study.n is 'x', expected a finite number >= 0"),
    "freq-not-pairs": (_meta(**{"timer.study": {"n": 1, "seconds": 1, "res_timing_s": 0, "min_ov_s": 0,
                                                "freq": [[1, 2, 3]]}}), "timer.study.freq is"),
    "results-not-list": (_meta(results={"msize": 8}), "results is {'msize': 8}, expected a list of objects"),
    "results-msize-string": (_meta(results=[{"msize": "8"}]), "results[0].msize is '8', expected an integer >= 0"),
    "no-pingpong-object": (_meta(pingpong=None), "pingpong is missing, expected an object"),
    "res-npp-string": (_meta(pingpong={"source": 0, "dest": 1, "ntrial": 20, "npp_init": 1, "npptrial": 10,
                                       "res_npp": "100"}), "pingpong.res_npp is '100', expected a finite number"),
    "dest-out-of-range": (_meta(pingpong={"source": 0, "dest": 7}), "pingpong.dest is 7, expected a rank of the run "
                                                                    "(0..1"),
    "timer-name-number": (_meta(**{"timer.name": 3}), "timer.name is 3, expected a string"),
    "npp-calculated-string": (_meta(results=[{"msize": 8, "npp_estimate": {"npp_calculated": "1"}}]),
                              "results[0].npp_estimate.npp_calculated is '1', expected a finite number"),
    "results-estimate-list": (_meta(results=[{"msize": 8, "npp_estimate": [1]}]),
                              "results[0].npp_estimate is [1], expected an object"),
}


@pytest.mark.parametrize("case", sorted(PP_META_HOSTILE))
def test_pingpong_from_a_meta_of_another_shape(cli, tmp_path, case):
    """What the analysis of `pingpong --from` reads of meta.json beyond the timings: a traceback before."""
    damage, msg = PP_META_HOSTILE[case]
    camp = tmp_path / "c"
    damage(_pp_campaign(camp))
    code, out, err = cli("pingpong", "--from", camp)
    _one_line(code, err, msg, case)


def _clocks_campaign(root, nprocs=3):
    d = root / "runs" / "a-000"
    d.mkdir(parents=True)
    (root / "campaign.toml").write_text('kind = "clocks"\nname = "c"\n[[config]]\nname = "a"\n')
    (d / "meta.json").write_text(json.dumps({"kind": "clocks", "config": "a", "nprocs": nprocs}))
    rows = [{"algorithm": alg, "spec": alg, "nprocs": nprocs, "wait_s": w, "sync_duration_s": 0.01,
             "max_abs_offset_s": 2e-6, "median_abs_offset_s": 1e-6,
             "per_rank": [{"rank": q, "offset_s": 1e-6 * q, "drift_ppm": 0.1 * q} for q in range(nprocs)]}
            for alg in ("hca3", "skampi") for w in (0, 1)]
    (d / "clocks.json").write_text(json.dumps(rows))
    return d


def _clk(fn):
    def f(d):
        rows = json.loads((d / "clocks.json").read_text())
        fn(rows)
        (d / "clocks.json").write_text(json.dumps(rows))
    return f


def _set(i, key, v):
    def f(rows):
        if v is None:
            rows[i].pop(key)
        else:
            rows[i][key] = v
    return _clk(f)


CLOCKS_HOSTILE = {
    # a spec and wait time twice: counted as a second mpirun in the medians
    "duplicated-object": (_clk(lambda rows: rows.append(dict(rows[0]))), "[4] repeats [0] (algorithm 'hca3', wait 0 s)"),
    "empty-array": (_clk(lambda rows: rows.clear()), "is damaged: an empty array"),
    "no-algorithm": (_set(1, "algorithm", None), "[1].algorithm is missing, expected a non-empty string"),
    "algorithm-number": (_set(1, "algorithm", 3), "[1].algorithm is 3, expected a non-empty string"),
    "wait-string": (_set(0, "wait_s", "0"), "[0].wait_s is '0', expected a finite number >= 0"),
    "negative-duration": (_set(0, "sync_duration_s", -1), "[0].sync_duration_s is -1, expected a finite number >= 0"),
    "offset-missing": (_set(2, "max_abs_offset_s", None), "[2].max_abs_offset_s is missing"),
    "per-rank-not-list": (_set(0, "per_rank", {"rank": 1}), "[0].per_rank is {'rank': 1}, expected a list of objects"),
    "rank-out-of-range": (_clk(lambda rows: rows[0]["per_rank"][1].update(rank=99)),
                          "[0].per_rank[1].rank is 99, expected a rank of the run, 0..2, each once"),
    "rank-twice": (_clk(lambda rows: rows[0]["per_rank"][2].update(rank=1)), "[0].per_rank[2].rank is 1"),
    "drift-string": (_clk(lambda rows: rows[0]["per_rank"][1].update(drift_ppm="x")),
                     "[0].per_rank[1].drift_ppm is 'x', expected a finite number"),
    "not-objects": (_clk(lambda rows: rows.append(1)), "is not a JSON array of objects"),
}


@pytest.mark.parametrize("cmd", ["summary", "report"])
@pytest.mark.parametrize("case", sorted(CLOCKS_HOSTILE))
def test_summary_of_a_hostile_clocks_campaign(cli, tmp_path, case, cmd):
    """clocks.json was read key by key without a check: a missing key a KeyError traceback, a string a
    TypeError traceback, an object twice counted as another mpirun."""
    damage, msg = CLOCKS_HOSTILE[case]
    camp = tmp_path / "c"
    damage(_clocks_campaign(camp))
    args = ["-o", tmp_path / "r.html"] if cmd == "report" else []
    code, out, err = cli(cmd, camp, *args)
    _one_line(code, err, msg, case)
    assert not (tmp_path / "r.html").exists()


def test_clocks_algorithm_names_are_shown_escaped(cli, tmp_path):
    """An algorithm name with an ESC and a bidi override: escaped in the table and in the HTML report
    (html.escape kept the raw control characters)."""
    camp = tmp_path / "c"
    _clocks_campaign(camp)
    _set(0, "algorithm", "hca3\x1b]0;pwned\x07\u202e")(camp / "runs" / "a-000")
    code, out, err = cli("summary", camp)
    assert code == 0, err
    assert "\x1b]0" not in out and "\\x1b]0;pwned\\x07\\u202e" in out
    code, out, err = cli("report", camp, "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "\x1b" not in page and "\u202e" not in page and "\x07" not in page and "hca3\\x1b]0;pwned" in page


def _pr_edit(fn):
    """Rewrite perrank.bin of the first run: fn(header words (list), records (list of lists)) in place."""
    import struct

    def f(root):
        p = root / "runs" / "default-000" / "perrank.bin"
        raw = bytearray(p.read_bytes())
        hdr = list(struct.unpack_from("<6I2Q", raw, 8))
        n, nmeas = hdr[2], hdr[6]
        recs = [list(struct.unpack_from(f"<4I{2 * n}d", raw, 48 + i * (16 + 16 * n))) for i in range(nmeas)]
        fn(hdr, recs)
        n = hdr[2]
        out = bytes(raw[:8]) + struct.pack("<6I2Q", *hdr)
        out += b"".join(struct.pack(f"<4I{len(r) - 4}d", *r) for r in recs)
        p.write_bytes(out)
    return f


def _pr_fifo(root):
    p = root / "runs" / "default-000" / "perrank.bin"
    p.unlink()
    os.mkfifo(p)


def _pr_link(root):
    p = root / "runs" / "default-000" / "perrank.bin"
    (root / "elsewhere.bin").write_bytes(p.read_bytes())
    p.unlink()
    p.symlink_to(root / "elsewhere.bin")


def _set_rec(i, j, v):
    def f(hdr, recs):
        recs[i][j] = v
    return _pr_edit(f)


def _other_nprocs(hdr, recs):   # a perrank.bin of a 1-rank run: each record keeps rank 0's start and end
    hdr[2], hdr[7] = 1, 32
    for r in recs:
        n = (len(r) - 4) // 2
        r[:] = r[:5] + [r[4 + n]]


PERRANK_HOSTILE = {
    # a FIFO in place of perrank.bin: `summary --process` blocked on it for ever
    "fifo": (_pr_fifo, "perrank.bin': it is a FIFO"),
    "symlink": (_pr_link, "perrank.bin': it is a symbolic link"),
    "nan-time": (_set_rec(1, 5, float("nan")), "record 1 (exp 0, rep 1) has a time that is not finite"),
    "inf-time": (_set_rec(2, 7, float("inf")), "record 2 (exp 0, rep 2) has a time that is not finite"),
    "end-before-start": (_set_rec(0, 6, -5.0), "record 0 (exp 0, rep 0) has rank 0 ending before it started"),
    "valid-7": (_set_rec(3, 2, 7), "record 3 (exp 0, rep 3) has valid 7, expected 0 or 1"),
    "padding": (_set_rec(0, 3, 9), "record 0 (exp 0, rep 0) has 9 in its padding"),
    "duplicated-record": (_set_rec(1, 1, 0), "record 1 (exp 0, rep 0) repeats an earlier record"),
    "zero-ranks": (_pr_edit(lambda hdr, recs: (hdr.__setitem__(2, 0), hdr.__setitem__(7, 16), recs.__setitem__(
        slice(None), [r[:4] for r in recs]))), "header of 48 bytes for 0 ranks"),
    "other-run-nprocs": (_pr_edit(_other_nprocs), "has 1 ranks, but its run's meta.json says 2"),
}


@pytest.mark.parametrize("cmd", ["process", "export-osu"])
@pytest.mark.parametrize("case", sorted(PERRANK_HOSTILE))
def test_summary_process_of_a_hostile_perrank_file(cli, tmp_path, case, cmd):
    """`summary --process` reads perrank.bin, an optional file that find_runs does not check: it was
    opened through links, blocked on a FIFO, and its NaN times, duplicated records or another run's
    rank count were processed as sound."""
    from test_processing import make_campaign

    damage, msg = PERRANK_HOSTILE[case]
    root = make_campaign(tmp_path / "c")
    damage(root)
    if cmd == "export-osu":
        if case == "other-run-nprocs":
            msg = "does not match its run 'default-000': 4 records of 1 ranks"
        code, out, err = cli("export", root, "--osu", tmp_path / "osu")
        assert not (tmp_path / "osu").exists()
    else:
        code, out, err = cli("summary", root, "--process", "ps3_osu")
    _one_line(code, err, msg, case)


def _pp_document(path):
    """A JSON document as the core prints without --outdir (ticks inline), from the synthetic run."""
    d = _pp_campaign(path.parent / "src")
    doc = json.loads((d / "meta.json").read_text())
    doc["results"][0]["sets"] = [{"npp": 1, "ticks": [1000 + i for i in range(20)]}]
    doc["results"][0]["npp_estimate"].update(npp_init=1, npp_estimate_used=1, ticks=[900, 901, 902])
    doc["results"][0]["loop"] = {"iters": 10, "skip": 1, "ticks": [20000, 20100]}
    path.write_text(json.dumps(doc))
    return doc


def _doc(fn):
    def f(path):
        doc = json.loads(path.read_text())
        fn(doc)
        path.write_text(json.dumps(doc))
    return f


DOC_HOSTILE = {
    "no-timer": (_doc(lambda d: d.pop("timer")), "timer is missing, expected an object with s_per_tick"),
    "other-kind": (_doc(lambda d: d.update(kind="clocks")), "kind is 'clocks', expected 'pingpong'"),
    "results-number": (_doc(lambda d: d.update(results=5)), "results is 5, expected a list of objects"),
    "msize-string": (_doc(lambda d: d["results"][0].update(msize="x")), "results[0].msize is 'x', expected an integer"),
    "ticks-strings": (_doc(lambda d: d["results"][0]["sets"][0].update(ticks=["a"])),
                      "results[0].sets[0].ticks is ['a'], expected a list of integers"),
    "npp-zero": (_doc(lambda d: d["results"][0]["sets"][0].update(npp=0)),
                 "results[0].sets[0].npp is 0, expected an integer >= 1"),
    "sets-object": (_doc(lambda d: d["results"][0].update(sets={"npp": 1})), "results[0].sets is {'npp': 1}"),
    "loop-iters-missing": (_doc(lambda d: d["results"][0]["loop"].pop("iters")),
                           "results[0].loop.iters is missing, expected an integer >= 1"),
    "estimate-ticks-float": (_doc(lambda d: d["results"][0]["npp_estimate"].update(ticks=[1.5])),
                             "results[0].npp_estimate.ticks is [1.5], expected a list of integers"),
    "nprocs-string": (_doc(lambda d: d.update(nprocs="2")), "nprocs is '2', expected an integer >= 2"),
}


@pytest.mark.parametrize("case", sorted(DOC_HOSTILE))
def test_pingpong_from_a_hostile_json_document(cli, tmp_path, case):
    """`pingpong --from FILE.json` (the document printed without --outdir): KeyError, ValueError and
    TypeError tracebacks before."""
    p = tmp_path / "doc.json"
    _pp_document(p)
    code, out, err = cli("pingpong", "--from", p, "--json")
    assert code == 0, err
    damage, msg = DOC_HOSTILE[case]
    damage(p)
    code, out, err = cli("pingpong", "--from", p)
    _one_line(code, err, msg, case)
