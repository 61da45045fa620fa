"""The barrier study for people (a table in µs) and its plots (runtime vs P per algorithm with
the LogP prediction, as Figs. 8, 10, 12 and 13 of Hoefler et al. 2005; predicted and measured
runtime by combining-tree arity)."""
from __future__ import annotations

from rich.markup import escape

from mpitempo.analysis.flags import flag_cell
from mpitempo.safe_text import safe
from mpitempo.present.tables import console, print_fitted, us
from mpitempo.stats import logp as model


def print_study(doc: dict) -> None:
    lp = doc["logp"]
    con = console()
    con.print(f"LogP on {lp.get('nprocs')} ranks, {lp['mpiruns']} mpirun(s): L {us(lp['L_s'])} µs, "
              f"o_s {us(lp['o_s_s'])} µs, o_r {us(lp['o_r_s'])} µs, g {us(lp['g_s'])} µs"
              + (f", G {lp['G_s_per_byte'] * 1e9:.3f} ns/B" if lp.get("G_s_per_byte") is not None else "")
              + f" (IQR over mpiruns: L {us(lp['L_iqr_s'])}, o_s {us(lp['o_s_iqr_s'])}, "
                f"o_r {us(lp['o_r_iqr_s'])}, g {us(lp['g_iqr_s'])} µs)")
    probs = lp.get("run_problems") or []
    if probs:
        con.print(f"[bold]warning:[/bold] {len(probs)} of {lp['mpiruns']} LogP mpirun(s) failed the sanity checks "
                  f"on their own (first, {escape(safe(probs[0]['run_id']))}: {escape(safe(probs[0]['problem']))}); the medians over all "
                  "mpiruns pass them within the spread over mpiruns (L is about 0 in shared memory)",
                  markup=True, highlight=False)
    cols = [("algorithm", "left"), ("P", "right"), ("runs", "right"), ("median [µs]", "right"),
            ("95% CI [µs]", "right"), ("predicted [µs]", "right"), ("measured/predicted", "right"),
            ("ext. model [µs]", "right"), ("measured/ext.", "right"), ("", "left")]
    rows = []
    for r in doc["results"]:
        ci = (f"{us(r['ci_lo_s'])} - {us(r['ci_hi_s'])}" if r["ci_lo_s"] is not None
              else f"need >= {r['ci_need_runs']} runs")
        other = [f for f in r.get("flags") or [] if f != "oversubscribed"]
        flag = ", ".join((["OVERSUBSCRIBED: correctness only"] if r["oversubscribed"] else [])
                         + ([flag_cell(other)] if other else []))
        rows.append([r["algorithm"], str(r["nprocs"]), str(r["mpiruns"]), us(r["median_s"]), ci,
                     us(r["predicted_s"]), f"{r['ratio']:.2f}" if r["ratio"] else "-",
                     us(r.get("predicted_ext_s")), f"{r['ratio_ext']:.2f}" if r.get("ratio_ext") else "-", flag])
    print_fitted("barrier runtime (Round-Time, medians over mpiruns) vs LogP prediction", cols, rows,
                 keep=("algorithm", "median [µs]"), drop_order=("runs", "95% CI [µs]", "predicted [µs]",
                                                               "ext. model [µs]"), wrap=("",), con=con)
    mx = doc.get("model_ext") or {}
    con.print("ext. model: each algorithm's message schedule on LogP"
              + (f", L per pair from the platform's {mx['routes']} routes ({us(mx['link_lat_s'])} µs per link)"
                 if mx.get("routes") else ", one L for every pair" + (f" ({mx['routes_note']})" if mx.get("routes_note")
                                                                      else ""))
              + (f", start cost {us(mx['start_cost_s'])} µs per cold message" if mx.get("start_cost_s") else ""),
              highlight=False)
    byp = doc.get("choice_by_p") or []
    if byp:
        cells = [[str(c["nprocs"]), c["measured_best"], us(c["measured_s"]),
                  f"{c['predicted_best'] or '-'}" + (f" (+{c['predicted_best_loss_pct']:.0f}%)"
                                                      if (c.get("predicted_best_loss_pct") or 0) >= 0.5 else ""),
                  f"{c['predicted_ext_best'] or '-'}" + (f" (+{c['predicted_ext_best_loss_pct']:.0f}%)"
                                                          if (c.get("predicted_ext_best_loss_pct") or 0) >= 0.5 else "")]
                 for c in byp]
        print_fitted("the choice at each P: fastest measured, and the model's pick (its measured loss)",
                     [("P", "right"), ("fastest measured", "left"), ("median [µs]", "right"),
                      ("formulas pick", "left"), ("ext. model pick", "left")], cells,
                     keep=("P", "fastest measured"), drop_order=("median [µs]",), wrap=(), con=con)
    notes = [(r["algorithm"], r["nprocs"], r["note"]) for r in doc["results"] if r["note"]]
    for alg, p, note in notes:
        con.print(f"  note {alg} P={p}: {note}")
    a = doc.get("arity")
    if a:
        con.print(f"combining tree on {a['nprocs']} processes: optimal arity by the model n = {a['predicted_best']}"
                  + (f", fastest measured n = {a['measured_best']}" if a["measured_best"] else ""))
    vs = doc.get("native") or []
    if vs:
        cells = [[v["algorithm"], v["native"], str(v["nprocs"]), us(v["median_s"]), us(v["native_median_s"]),
                  f"{v['delta_pct']:+.1f}%" if v["delta_pct"] is not None else "-",
                  f"{v['p_value']:.3f}" if v["p_value"] is not None else "-", v["verdict"]] for v in vs]
        print_fitted("ours vs the library's implementation of the same algorithm (Mann-Whitney U on run medians)",
                     [("algorithm", "left"), ("native", "left"), ("P", "right"), ("ours [µs]", "right"),
                      ("native [µs]", "right"), ("delta", "right"), ("p", "right"), ("verdict", "left")], cells,
                     keep=("algorithm", "native", "ours [µs]", "native [µs]", "verdict"), drop_order=("P", "delta"),
                     wrap=("verdict",),
                     con=con)
        for name, setting in dict.fromkeys((v["native"], v["setting"]) for v in vs):
            con.print(f"  {name}: {setting}")
    for note in doc.get("native_notes") or []:
        con.print(f"  note: {note}")
    c = doc["choice"]
    con.print(f"choice on {c['nprocs']} processes: {c['algorithm']} ({us(c['median_s'])} µs) - {c['verdict']}")
    con.print(f"closest native algorithm: {c['native']}; setting: {c['native_setting']}")
    flagged = sorted({f for r in doc["results"] for f in r.get("flags") or [] if f != "oversubscribed"})
    if flagged:
        con.print(f"[bold]warning:[/bold] rows marked {escape(safe(flag_cell(flagged)))} come from runs that "
                  "`mpitempo summary` flags (see its warnings for the runs and likely causes; docs/methods.md)",
                  markup=True)
    if any(r["oversubscribed"] for r in doc["results"]):
        con.print("[bold]warning:[/bold] rows marked OVERSUBSCRIBED ran more ranks than cores: their times "
                  "are not performance numbers", markup=True)


def plot_runtime(doc: dict, path: str) -> None:
    """Runtime vs P per algorithm: measured medians with their CI as markers, the prediction as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lp = doc["logp"]
    m = model.LogP(L=lp["L_s"], o_s=lp["o_s_s"], o_r=lp["o_r_s"], g=lp["g_s"])
    rows = doc["results"]
    algs = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, a in enumerate(algs):
        rs = sorted((r for r in rows if r["algorithm"] == a), key=lambda r: r["nprocs"])
        color = f"C{i % 10}"
        x = [r["nprocs"] for r in rs]
        y = [r["median_s"] * 1e6 for r in rs]
        lo = [(r["median_s"] - r["ci_lo_s"]) * 1e6 if r["ci_lo_s"] is not None else 0 for r in rs]
        hi = [(r["ci_hi_s"] - r["median_s"]) * 1e6 if r["ci_hi_s"] is not None else 0 for r in rs]
        native = a.startswith(model.NATIVE_PREFIX)    # the library's implementation: its own marker, ours' line
        ax.errorbar(x, y, yerr=[lo, hi], fmt="s" if native else "o", color=color, label=f"{a} measured", ms=4,
                    capsize=2, mfc="none" if native else color)
        if not native and any(r["predicted_s"] is not None for r in rs):  # the model at every P (its steps)
            ps = list(range(min(x), max(x) + 1))
            ax.plot(ps, [model.predict(a, p, m) * 1e6 for p in ps], "-", drawstyle="default", color=color,
                    alpha=0.7, label=f"{a} LogP")
    over = [r["nprocs"] for r in rows if r["oversubscribed"]]
    if over:
        ax.axvspan(min(over) - 0.5, max(over) + 0.5, color="grey", alpha=0.15, label="oversubscribed")
    ax.set_xlabel("processes P")
    ax.set_ylabel("barrier runtime [µs]")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title("measured (Round-Time, median over mpiruns, 95% CI) and LogP-predicted runtime")
    from mpitempo.present.plots import plain_text

    plain_text(fig)   # algorithm names from the campaign: text, never mathtext
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_arity(doc: dict, path: str) -> None:
    """Left: the predicted combining-tree runtime by arity on the largest P, with the measured
    medians. Right: predicted runtime vs P for arities 2-5 (the paper's Fig. 8) with the measured
    combining-tree medians of each arity."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lp = doc["logp"]
    m = model.LogP(L=lp["L_s"], o_s=lp["o_s_s"], o_r=lp["o_r_s"], g=lp["g_s"])
    a = doc["arity"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    ns = sorted(int(n) for n in a["predicted_s"])
    ax.plot(ns, [a["predicted_s"][n] * 1e6 for n in ns], "-", label="LogP prediction")
    if a["measured_s"]:
        ms = sorted(int(n) for n in a["measured_s"])
        ax.plot(ms, [a["measured_s"][n] * 1e6 for n in ms], "o", label="measured median")
    ax.axvline(a["predicted_best"], color="grey", ls=":", label=f"model optimum n = {a['predicted_best']}")
    ax.set_xlabel("combining-tree arity n")
    ax.set_ylabel("barrier runtime [µs]")
    ax.set_title(f"combining tree on {a['nprocs']} processes")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    pmax = max(doc["nprocs"]) if doc.get("nprocs") else a["nprocs"]
    ps = list(range(2, max(pmax, 8) + 1))
    for i, n in enumerate((2, 3, 4, 5)):
        bx.plot(ps, [model.predict(f"barrier:combining:{n}", p, m) * 1e6 for p in ps], "-", color=f"C{i}",
                label=f"rt{n}(P) LogP")
        pts = sorted((r["nprocs"], r["median_s"] * 1e6) for r in doc["results"]
                     if r["algorithm"] == f"barrier:combining:{n}")
        if pts:
            bx.plot([p for p, _ in pts], [y for _, y in pts], "o", color=f"C{i}", label=f"combining n={n} measured")
    bx.set_xlabel("processes P")
    bx.set_ylabel("barrier runtime [µs]")
    bx.set_title("combining tree by arity (Hoefler et al. 2005, Fig. 8)")
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=7)
    from mpitempo.present.plots import plain_text

    plain_text(fig)   # algorithm names from the campaign: text, never mathtext
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
