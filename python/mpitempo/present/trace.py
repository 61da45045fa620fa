"""The terminal summary of `mpitempo trace DIR`."""
from __future__ import annotations

from mpitempo.present.tables import console


def _us(v) -> str:
    return "-" if v is None else f"{v * 1e6:.3f} µs"


def print_summary(r: dict) -> None:
    c = console()
    s = r["sync"]
    head = f"trace {r['dir']}: {r['ranks']} ranks, {r['events']} events, timer {r['timer']}"
    if not r["complete"]:
        head += " (INCOMPLETE)"
    c.print(head)
    if r.get("note"):
        c.print(f"  note: {r['note']}")
    if r["oversubscribed"]:
        c.print("  OVERSUBSCRIBED: more ranks than cores; timings and skews are not meaningful")
    dur = "-" if s.get("duration_s") is None else f"{s['duration_s'] * 1e3:.2f} ms"
    c.print(f"  clock sync: {s['algorithm']} ({dur}), max |offset| after sync "
            f"{_us(s.get('max_abs_offset_after_sync_s'))}, drift at end {_us(s.get('drift_at_end_s'))}")
    if s.get("note"):
        c.print(f"  sync note: {s['note']}")
    b = r.get("buffer") or {}
    if b.get("events_dropped") or b.get("events_overwritten"):
        c.print(f"  buffer full on {b.get('ranks_full')} rank(s) ({b.get('on_full')}): "
                f"{b.get('events_dropped', 0)} events not recorded, {b.get('events_overwritten', 0)} overwritten")
    v = r["violations"]
    c.print(f"  clock-condition violations: raw {r['violations_raw']} "
            f"({v['raw']['p2p']} messages, {v['raw']['collective']} collective), "
            f"global {r['violations_global']} ({v['global']['p2p']} messages, {v['global']['collective']} collective)"
            f"; {v['raw']['messages']} messages, {v['raw']['collective_instances']} collective instances checked")
    if r["call"]:
        a, b2 = r["range"]
        c.print(f"  {r['call']} instances {a}..{b2 - 1} of {r['call_instances']}: start skew max "
                f"{_us(r['max_start_skew_raw_s'])} raw, {_us(r['max_start_skew_global_s'])} global; median "
                f"{_us(r['median_start_skew_raw_s'])} raw, {_us(r['median_start_skew_global_s'])} global")
    for k in ("otf2", "perfetto", "plot"):
        if r.get(k):
            c.print(f"  {k}: {r[k]}")
