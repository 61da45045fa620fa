"""Text and HTML output of `mpitempo tree`; the report section of tree campaigns."""
from __future__ import annotations

import base64
from pathlib import Path

from mpitempo import kinds
from mpitempo.io.rundir import find_runs
from mpitempo.io.safefs import safe_write_text
from mpitempo.present.tables import width, wrap_line
from mpitempo.safe_text import safe, safe as s

US = 1e6


def _us(x) -> str:
    return "-" if x is None else f"{x * US:.2f}"


def _path_table(paths: list[dict]) -> list[str]:
    lines = [f"{'path':<16} {'arr wait [us]':>13} {'down [us]':>10} {'up [us]':>9} {'dep wait [us]':>13}"]
    for p in paths:
        lines.append(f"{p['path']:<16} {_us(p['arrival_wait_s']):>13} {_us(p['down_latency_s']):>10} "
                     f"{_us(p['up_latency_s']):>9} {_us(p['departure_wait_s']):>13}")
    return lines


def text(runs: list[dict], res: dict) -> str:
    """The text output; the strings a run directory stores (configuration names, tree specs, host
    names, the workload) are shown escaped (safe_text): a run may come from someone else."""

    a = next((r for r in runs if not r["mpi"]), runs[0])
    lines = [f"allreduce tree '{s(res['config'])}' ({s(res['tree'])}), {res['nprocs']} ranks, {res['mpiruns']} "
             f"mpirun(s), {a['calls']} calls per run, workload {s(a['workload']['name'])}"]
    if res["oversubscribed"]:
        lines.append("WARNING: oversubscribed (more ranks than CPUs): times are for correctness only")
    if res.get("simulated"):
        from mpitempo.present.simulated import line

        lines.append(line(res["simulated"]))
    ov = res["overhead_pct"]
    lines.append(f"allreduce time per call (median over runs of the run medians): {_us(res['call_median_s'])} µs; "
                 f"event-collector overhead: {'not measured' if ov is None else f'{ov:+.2f}% of Gsum time'}")
    others = (res.get("configs") or [])[1:]
    lines.append("")
    if others:
        lines.append(f"paths of '{s(res['config'])}' ({s(res['tree'])}), medians over its mpiruns:")
    lines += _path_table(res["paths"])
    imb = res["imbalance"]
    if imb:
        verdict = ("load imbalance" if imb["imbalanced"] else
                   "no application imbalance (the latest branch does not work longer between calls: "
                   f"{_us(imb['excess_work_s'])} µs more than the others)")
        lines += ["", f"imbalance: {verdict}; culprit rank {imb['culprit_rank']} on host {s(imb['culprit_host'])} "
                      f"(last at the root in {100 * imb['share']:.0f}% of calls, root waited {_us(imb['evidence_s'])} "
                      f"µs on average for it; path of last arrivals {' > '.join(map(str, imb['path']))})"]
    for h in res.get("slow_hosts") or []:
        lines.append(f"slow host: {s(h['host'])} (ranks {','.join(map(str, h['ranks']))}) works {_us(h['work_s'])} µs "
                     f"between calls, {h['ratio']:.1f}x the hosts' median {_us(h['hosts_median_s'])} µs")
    for ln in res.get("slow_links") or []:
        where = (f"; the link of host {s(ln['suspect_host'])} (every link of that host between hosts is slow)"
                 if ln.get("suspect_host") and ln["between_hosts"] else "")
        lines.append(f"slow link: {ln['child']}>{ln['parent']} ({s(ln['child_host'])} -> {s(ln['parent_host'])}) two-way "
                     f"{_us(ln['two_way_s'])} µs, {ln['ratio']:.1f}x the median of the links "
                     f"{'between hosts' if ln['between_hosts'] else 'within a host'} ({_us(ln['class_median_s'])} µs)"
                     + where)
    if res.get("nodes"):
        lines += ["", "tree nodes (run 1): per contributor last arrivals / mean arrival wait / mean departure wait [us]"]
        for nd in res["nodes"]:
            cells = "; ".join(f"{c}: {la}x last, {_us(aw)} / {_us(dw)}" for c, la, aw, dw in
                              zip(nd["contributors"], nd["last_arrivals"], nd["arrival_wait_s"], nd["departure_wait_s"]))
            lines.append(f"  node {nd['node']}: down latency {_us(nd['down_latency_s'])} us; {cells}")
    if res.get("links"):
        lines.append("links (child>parent): two-way latency (t4-t1)-(t3-t2) [us]: " + ", ".join(
            f"{ln['child']}: {_us(ln['two_way_s'])}" for ln in res["links"]))
    if res.get("groups"):
        lines += ["", "path groups (slowest first; time without arrival waits):"]
        for i, g in enumerate(res["groups"]):
            lines.append(f"  {i + 1}: {len(g['ranks'])} paths, {g['hops']} hops ({g['inter_host_hops']} between hosts), "
                         f"{_us(g['mean_no_wait_s'])} µs, representative {g['representative']}")
    if res.get("subtrees"):
        lines += ["", f"{'subtree':<10} {'ranks':>6} {'down [us]':>10} {'up [us]':>9} {'dep wait [us]':>13}  host"]
        for st in res["subtrees"]:
            lines.append(f"{st['root']:<10} {len(st['ranks']):>6} {_us(st['down_latency_s']):>10} {_us(st['up_latency_s']):>9} "
                         f"{_us(st['departure_wait_s']):>13}  {s(st['host']) if st['host'] else '(several)'}")
    for c in others:
        lines += ["", f"paths of '{s(c['config'])}' ({s(c['tree'])}), {c['mpiruns']} mpirun(s), allreduce time per call "
                      f"{_us(c['call_median_s'])} µs, medians over its mpiruns:"]
        lines += _path_table(c["paths"])
    if res.get("comparison"):
        names = list(dict.fromkeys(r["config"] for r in runs if not r["mpi"]))
        lines += ["", f"comparison per path (time without arrival waits): A = {s(names[0])}, B = {s(names[1])}",
                  f"{'rank':<6} {'A [us]':>9} {'B [us]':>9} {'delta':>8} {'p':>7}"]
        for c in res["comparison"]:
            d = "-" if c["delta_pct"] is None else f"{c['delta_pct']:+.1f}%"
            p = "-" if c["p_value"] is None else f"{c['p_value']:.3f}"
            lines.append(f"{c['path']:<6} {_us(c['a_s']):>9} {_us(c['b_s']):>9} {d:>8} {p:>7}")
    t = res.get("tuning")
    if t:
        lines += ["", "tuning: allreduce time per call (median over mpiruns of run medians)",
                  f"{'config':<24} {'tree':<20} {'runs':>5} {'median [us]':>12} {'min [us]':>9} {'max [us]':>9}"]
        for row in t["ranking"]:
            lines.append(f"{s(row['config']):<24} {s(row['tree']):<20} {row['runs']:>5} {_us(row['median_s']):>12} "
                         f"{_us(row['min_s']):>9} {_us(row['max_s']):>9}")
        lines.append(f"fastest tree: {s(t['fastest'])}")
        for v in t["vs_baselines"]:
            p = "-" if v["p_value"] is None else f"p={v['p_value']:.3g}{v['stars']}"
            note = "" if v["p_value"] is not None and v["min_p"] <= 0.05 else f" (need more mpiruns: min p {v['min_p']:.3g})"
            lines.append(f"  vs {s(v['baseline'])}: {_us(v['baseline_s'])} -> {_us(v['fastest_s'])} µs "
                         f"({v['delta_pct']:+.1f}%, {p}){note}")

    # prose lines wrap at the console's width (continuations indented); the tables above are narrower
    w = width()
    return "\n".join(wrap_line(ln, w, len(ln) - len(ln.lstrip(" ")) + 4) if len(ln) > w else ln
                     for ln in lines) + "\n"


def _img(png: bytes, alt: str) -> str:
    from html import escape

    alt = escape(safe(alt), quote=True)      # a configuration name may hold quotes and control characters
    return f"<img alt='{alt}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"


def section(runs: list[dict], res: dict) -> str:
    """HTML: timemap of the first configuration, comparison timemap and serialization plot."""
    from html import escape

    from mpitempo.present.plots import png
    from mpitempo.present.plots import tree as plots

    parts = ["<h2>Allreduce tree</h2>", f"<pre>{escape(text(runs, res))}</pre>"]
    trees = [r for r in runs if not r["mpi"]]
    if not trees:
        return "\n".join(parts)
    a = trees[0]
    names = list(dict.fromkeys(r["config"] for r in trees))
    for name in names:     # every configuration's timemap, in the order given
        r = next(x for x in trees if x["config"] == name)
        parts.append(_img(png(plots.timemap(r["timemaps"], r["groups"],
                                            f"timemap of '{r['config']}' ({r['spec']}), run {r['run_index']}: mean "
                                            "time per stage without arrival waits")), f"timemap of {name}"))
    if len(names) >= 2:
        from mpitempo.analysis.tree import most_changed_path

        b = next(r for r in trees if r["config"] == names[1])
        row = most_changed_path(res.get("comparison") or [])
        if row is not None:
            rep = int(row["path"])
            why = (f"the path whose time changed most: {_us(row['a_s'])} -> {_us(row['b_s'])} µs"
                   + (f" ({row['delta_pct']:+.1f}%)" if row.get("delta_pct") is not None else ""))
        else:
            rep = a["groups"][0]["representative_rank"] if a["groups"] else 0
            why = "representative of the slowest group"
        parts.append(_img(png(plots.comparison_timemap(a["timemaps"][rep], b["timemaps"][rep], names[0], names[1],
                                                       f"rank {rep} ({why}): {names[0]} vs {names[1]}")),
                          "comparison timemap"))
    series = {}
    for name in names:
        r = next(x for x in trees if x["config"] == name)
        if r["nodes"]:
            busiest = max(r["nodes"], key=lambda nd: len(nd["contributors"]))
            series[f"{name}: node {busiest['node']} ({len(busiest['contributors'])} contributors)"] = \
                busiest["serialization_s"]
    if series:
        parts.append(_img(png(plots.serialization(series, "serialization at the node with most contributors")),
                          "serialization"))
    return "\n".join(parts)


def html(runs: list[dict], res: dict) -> str:
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>mpitempo tree</title>"
            "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}pre{font-size:12px}</style></head><body>"
            + section(runs, res) + "</body></html>\n")


def write_html(runs: list[dict], res: dict, out: Path) -> Path:
    doc = html(runs, res)

    safe_write_text(out, doc, out.parent)   # never through a link planted in the output directory
    return out


def report_section(root) -> str:
    """The tree section of `mpitempo report` for a campaign of kind tree ("" for other kinds)."""

    root = Path(root)
    if not (root / "runs").is_dir() or kinds.of_campaign(root).name != "tree":
        return ""
    from mpitempo.analysis import tree as analysis

    complete, _, _ = find_runs(root)
    runs = analysis.in_config_order([analysis.analyse_run(d, 0, root) for d in complete],
                                    analysis.campaign_order(root))
    if not runs:
        return ""
    names = [c for c in dict.fromkeys(r["config"] for r in runs) if not next(x for x in runs if x["config"] == c)["mpi"]]
    comparison = analysis.compare_configs(runs, names[0], names[1]) if len(names) == 2 else None
    tuning = analysis.tuning(runs) if len(dict.fromkeys(r["config"] for r in runs)) > 2 else None
    return section(runs, analysis.json_result(runs, comparison, tuning))
