"""Reading one run of mpitempo-pingpong: DIR/meta.json + DIR/timings.csv, or
the JSON document the C core prints without --outdir (ticks inline)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mpitempo.errors import MtError


@dataclass
class Series:
    """Raw timings of one kind for one message size: ticks of whole loops of
    `npp` ping-pongs (min_ov already subtracted for 'pingpong' and 'estimate')."""
    kind: str          # "pingpong", "estimate" or "loop"
    msize: int
    npp: int
    ticks: np.ndarray

    def one_way_s(self, s_per_tick: float) -> np.ndarray:
        return self.ticks.astype(float) * s_per_tick / (2.0 * self.npp)


@dataclass
class Run:
    meta: dict
    series: list[Series] = field(default_factory=list)
    estimates: dict = field(default_factory=dict)   # msize -> npp_estimate object of the C core
    loops: dict = field(default_factory=dict)       # msize -> loop object (iters, skip, reps)

    @property
    def s_per_tick(self) -> float:
        return float(self.meta["timer"]["s_per_tick"])

    def get(self, kind: str, msize: int | None = None) -> list[Series]:
        return [s for s in self.series if s.kind == kind and (msize is None or s.msize == msize)]


def _index(meta: dict, run: Run) -> None:
    if meta.get("kind") != "pingpong":
        raise MtError("not a mpitempo-pingpong result (meta.json 'kind' is not 'pingpong')")
    for r in meta.get("results", []):
        m = int(r["msize"])
        run.estimates[m] = r.get("npp_estimate", {})
        if r.get("loop"):
            run.loops[m] = r["loop"]


def _check_document(doc: dict, path) -> None:
    """A JSON document of the core (ticks inline), of the shape the analysis reads: kind pingpong,
    meta.json's keys (_check_analysis_meta), and per result integer lists of ticks with npp >= 1."""
    from mpitempo.io.kindcsv import _meta_num, _nprocs
    from mpitempo.safe_text import safe

    def bad(key, v, want):
        shown = "missing" if v is None else safe(repr(v))[:60]
        return MtError(f"'{path}' is damaged: {key} is {shown}, expected {want}")

    def ints(v) -> bool:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < 2 ** 63
                                           for x in v)

    def pos(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if doc.get("kind") != "pingpong":
        raise bad("kind", doc.get("kind"), "'pingpong' (a document of mpitempo-pingpong)")
    if doc.get("nprocs") is not None:
        _nprocs(doc, path)
    if not isinstance(doc.get("timer"), dict):
        raise bad("timer", doc.get("timer"), "an object with s_per_tick")
    _meta_num(doc, path, "timer", "s_per_tick", lo_exclusive=0.0)
    _check_analysis_meta(doc, path)
    for i, r in enumerate(doc.get("results", [])):
        est = r.get("npp_estimate") or {}
        if "ticks" in est:
            if not ints(est["ticks"]):
                raise bad(f"results[{i}].npp_estimate.ticks", est["ticks"], "a list of integers")
            npp = est.get("npp_estimate_used", est.get("npp_init"))
            if not pos(npp):
                raise bad(f"results[{i}].npp_estimate.npp_estimate_used", npp, "an integer >= 1")
        sets = r.get("sets", [])
        if not isinstance(sets, list) or not all(isinstance(x, dict) for x in sets):
            raise bad(f"results[{i}].sets", sets, "a list of objects (npp, ticks)")
        for j, st in enumerate(sets):
            if not pos(st.get("npp")):
                raise bad(f"results[{i}].sets[{j}].npp", st.get("npp"), "an integer >= 1")
            if not ints(st.get("ticks", [])):
                raise bad(f"results[{i}].sets[{j}].ticks", st.get("ticks"), "a list of integers")
        lp = r.get("loop") or {}
        if "ticks" in lp:
            if not pos(lp.get("iters")):
                raise bad(f"results[{i}].loop.iters", lp.get("iters"), "an integer >= 1")
            if not ints(lp["ticks"]):
                raise bad(f"results[{i}].loop.ticks", lp["ticks"], "a list of integers")


def load_document(doc: dict, path="the document") -> Run:
    """The JSON document printed on stdout (ticks inline), checked (_check_document)."""
    _check_document(doc, path)
    run = Run(meta=doc)
    _index(doc, run)
    for r in doc.get("results", []):
        m = int(r["msize"])
        est = r.get("npp_estimate") or {}
        if "ticks" in est:
            run.series.append(Series("estimate", m, int(est.get("npp_estimate_used", est["npp_init"])), np.asarray(est["ticks"], dtype=np.int64)))
        for s in r.get("sets", []):
            run.series.append(Series("pingpong", m, int(s["npp"]), np.asarray(s.get("ticks", []), dtype=np.int64)))
        if r.get("loop") and "ticks" in r["loop"]:
            lp = r["loop"]
            run.series.append(Series("loop", m, int(lp["iters"]), np.asarray(lp["ticks"], dtype=np.int64)))
    return run


def _check_analysis_meta(meta: dict, mp: Path) -> None:
    """The keys of meta.json the analysis reads (timer.name, timer.study, results[].msize), of their
    types: a meta.json from someone else with another shape is one line, not a traceback."""
    import math

    from mpitempo.safe_text import safe

    def bad(key, v, want):
        shown = "missing" if v is None else safe(repr(v))[:60]
        return MtError(f"'{mp}' is damaged: {key} is {shown}, expected {want}")

    timer = meta["timer"]
    if not isinstance(timer.get("name"), str):
        raise bad("timer.name", timer.get("name"), "a string (the timer's name)")
    pp = meta.get("pingpong")
    if not isinstance(pp, dict):
        raise bad("pingpong", pp, "an object (the run's parameters: source, dest, ...)")
    n = meta.get("nprocs")   # (checked by the callers when present: an integer >= 2)
    for k in ("source", "dest"):
        v = pp.get(k)
        if not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v and (n is None or v < n)):
            raise bad(f"pingpong.{k}", v, f"a rank of the run (0..{n - 1}; meta.json: {n} ranks)" if n is not None
                      else "a rank (an integer >= 0)")
    if pp["source"] == pp["dest"]:
        raise bad("pingpong.dest", pp["dest"], "a rank other than the source")
    for k in ("npp_init", "npptrial", "ntrial", "npp"):
        v = pp.get(k)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0) and not (k == "npp" and v is None):
            raise bad(f"pingpong.{k}", v, "an integer >= 0" + (" or null" if k == "npp" else ""))
    v = pp.get("res_npp")
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
        raise bad("pingpong.res_npp", v, "a finite number")
    v = pp.get("npp_sweep")
    if v is not None and not (isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)):
        raise bad("pingpong.npp_sweep", v, "a list of integers or null")
    st = timer.get("study")
    if not isinstance(st, dict):
        raise bad("timer.study", st, "an object (the timer study)")
    for k in ("n", "seconds", "res_timing_s", "min_ov_s"):
        v = st.get(k)
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
            raise bad(f"timer.study.{k}", v, "a finite number >= 0")
    freq = st.get("freq", [])
    if not isinstance(freq, list) or not all(isinstance(x, list) and len(x) == 2 and
                                             all(isinstance(y, int) and not isinstance(y, bool) for y in x)
                                             for x in freq):
        raise bad("timer.study.freq", freq, "a list of [ticks, count] integer pairs")
    res = meta.get("results", [])
    if not isinstance(res, list):
        raise bad("results", res, "a list of objects")
    for i, r in enumerate(res):
        if not isinstance(r, dict):
            raise bad(f"results[{i}]", r, "an object")
        m = r.get("msize")
        if not (isinstance(m, int) and not isinstance(m, bool) and m >= 0):
            raise bad(f"results[{i}].msize", m, "an integer >= 0")
        for k in ("npp_estimate", "loop"):
            if r.get(k) is not None and not isinstance(r[k], dict):
                raise bad(f"results[{i}].{k}", r[k], "an object")
        est = r.get("npp_estimate") or {}
        for k in ("npp_calculated", "median_ppt_s"):
            v = est.get(k)
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
                raise bad(f"results[{i}].npp_estimate.{k}", v, "a finite number")


def load_dir(d: str | Path, root: str | Path | None = None) -> Run:
    """DIR/meta.json + DIR/timings.csv (columns kind,msize,npp,trial,ticks,time_s), through the strict
    reader of io/kindcsv.py (never a link or FIFO; exact header; every value in range; no timing twice)."""
    d = Path(d)
    mp, cp = d / "meta.json", d / "timings.csv"
    if not mp.exists() or not cp.exists():
        raise MtError(f"'{d}' is not a complete ping-pong run: it needs meta.json and timings.csv")
    from mpitempo.io.kindcsv import load_timings

    meta, t = load_timings(d, root)
    _check_analysis_meta(meta, mp)
    run = Run(meta=meta)
    _index(meta, run)
    groups: dict[tuple[str, int, int], list[int]] = {}
    for kind, m, npp, ticks in zip(t["kind"], t["msize"].tolist(), t["npp"].tolist(), t["ticks"].tolist()):
        groups.setdefault((kind, m, npp), []).append(ticks)
    for (kind, m, npp), ticks in groups.items():
        run.series.append(Series(kind, m, npp, np.asarray(ticks, dtype=np.int64)))
    return run


def load(path: str | Path) -> Run:
    """A run directory, or a JSON document file."""
    p = Path(path)
    if p.is_dir():
        return load_dir(p)
    if not p.exists():
        raise MtError(f"'{p}' not found")
    from mpitempo.io.safeload import load_json

    doc = load_json(p)
    if not isinstance(doc, dict):
        raise MtError(f"'{p}' is not a JSON object (expected a ping-pong document)")
    return load_document(doc, p)
