"""One headline per operation from the rows of a comparison (`mpitempo report`, `compare`)."""
from __future__ import annotations


def op_headlines(rows: list[dict]) -> dict[str, str]:
    """op -> e.g. "B vs A: faster in 3 of 5 sizes (-2.1% .. -4.8%), slower in 0, equivalent in 1,
    no significant difference in 1; flagged: shared_cpu"."""
    out: dict[str, str] = {}
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["op"], r["b"], r["a"]), []).append(r)
    for (op, b, a), rs in by.items():
        faster = [r for r in rs if r["significant"] and not r.get("equivalent") and (r.get("effect_pct") or 0) < 0
                  and abs(r.get("effect_pct") or 0) >= (r.get("equivalence_pct") or 1.0)]
        slower = [r for r in rs if r["significant"] and not r.get("equivalent") and (r.get("effect_pct") or 0) > 0
                  and abs(r.get("effect_pct") or 0) >= (r.get("equivalence_pct") or 1.0)]
        eq = [r for r in rs if r.get("equivalent")]
        rest = len(rs) - len(faster) - len(slower) - len(eq)

        def rng(lst):
            if not lst:
                return ""
            v = sorted(r["effect_pct"] for r in lst)
            return f" ({v[0]:+.1f}%)" if len(v) == 1 else f" ({v[0]:+.1f}% .. {v[-1]:+.1f}%)"

        parts = [f"faster in {len(faster)} of {len(rs)} sizes{rng(faster)}", f"slower in {len(slower)}{rng(slower)}"]
        if any(r.get("equivalent") is not None for r in rs):
            parts.append(f"equivalent in {len(eq)}")
        parts.append(f"no finding in {rest}")
        flags = sorted({f for r in rs for f in r.get("flags") or []})
        line = f"{b} vs {a}: " + ", ".join(parts) + (f"; flagged: {', '.join(flags)}" if flags else "")
        out[op] = (out[op] + "; " + line) if op in out else line
    return out
