"""Terminal tables of the derived quantities (analysis.derived): bandwidth and message rate of the
bandwidth ops, overlap of the overlap ops; printed below the times by `summary` and `compare`."""
from __future__ import annotations

from mpitempo.io.sizes import format_size, size_cell
from mpitempo.present.tables import print_fitted


def num(v, digits: int = 4) -> str:
    """3 significant digits at least, no exponent for the usual ranges: 12345.6 -> 12346, 0.5 -> 0.5."""
    if v is None:
        return "-"
    if abs(v) >= 10 ** digits:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def ci_cell(s: dict | None, digits: int = 4) -> str:
    if not s or s.get("median") is None:
        return "-"
    if s.get("lo") is None:
        return f"need >= {s.get('need_runs') or 6} runs"
    return f"{num(s['lo'], digits)}-{num(s['hi'], digits)}"


def _name(r, many: bool) -> list[str]:
    return ([r["campaign"]] if many else []) + [r["config"], r["op"], size_cell(r["op"], r["msize"]),
                                                 str(r["nprocs"]), str(r["runs"])]


def _lead(many: bool) -> list[tuple[str, str]]:
    return ([("campaign", "left")] if many else []) + [("config", "left"), ("op", "left"), ("msize", "right"),
                                                        ("nprocs", "right"), ("runs", "right")]


def print_derived(rows: list[dict], con, many: bool = False) -> None:
    """The bandwidth table (rows with bandwidth_MBps) and the overlap table (rows with overlap_pct)."""
    from mpitempo.analysis.flags import flag_cell

    bw = [r for r in rows if r.get("bandwidth_MBps")]
    if bw:
        rate = any(r.get("msg_rate_per_s") for r in bw)
        cols = _lead(many) + [("MB/s", "right"), ("95% CI [MB/s]", "right"), ("min [MB/s]", "right"),
                              ("max [MB/s]", "right")]
        if rate:
            cols += [("messages/s", "right"), ("95% CI [msg/s]", "right")]
        cells = []
        for r in bw:
            b = r["bandwidth_MBps"]
            c = _name(r, many) + [num(b["median"]), ci_cell(b), num(b["min"]), num(b["max"])]
            if rate:
                m = r.get("msg_rate_per_s")
                c += [num(m["median"], 6) if m else "-", ci_cell(m, 6) if m else "-"]
            cells.append(c)
        con.print("")
        print_fitted("bandwidth (derived from the times: bytes per call / run median)", cols, cells,
                     keep=("op", "msize", "MB/s"), drop_order=("min [MB/s]", "max [MB/s]", "runs", "nprocs"),
                     caption="MB/s = 1e6 bytes/s (OSU's and IMB's unit): per mpirun, bytes_per_call / its median "
                             "time; median over the runs with its 95% CI (distribution-free), min and max over "
                             "the runs" + ("; messages/s = msgs_per_call / run median (message rate ops)"
                                           if rate else ""), con=con)
    ov = [r for r in rows if "overlap_pct" in r]
    if ov:
        cols = _lead(many) + [("overlap", "right"), ("95% CI", "right"), ("min", "right"), ("max", "right"),
                              ("pure from", "left"), ("compute [µs]", "right"), ("target [µs]", "right"),
                              ("flags", "left")]
        cells, why = [], []
        for r in ov:
            o, c = r["overlap_pct"] or {}, r.get("compute") or {}
            pct = (lambda v: "-" if v is None else f"{v:.1f}%")
            if o.get("median") is None and o.get("why_none"):
                why.append(f"{r['config']} {r['op']} {format_size(r['msize']) if r['msize'] else 0}: no overlap "
                           f"value: {o['why_none']}")
            ci = "-" if o.get("median") is None else (f"need >= {o.get('need_runs') or 6} runs" if o.get("lo") is None
                                                     else f"{o['lo']:.1f}-{o['hi']:.1f}%")
            cells.append(_name(r, many) + [pct(o.get("median")), ci, pct(o.get("min")), pct(o.get("max")),
                                           o.get("pure_source") or "-",
                                           num(c["median_s"] * 1e6) if c.get("median_s") is not None else "-",
                                           num(c["target_s"] * 1e6) if c.get("target_s") is not None else "-",
                                           flag_cell([f for f in r.get("flags", []) if f == "compute_miscalibrated"])])
        con.print("")
        print_fitted("overlap of communication and computation (OSU's definition)", cols, cells,
                     keep=("op", "msize", "overlap", "flags"), drop_order=("min", "max", "target [µs]", "runs",
                                                                           "nprocs"),
                     caption="per mpirun: max(0, 100 x (1 - (t_overall - t_compute) / t_pure)); t_overall = run median "
                             "of the overlap op, t_compute = its measured compute, t_pure = run median of the pure op "
                             "(pure from: measured) or the calibration's pure time (calibration); median over the "
                             "runs, min, max; compute-off = compute_miscalibrated", con=con)
        for w in why:
            con.print(f"note: {w}", markup=False)


def print_compare_bandwidth(c, con) -> None:
    """Both sides' MB/s and the change for the bandwidth rows of a comparison (the test is on the times)."""
    from mpitempo.analysis.comparison import BANDWIDTH_NOTE

    rows = [r for r in c.rows if r.get("bandwidth_a_MBps") is not None]
    if not rows:
        return
    cols = [("B", "left"), ("op", "left"), ("msize", "right"), ("nprocs", "right"), ("A [MB/s]", "right"),
            ("A 95% CI", "right"), ("B [MB/s]", "right"), ("B 95% CI", "right"), ("change", "right")]

    def ci(lo_hi):
        lo, hi = lo_hi
        return "need more runs" if lo is None else f"{num(lo)}-{num(hi)}"

    cells = [[r["b"], r["op"], format_size(r["msize"]) if r["msize"] else "0",
              str(r["nprocs"]) if r["nprocs"] is not None else "*", num(r["bandwidth_a_MBps"]),
              ci(r["bandwidth_ci_a_MBps"]), num(r["bandwidth_b_MBps"]), ci(r["bandwidth_ci_b_MBps"]),
              "-" if r["bandwidth_change_pct"] is None else f"{r['bandwidth_change_pct']:+.2f}%"] for r in rows]
    con.print("")
    print_fitted(f"bandwidth: {c.base} (A) vs B, derived (not tested)", cols, cells,
                 keep=("op", "msize", "A [MB/s]", "B [MB/s]", "change"), drop_order=("A 95% CI", "B 95% CI", "nprocs"),
                 caption=BANDWIDTH_NOTE, con=con)
