"""Warm-up of each summary group, from the runs' meta.json: the setting (`scheme.warmup`, a count or
"auto") and, per experiment, the warm-up calls made (`experiments[].warmup_calls`) and whether
`--warmup auto` stopped at its cap without a steady state (`experiments[].warmup_capped`,
docs/methods.md#warm-up). A group with a capped run is flagged ``warmup_capped``."""
from __future__ import annotations


def _experiment(meta: dict, op: str, msize: int) -> dict | None:
    for e in meta.get("experiments") or []:
        if isinstance(e, dict) and e.get("op") == op and e.get("msize") == msize:
            return e
    return None


def group_warmup(rows: list[dict], metas: dict) -> dict | None:
    """rows: the per-run rows of one group (run_id, run_index, op, msize); metas: run_id -> meta.json.
    {setting: "auto" | N | "mixed", calls_median, calls_min, calls_max, capped_runs: [run_index]}, or None
    when no run says (other kinds of run, older files)."""
    settings, calls, capped = set(), [], []
    for r in rows:
        meta = metas.get(r["run_id"]) or {}
        s = (meta.get("scheme") or {}).get("warmup") if isinstance(meta.get("scheme"), dict) else None
        if s is None:
            continue
        settings.add(str(s))
        e = _experiment(meta, r["op"], r["msize"])
        if e is None:
            continue
        n = e.get("warmup_calls", s if isinstance(s, int) else None)
        if isinstance(n, int):
            calls.append(n)
        if e.get("warmup_capped"):
            capped.append(r["run_index"])
    if not settings:
        return None
    setting = settings.pop() if len(settings) == 1 else "mixed"
    if isinstance(setting, str) and setting.isdigit():
        setting = int(setting)
    out = {"setting": setting, "calls_median": None, "calls_min": None, "calls_max": None,
           "capped_runs": sorted(capped)}
    if calls:
        calls.sort()
        k = len(calls)
        out.update(calls_median=calls[k // 2] if k % 2 else (calls[k // 2 - 1] + calls[k // 2]) / 2,
                   calls_min=calls[0], calls_max=calls[-1])
    return out


def warmup_cell(w: dict | None) -> str:
    """'10', 'auto 160', 'auto 140-180', 'auto 2000 (capped in 1 run)'; '-' when not known."""
    if not w:
        return "-"
    if w["setting"] != "auto":
        return str(w["setting"])
    if w["calls_min"] is None:
        return "auto"
    lo, hi = w["calls_min"], w["calls_max"]
    text = f"auto {lo}" if lo == hi else f"auto {lo}-{hi}"
    n = len(w["capped_runs"])
    return text + (f" (capped in {n} run{'s' if n > 1 else ''})" if n else "")
