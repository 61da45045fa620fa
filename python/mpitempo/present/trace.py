"""The terminal summary of `mpitempo trace DIR`."""
from __future__ import annotations

from mpitempo.safe_text import safe
from mpitempo.present.tables import console


def _us(v) -> str:
    return "-" if v is None else f"{v * 1e6:.3f} µs"


def print_summary(r: dict) -> None:
    c = console()
    s = r["sync"]
    head = f"trace {safe(r['dir'])}: {r['ranks']} ranks, {r['events']} events, timer {safe(r['timer'])}"
    if not r["complete"]:
        head += " (INCOMPLETE)"
    c.print(head)
    if not r["complete"]:
        c.print(f"  INCOMPLETE: {safe(r.get('incomplete_reason') or 'not every event of the run is in the trace')}")
    if r.get("note"):
        c.print(f"  note: {safe(r['note'])}")
    if r["oversubscribed"]:
        c.print("  OVERSUBSCRIBED: more ranks than cores; timings and skews are not meaningful")
    dur = "-" if s.get("duration_s") is None else f"{s['duration_s'] * 1e3:.2f} ms"
    c.print(f"  clock sync: {safe(s['algorithm'])} ({dur}), max |offset| after sync "
            f"{_us(s.get('max_abs_offset_after_sync_s'))}, drift at end {_us(s.get('drift_at_end_s'))} "
            f"(corrected), max |offset| at end {_us(s.get('max_abs_offset_at_end_s'))}")
    if s.get("note"):
        c.print(f"  sync note: {safe(s['note'])}")
    analysed = r.get("analysed", True)
    v = r.get("violations")
    if analysed:
        c.print(f"  clock-condition violations: raw {r['violations_raw']} "
                f"({v['raw']['p2p']} messages, {v['raw']['collective']} collective), "
                f"global {r['violations_global']} ({v['global']['p2p']} messages, {v['global']['collective']} collective)"
                f"; {v['raw']['messages']} messages, {v['raw']['collective_instances']} collective instances checked")
        if r["call"]:
            a, b2 = r["range"]
            c.print(f"  {r['call']} instances {a}..{b2 - 1} of {r['call_instances']}: start skew max "
                    f"{_us(r['max_start_skew_raw_s'])} raw, {_us(r['max_start_skew_global_s'])} global; median "
                    f"{_us(r['median_start_skew_raw_s'])} raw, {_us(r['median_start_skew_global_s'])} global")
    comms = r.get("communicators") or []
    if comms:
        inter = sum(1 for x in comms if x.get("inter"))
        c.print(f"  communicators: {len(comms)} ({inter} inter), every one defined in the OTF2 archive")
    nr = r.get("not_recorded")
    if nr is not None:
        if nr["total"]:
            top = sorted(nr["calls"].items(), key=lambda kv: -(kv[1]["total"] or 0))
            shown = ", ".join(f"{k} {v['total']}" + (" (not selected)" if v["why"] == "not selected" else "")
                              for k, v in top[:8])
            more = f", ... ({len(top) - 8} more)" if len(top) > 8 else ""
            c.print(f"  not recorded (counted): {nr['total']} MPI calls of {len(top)} functions: {shown}{more} "
                    f"(all: {safe(nr['file'])})")
        else:
            c.print("  not recorded: none of the calls the tracer sees")
    for k in ("otf2", "perfetto", "plot"):
        if r.get(k):
            c.print(f"  {k}: {safe(r[k])}")
    if not analysed:
        c.print(f"  analysis (clock-condition violations, start skew, wait states; --plot FILE for the Gantt chart): "
                f"mpitempo trace {safe(r['dir'])}")
        return
    ws = r.get("wait_states")
    if ws:
        from mpitempo.present.tables import print_fitted
        from mpitempo.stats.waitstates import table_rows

        rows = table_rows(ws)
        nranks = r.get("ranks") or 0
        if rows:
            cols = [("pattern", "left"), ("call", "left"), ("total ms", "right")] + \
                   [(f"rank {i} ms", "right") for i in range(nranks)]
            body = [[p, call, f"{tot:.3f}"] + [f"{x:.3f}" for x in rest] + [""] * (nranks - len(rest))
                    for p, call, tot, *rest in rows]
            print_fitted("wait states on the global clock (Scalasca patterns, Geimer et al. 2010)", cols, body,
                         compact_rows=False, caption="per call: summed over ranks; (all): the pattern's total and "
                         "its split over the ranks" + (" — OVERSUBSCRIBED: waits include descheduling"
                                                       if r.get("oversubscribed") else ""))
        else:
            c.print("  wait states: none found")
        from mpitempo.stats.waitstates import site_rows

        srows = site_rows(ws)
        if srows and any(site != "(unknown site)" for _, site, *_ in srows):
            print_fitted("wait states per call site (the call that waits; function and file:line)",
                         [("pattern", "left"), ("call site", "left"), ("call", "left"), ("waits", "right"),
                          ("total ms", "right"), ("mean ms", "right")],
                         [[p, site, call, str(n), f"{tot:.3f}", f"{mean:.3f}"] for p, site, call, n, tot, mean in srows],
                         compact_rows=False, caption="a site without file:line: the application was built without -g"
                         + (" — OVERSUBSCRIBED: waits include descheduling" if r.get("oversubscribed") else ""))


def print_campaign(r: dict) -> None:
    """A trace campaign: one line per run, the wait states over the mpiruns (median, min, max of
    each run's total) per pattern and per call site, and the runs that failed."""
    from mpitempo.present.tables import print_fitted

    c = console()
    n = r["runs_complete"]
    c.print(f"trace campaign {r['dir']}: {n} complete run(s), {r['runs_failed']} failed, "
            f"{r['runs_incomplete']} incomplete")
    if r["oversubscribed"]:
        c.print("  OVERSUBSCRIBED: more ranks than cores in some run; timings and waits include descheduling")
    rows = []
    for x in r["runs"]:
        if not x.get("complete", True):
            c.print(f"  INCOMPLETE run {safe(x['run_id'])}: {safe(x.get('incomplete_reason') or 'events lost')}")
        ws = x.get("wait_states") or {}
        total = sum(ws[p]["total_s"] for p in ws)
        s = x["sync"]
        rows.append([x["run_id"] + ("" if x.get("complete", True) else " (incomplete)"), str(x["ranks"]), str(x["events"]), str(x["violations_raw"]),
                     str(x["violations_global"]), _us(s.get("max_abs_offset_after_sync_s")), f"{total * 1e3:.3f}"])
    print_fitted("runs (each: mpitempo trace DIR/runs/<id>)",
                 [("run", "left"), ("ranks", "right"), ("events", "right"), ("viol. raw", "right"),
                  ("viol. global", "right"), ("max |offset|", "right"), ("wait ms", "right")], rows,
                 compact_rows=False)
    across = r["wait_states_across_runs"]
    if across:
        body = [[p, f"{d['median_s'] * 1e3:.3f}", f"{d['min_s'] * 1e3:.3f}", f"{d['max_s'] * 1e3:.3f}",
                 f"{d['runs_with']}/{d['runs']}"] for p, d in across.items()]
        print_fitted(f"wait states over {n} mpirun(s): each run's total (Geimer et al. 2010 patterns)",
                     [("pattern", "left"), ("median ms", "right"), ("min ms", "right"), ("max ms", "right"),
                      ("runs", "right")], body, compact_rows=False,
                     caption="runs: in how many runs the pattern occurred (0 counted in the others)")
        srows = [[p, site, d["call"], f"{d['median_s'] * 1e3:.3f}", f"{d['min_s'] * 1e3:.3f}",
                  f"{d['max_s'] * 1e3:.3f}", f"{d['runs_with']}/{d['runs']}"]
                 for p, sites in r["wait_states_per_site_across_runs"].items() for site, d in sites.items()]
        if srows:
            print_fitted("wait states per call site over the mpiruns",
                         [("pattern", "left"), ("call site", "left"), ("call", "left"), ("median ms", "right"),
                          ("min ms", "right"), ("max ms", "right"), ("runs", "right")], srows, compact_rows=False)
    else:
        c.print("  wait states: none found in any run")
    for f in r["failed"]:
        c.print(f"  FAILED run {f['run_id']} ({f['status']}): {f.get('reason') or 'see its failed.json'}")
    if r["incomplete"]:
        c.print(f"  incomplete (never finished): {', '.join(r['incomplete'])}")


def show_campaign(d, call, rng, as_json) -> None:
    """The across-run summary of a trace campaign (`mpitempo trace show`, `mpitempo summary`)."""
    from mpitempo.analysis.trace_campaign import summarise_campaign   # numpy: not for --help

    res = summarise_campaign(d, call, rng)
    if as_json:
        from mpitempo.present.tables import print_json

        print_json(res)
        return
    print_campaign(res)
