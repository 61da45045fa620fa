"""Reading one run of mpitempo-pingpong: DIR/meta.json + DIR/timings.csv, or
the JSON document the C core prints without --outdir (ticks inline)."""
from __future__ import annotations

import csv
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


def load_document(doc: dict) -> Run:
    """The JSON document printed on stdout (ticks inline)."""
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


def load_dir(d: str | Path) -> Run:
    """DIR/meta.json + DIR/timings.csv (columns kind,msize,npp,trial,ticks,time_s)."""
    d = Path(d)
    mp, cp = d / "meta.json", d / "timings.csv"
    if not mp.exists() or not cp.exists():
        raise MtError(f"'{d}' is not a complete ping-pong run: it needs meta.json and timings.csv")
    from mpitempo.io.rundir import load_meta

    meta = load_meta(mp)
    run = Run(meta=meta)
    _index(meta, run)
    groups: dict[tuple[str, int, int], list[int]] = {}
    with open(cp, newline="") as f:
        rd = csv.reader(f)
        header = next(rd, None)
        if header[:5] != ["kind", "msize", "npp", "trial", "ticks"]:
            raise MtError(f"'{cp}' does not have the columns kind,msize,npp,trial,ticks,time_s")
        for row in rd:
            groups.setdefault((row[0], int(row[1]), int(row[2])), []).append(int(row[4]))
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
    return load_document(doc)
