"""`mpitempo pingpong --pairs`: run every chosen pair, print the latency matrix, write its heat map."""
from __future__ import annotations

from pathlib import Path

import click

from mpitempo.errors import MtError
from mpitempo.analysis.pingpong_pairs import config_name, matrix, parse_pairs
from mpitempo.io.campaign import build_campaign
from mpitempo.runner.execute import check_campaign, run_campaign


def run_pairs(pairs: str, np: int, params: dict, launcher, mpicc, mpiruns: int, timeout_s: float, outdir,
              quiet: bool, as_json: bool, cut_coef: float, plot_path: str | None,
              platform_args: dict | None = None) -> dict:
    from mpitempo.analysis import pingpong as analysis
    from mpitempo.io import pingpong as data

    chosen = parse_pairs(pairs, np)
    if plot_path:
        from mpitempo.io.paths import check_output_file

        check_output_file(plot_path, "the plot", ("png",))
    spec = {"config": [{"name": config_name(a, b), "source": a, "dest": b} for a, b in chosen]}
    c = build_campaign(spec, dict(params, np=np, mpiruns=mpiruns, launcher=launcher, mpicc=mpicc,
                                  timeout_s=timeout_s, name="pingpong-pairs", **(platform_args or {})),
                       kind="pingpong")
    check_campaign(c)
    with run_campaign(c, outdir, quiet=quiet or as_json) as (out, complete):
        analysed, hosts = [], None
        for d in complete:
            run = data.load_dir(d)
            src, dst = int(run.meta["pingpong"]["source"]), int(run.meta["pingpong"]["dest"])
            analysed.append((src, dst, analysis.analyse(run, cut_coef=cut_coef)))
            hosts = hosts or [str(r.get("host", "")) for r in sorted(run.meta.get("ranks", []),
                                                                       key=lambda r: r.get("rank", 0))]
            over = bool((run.meta.get("launch") or {}).get("launcher", {}).get("oversubscribed"))
        from mpitempo.analysis.simulated import of_dirs

        sim = of_dirs(complete)
        res = {**({"simulated": sim} if sim else {}), "nprocs": np, "pairs": [f"{a}-{b}" for a, b in chosen], "mpiruns": mpiruns, "hosts": hosts,
               "oversubscribed": over, "matrix": {str(m): v for m, v in matrix(analysed, np).items()}}
        if plot_path or outdir:
            from mpitempo.present.plots import png
            from mpitempo.present.plots.pingpong_pairs import heatmap

            m0 = next(iter(res["matrix"]))
            target = Path(plot_path) if plot_path else Path(out) / "latency-matrix.png"
            title = (f"one-way latency, {m0} B, median of {mpiruns} mpirun(s) per pair"
                     + (" [OVERSUBSCRIBED: correctness only]" if over else "")
                     + (" [SIMULATED platform]" if sim else ""))
            target.write_bytes(png(heatmap(res["matrix"][m0]["latency_s"], title,
                                           hosts if hosts and len(set(hosts)) > 1 else None)))
            res["plot"] = str(target)
    if as_json:
        from mpitempo.present.tables import print_json

        print_json(res)
        return res
    if res.get("simulated"):
        from mpitempo.present.simulated import line

        click.echo(line(res["simulated"]))
    for m, v in res["matrix"].items():
        click.echo(f"one-way latency [µs], {m} B, {np} ranks (median over {mpiruns} mpirun(s) of the filtered "
                   f"run medians; - = not measured)")
        click.echo("rank " + "".join(f"{j:>9}" for j in range(np)))
        for i, row in enumerate(v["latency_s"]):
            click.echo(f"{i:>4} " + "".join(f"{'-' if x is None else f'{x * 1e6:.3f}':>9}" for x in row))
        click.echo(f"min {v['min_s'] * 1e6:.3f} µs, max {v['max_s'] * 1e6:.3f} µs")
    if res.get("oversubscribed"):
        click.echo("warning: oversubscribed (more ranks than CPUs): correctness only, not timings")
    if res.get("plot"):
        click.echo(f"heat map: {res['plot']}")
    return res
