"""Text outputs for people: the summary (Appendix C of Luecke et al. 2009), the full
output (the summary plus the timer study, histograms and exact frequency
tables), and the tables: rate curve, npp sweep (Table 4.1) and the
comparison with the loop-averaged method. Times in µs. Pure: returns strings."""
from __future__ import annotations

import math

from mpitempo.present.definitions import definition_notes
from mpitempo.present.simulated import line
from mpitempo.present.tables import width, wrap_line


def fe(x: float, digits: int = 4) -> str:
    """Fortran E format: 0.1463E+00."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "nan"
    if x == 0:
        return f"0.{'0' * digits}E+00"
    sign = "-" if x < 0 else ""
    x = abs(x)
    e = math.floor(math.log10(x)) + 1
    m = x / 10 ** e
    if round(m, digits) >= 1.0:
        m /= 10
        e += 1
    return f"{sign}0.{int(round(m * 10 ** digits)):0{digits}d}E{e:+03d}"


def f4(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else f"{x:.4f}"


def size_label(m: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if m >= k and m % k == 0:
            return f"{m // k} {unit}"
    return f"{m} B"


def _times(lines: list[str], r: dict, title: str) -> None:
    lines += ["", title, "",
              f"  minimum time = {f4(r['min_s'] * 1e6)}",
              f"  median time  = {f4(r['median_s'] * 1e6)}",
              f"  average time = {f4(r['mean_s'] * 1e6)}",
              f"  maximum time = {f4(r['max_s'] * 1e6)}"]


def _stats(lines: list[str], r: dict, title: str) -> None:
    lines += ["", title, "",
              f"  variance                     = {fe(r['variance_s2'] * 1e12)}",
              f"  standard deviation           = {fe(r['std_s'] * 1e6)}",
              f"  coefficient of variation (%) = {fe(r['cv'] * 100)}",
              f"  standard error               = {fe(r['se_s'] * 1e6)}",
              f"  relative standard error      = {fe(r['rse'])}"]


def _rates(lines: list[str], r: dict, title: str) -> None:
    lines += ["", title, "",
              f"  communication rate using minimum time = {fe(r['rate_min_mb_s'])}",
              f"  communication rate using median time  = {fe(r['rate_median_mb_s'])}",
              f"  communication rate using average time = {fe(r['rate_mean_mb_s'])}",
              f"  communication rate using maximum time = {fe(r['rate_max_mb_s'])}"]


def header(a: dict) -> list[str]:
    p, ts = a["params"], a["timer_study"]
    npp = "estimated per message size (section 3.3)" if p.get("npp") is None else str(p["npp"])
    if p.get("npp_sweep"):
        npp = "sweep " + ",".join(str(x) for x in p["npp_sweep"])

    sim = [line(a["simulated"]), ""] if a.get("simulated") else []
    return sim + ["PROGRAM PARAMETERS", "",
            f"  Number of MPI processes used = {a['nprocs']}",
            "  Ping pongs are between processors of rank source and dest where",
            f"    source = {a['source']}", f"    dest   = {a['dest']}", "",
            f"  Timer = {ts['timer']}: resolution res_timing = {ts['res_timing_s'] * 1e6:.4f} us, "
            f"minimum overhead min_ov = {ts['min_ov_s'] * 1e6:.4f} us (subtracted from every timing)",
            f"  npp: {npp}; res_npp = {p['res_npp']:g}, npp_init = {p['npp_init']}", "",
            "  Number of timing trials used for parts 1, 2 & 3 are:", "",
            f"    nr       = {ts['n']}", f"    npptrial = {p['npptrial']}", f"    ntrial   = {p['ntrial']}"]


def set_block(r: dict) -> list[str]:
    lines = ["", "=" * 72, "",
             f"Message size (bytes) = {r['msize']}", "",
             "Number of ping pongs in a timing loop (npp):", "",
             f"  calculated value of npp = {r['npp_calculated']}", f"  value of npp used       = {r['npp']}",
             f"  timing trials           = {r['ntrial']}"]
    _times(lines, r, "TIMING RESULTS FOR PING PONG TIMES DIVIDED BY TWO IN MICROSECONDS")
    _stats(lines, r, "STATISTICS FOR PING PONG TIMES")
    _rates(lines, r, "COMMUNICATION RATE RESULTS IN MBYTES/SECOND")
    f = r["filtered"]
    lines += ["", "FILTERED DATA RESULTS", "",
              f"  filtering cut-off coefficient     = {f['cut_coef']:.4f}",
              f"  timing trials after filtering     = {f['n']}",
              f"  # of timings removed by filtering = {f['removed']}"]
    _times(lines, f, "FILTERED TIMING RESULTS FOR PING PONG TIMES DIVIDED BY TWO IN MICROSECONDS")
    _stats(lines, f, "STATISTICS FOR FILTERED TIMINGS")
    _rates(lines, f, "FILTERED COMMUNICATION RATE RESULTS IN MBYTES/SECOND")
    return lines


def histogram_lines(h: dict, title: str, scale: float = 1e6, nd: int = 3) -> list[str]:
    if not h or not h["edges"]:
        return []
    lines = ["", title, ""]
    e = h["edges"]
    for i, c in enumerate(h["counts"]):
        lines.append(f"  {e[i] * scale:10.{nd}f} <= times < {e[i + 1] * scale:10.{nd}f} with count = {c}")
    lines.append(f"  {h['upper'] * scale:10.{nd}f} <= times               with count = {h['over']}")
    return lines


def frequency_lines(freq: list, title: str, scale: float = 1e6, nd: int = 3) -> list[str]:
    return ["", title, ""] + [f"  time = {v * scale:10.{nd}f} with frequency = {c}" for v, c in freq]


def rate_curve_lines(a: dict) -> list[str]:
    lines = ["", "COMMUNICATION RATE CURVE (one-way time = ping-pong time / 2; MB = 10^6 bytes)", "",
             f"  {'# bytes':>8} {'npp':>4} {'ntrial':>6} {'min[us]':>9} {'med[us]':>9} {'mean[us]':>9} "
             f"{'max[us]':>9} {'MB/s min':>9} {'MB/s med':>9} {'MB/s mean':>9} {'removed':>7}"]
    for r in a["results"]:
        lines.append(f"  {r['msize']:>8} {r['npp']:>4} {r['ntrial']:>6} {r['min_s'] * 1e6:9.3f} "
                     f"{r['median_s'] * 1e6:9.3f} {r['mean_s'] * 1e6:9.3f} {r['max_s'] * 1e6:9.3f} "
                     f"{r['rate_min_mb_s']:9.2f} {r['rate_median_mb_s']:9.2f} {r['rate_mean_mb_s']:9.2f} "
                     f"{r['filtered']['removed']:>7}")
    return lines


def sweep_lines(table: dict) -> list[str]:
    cols = table["npp"]
    w = 11
    lines = ["", f"NPP SWEEP (Table 4.1 shape): {size_label(table['msize'])} messages, ping-pong times in "
                 "microseconds divided by 2", "",
             f"  {'npp =':<20}" + "".join(f"{c:>{w}}" for c in cols)]
    for row in ("minimum time", "median time", "average time", "maximum time", "Variance", "Standard deviation"):
        vals = table[row]
        fmt = (lambda v: f"{v:>{w}.4g}") if row in ("Variance", "Standard deviation") else (lambda v: f"{v:>{w}.3f}")
        lines.append(f"  {row:<20}" + "".join(fmt(v) for v in vals))
    lines.append(f"  {'ntrial':<20}" + "".join(f"{v:>{w}}" for v in table["ntrial"]))
    return lines


def compare_lines(a: dict) -> list[str]:
    if not a["loop"]:
        return []
    lines = ["", "COMPARISON WITH THE LOOP-AVERAGED METHOD (osu_latency style: one timing of ITERS ping-pongs, "
                 "average / 2)", "",
             f"  {'# bytes':>8} {'iters':>6} {'reps':>4} {'loop[us]':>9} {'spread':>7} {'npp':>5} {'our min':>9} "
             f"{'our med':>9} {'our max':>9} {'min/loop':>8} {'med/loop':>8}"]
    for r in a["loop"]:
        spread = (r["max_s"] / r["min_s"] - 1) * 100 if r["min_s"] > 0 else float("nan")
        if "ours_median_s" in r:
            ours = (f"{r['ours_npp']:>5} {r['ours_min_s'] * 1e6:9.3f} {r['ours_median_s'] * 1e6:9.3f} "
                    f"{r['ours_max_s'] * 1e6:9.2f} {r['min_vs_loop'] * 100:+7.1f}% {r['median_vs_loop'] * 100:+7.1f}%")
        else:
            ours = "-"
        lines.append(f"  {r['msize']:>8} {r['iters']:>6} {r['reps']:>4} {r['median_s'] * 1e6:9.3f} "
                     f"{spread:6.1f}% {ours}")
    lines += ["", "  loop[us] = the median of the REPS loop averages, spread = (max / min - 1) of them; "
                  "our min / med / max [us]: this method (the mean is in the rate curve above)."]
    lines += ["", "  The loop-averaged number is one average per timing: it hides the spread that our "
                  "min..max and std show."]
    return lines


def bidir_lines(a: dict) -> list[str]:
    """The bidirectional exchanges (--bidir) next to the one-way ping-pong."""
    if not a.get("bidir"):
        return []
    lines = ["", "BIDIRECTIONAL EXCHANGES (both ranks send and receive at once; rates count both directions)",
             f"{'bytes':>10} {'exchange [us]':>14} {'rate both [MB/s]':>17} {'one-way [us]':>13} "
             f"{'rate uni [MB/s]':>16}"]
    for r in a["bidir"]:
        ow = r.get("pingpong_one_way_median_s")
        lines.append(f"{r['msize']:>10} {r['median_s'] * 1e6:>14.4f} {r['rate_both_median_mb_s']:>17.2f} "
                     f"{'-' if ow is None else f'{ow * 1e6:.4f}':>13} "
                     f"{'-' if ow is None else format(r['rate_uni_median_mb_s'], '.2f'):>16}")
    lines.append("(medians after the cut_coef filter; exchange = time for both messages of one exchange)")
    return lines


def _fit(lines: list[str]) -> str:
    """The text with every line wider than the console wrapped (prose; the tables are narrower)."""

    w = width()
    out = []
    for ln in lines:
        if len(ln) <= w:
            out.append(ln)
            continue
        lead = len(ln) - len(ln.lstrip(" "))
        out.append(wrap_line(ln, w, lead + 2))
    return "\n".join(out) + "\n"


def summary_text(a: dict, sweep_tables: list[dict], verbose: bool = False) -> str:
    """The rate curve (one line per message size and npp) first, then the npp sweeps, the
    loop-averaged comparison and the bidirectional exchanges, then the program parameters; with
    ``verbose`` also the Appendix C block of every message size (timing results, statistics,
    rates, filtered results) at the end."""

    lines = [line(a["simulated"])] if a.get("simulated") else []
    lines += rate_curve_lines(a)[1:]
    diffs = definition_notes("pingpong", {"kind": "pingpong", "pingpong": a.get("params") or {}}, "osu")
    if diffs:
        lines += ["", "  Not osu_latency's number: " + "; ".join(d.split(": ", 1)[1] for d in diffs)
                  + ". The osu_latency loop: --compare; its layout: mpitempo export --osu."]
    for t in sweep_tables:
        lines += sweep_lines(t)
    lines += compare_lines(a)
    lines += bidir_lines(a)
    lines += [""] + [x for x in header(a) if not a.get("simulated") or x != line(a["simulated"])]
    if verbose:
        for r in a["results"]:
            lines += set_block(r)
        lines += ["", "=" * 72]
    else:
        lines += ["", "(the statistics of every message size: --verbose; everything, with histograms: --full)"]
    return _fit(lines)


def full_text(a: dict, sweep_tables: list[dict]) -> str:
    """Everything: the timer study (section 3.1 + Appendix A), every set with
    its histogram and exact frequency table (Appendix B), then the summary."""
    ts = a["timer_study"]
    lines = header(a)
    lines += ["", "=" * 72, "", "PART 1: TIMER OVERHEAD AND RESOLUTION (section 3.1)", "",
              f"  back-to-back pairs  = {ts['n']} in {ts['seconds']:.2f} s",
              f"  minimum time        = {ts['min_s'] * 1e6:.4f}",
              f"  median time         = {ts['median_s'] * 1e6:.4f}",
              f"  average time        = {ts['mean_s'] * 1e6:.4f}",
              f"  maximum time        = {ts['max_s'] * 1e6:.4f}",
              f"  standard deviation  = {ts['std_s'] * 1e6:.4f}",
              f"  res_timing          = {ts['res_timing_s'] * 1e6:.4f}",
              f"  min_ov              = {ts['min_ov_s'] * 1e6:.4f}",
              f"  negative differences = {ts['negative']}, not recorded (beyond the cap) = {ts['dropped']}"]
    lines += histogram_lines(ts.get("histogram"), "DISTRIBUTION OF TIMES FROM THE TIMER OVERHEAD MEASUREMENTS IN "
                                                  "PART 1 (microseconds)", nd=4)
    lines += frequency_lines(ts.get("frequency", []), "FREQUENCY OF TIMES FROM THE TIMER OVERHEAD MEASUREMENTS "
                                                      "IN PART 1 (microseconds)", nd=4)
    for r in a["results"]:
        lines += set_block(r)
        lines += histogram_lines(r.get("histogram"), f"DISTRIBUTION OF PING PONG TIMES DIVIDED BY TWO "
                                                     f"({r['msize']} B, npp {r['npp']}, microseconds)")
        lines += frequency_lines(r.get("frequency", []), "MEASURED TIMINGS AND THEIR FREQUENCY IN MICROSECONDS")
    lines += ["", "=" * 72]
    lines += rate_curve_lines(a)
    for t in sweep_tables:
        lines += sweep_lines(t)
    lines += compare_lines(a)
    lines += bidir_lines(a)
    return _fit(lines)
