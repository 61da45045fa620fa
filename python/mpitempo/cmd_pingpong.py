"""`mpitempo pingpong`: small-message latency after paper 004 (Luecke et al.).

The C core `mpitempo-pingpong` measures (timer study, npp, ntrial timings of
npp ping-pongs, optionally the loop-averaged method) into a run directory;
this command launches it, then analyses and presents: the Appendix C summary,
the full output, histograms, the rate curve, the npp sweep table and the
comparison with the loop-averaged method, or --json.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import click

from mpitempo.errors import MtError
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option, timer_option
from mpitempo.present.tables import print_json
from mpitempo.io.sizes import parse_sizes

DEFAULT_MSIZES = "0-4M"


def parse_sizes0(spec: str) -> list[int]:
    """Sizes with 0 allowed (latency is defined on 0-byte messages): "0",
    "0-4M" (0, 1, 2, 4, ... 4M) and everything parse_sizes accepts."""
    out: list[int] = []
    for item in str(spec).split(","):
        s = item.strip()
        if s.startswith("-") and s[1:2].isdigit():
            raise MtError(f"invalid size '{s}': sizes cannot be negative")
        if s == "0":
            out.append(0)
        elif s.startswith("0-"):
            out.append(0)
            hi = parse_sizes(s[2:])[0]
            out += parse_sizes(f"1-{hi}")
        else:
            out += parse_sizes(s)
    return out


def parse_npp_list(spec: str) -> list[int]:
    vals = []
    for item in str(spec).split(","):
        try:
            v = int(item.strip())
        except ValueError:
            raise MtError(f"invalid --npp-sweep value '{item.strip()}': expected an integer >= 1") from None
        if v < 1:
            raise MtError(f"invalid --npp-sweep value {v}: npp must be >= 1")
        vals.append(v)
    return vals


def validate(np_: int, source: int | None, dest: int | None, npp, res_npp, cut_coef, ntrial, npptrial, npp_init,
             bins) -> tuple[int, int]:
    """Checks that need no MPI; returns (source, dest) with the defaults."""
    if np_ < 2:
        raise MtError(f"ping-pong needs at least 2 ranks, but -n/--np is {np_}")
    src = 0 if source is None else source
    dst = np_ - 1 if dest is None else dest
    for name, v in (("--source", src), ("--dest", dst)):
        if v < 0 or v >= np_:
            raise MtError(f"invalid {name} {v}: the job has {np_} ranks (allowed: 0..{np_ - 1})")
    if src == dst:
        raise MtError(f"--source and --dest are both rank {src}: they must differ")
    if npp is not None and npp < 1:
        raise MtError(f"invalid --npp {npp}: must be >= 1")
    if not (res_npp > 0) or not math.isfinite(res_npp):
        raise MtError(f"invalid --res-npp {res_npp:g}: must be > 0")
    if not (cut_coef > 1) or not math.isfinite(cut_coef):
        raise MtError(f"invalid --cut-coef {cut_coef:g}: must be > 1 (filtering keeps times <= cut_coef x median)")
    for name, v in (("--ntrial", ntrial), ("--npptrial", npptrial), ("--npp-init", npp_init), ("--bins", bins)):
        if v is not None and v < 1:
            raise MtError(f"invalid {name} {v}: must be >= 1")
    return src, dst


def run_core(build, np_: int, launcher: str | None, args: list[str], rundir: Path, timeout: float) -> None:
    """One mpirun of mpitempo-pingpong writing rundir/{meta.json,timings.csv}."""
    from mpitempo.runner.launch import make_launch

    binary = build.binary("mpitempo-pingpong")
    cmd = [binary, "--outdir", str(rundir), "--expect-np", str(np_), "--launch-json", str(rundir / "launch.json"),
           "--quiet"] + args
    launch = make_launch(build, np_, cmd, launcher)
    (rundir / "launch.json").write_text(json.dumps({"launcher": launch.to_json(), "build": build.to_json()},
                                                   indent=2) + "\n")
    env = dict(os.environ)
    env.update(launch.env)
    try:
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MtError(f"the ping-pong mpirun did not finish within {timeout:g} s (see --timeout)") from None
    (rundir / "stderr.log").write_text(r.stderr)
    if r.returncode != 0 or not (rundir / "meta.json").exists():
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        core = [ln for ln in lines if "mpitempo-pingpong: error:" in ln]
        msg = core[0].split("error:", 1)[1].strip() if core else (lines[-1] if lines else f"exit code {r.returncode}")
        raise MtError(f"the ping-pong run failed: {msg}")


def present(a: dict, as_json: bool, full: bool, outdir: Path | None, run) -> None:
    from mpitempo.analysis import pingpong as analysis
    from mpitempo.present import pingpong as report

    sizes = sorted({r["msize"] for r in a["results"]})
    sweeps = [analysis.sweep_table(a["results"], m) for m in sizes
              if len({r["npp"] for r in a["results"] if r["msize"] == m}) > 1]
    summary = report.summary_text(a, sweeps)
    if outdir is not None:
        from mpitempo.present.plots import pingpong as plots

        (outdir / "summary.txt").write_text(summary)
        (outdir / "full.txt").write_text(report.full_text(a, sweeps))
        (outdir / "analysis.json").write_text(json.dumps(analysis.json_records(a, details=True), indent=1) + "\n")
        plots.write_all(a, outdir / "plots")
    if as_json:
        print_json(analysis.json_records(a, details=full))
    elif full:
        click.echo(report.full_text(a, sweeps), nl=False)
    else:
        click.echo(summary, nl=False)
        if outdir is not None:
            click.echo(f"\nfull output, raw timings, analysis.json and plots in {outdir}")


@click.command()
@np_option
@launcher_option
@mpicc_option
@click.option("--source", type=int, default=None, help="Rank that times the ping-pongs (default 0).")
@click.option("--dest", type=int, default=None, help="The other rank (default: the last rank).")
@click.option("--msizes", default=DEFAULT_MSIZES, show_default=True, metavar="LIST",
              help="Message sizes in bytes, 0 allowed: 0,8,1K or ranges 0-4M (0,1,2,4,...,4M).")
@click.option("--ntrial", type=int, default=1000, show_default=True, help="Timing trials per size and npp.")
@click.option("--npp", type=int, default=None, help="Ping-pongs per timing loop (default: estimated, section 3.3).")
@click.option("--npp-sweep", default=None, metavar="LIST", help="Several npp, e.g. 1,9,18,36,72,144,15000 (Table 4.1).")
@click.option("--npp-init", type=int, default=20, show_default=True, help="Ping-pongs per loop of the npp estimate.")
@click.option("--npptrial", type=int, default=50, show_default=True, help="Trials of the npp estimate.")
@click.option("--res-npp", type=float, default=50.0, show_default=True,
              help="npp = nint(max(1, res_npp * res_timing / median_ppt)).")
@click.option("--max-pp", type=int, default=None, help="At most this many ping-pongs per (size, npp) set.")
@click.option("--cut-coef", type=float, default=2.0, show_default=True,
              help="Filtering keeps times <= cut_coef x median (must be > 1).")
@click.option("--compare", is_flag=True, help="Also run the loop-averaged OSU/IMB-style ping-pong and compare.")
@click.option("--loop-iters", type=int, default=None, help="Ping-pongs per loop-averaged timing (OSU: 10000/1000).")
@click.option("--loop-reps", type=int, default=10, show_default=True, help="Loop-averaged timings per size.")
@timer_option
@click.option("--timer-reads", type=int, default=1 << 24, show_default=True, help="Pairs of the timer study.")
@click.option("--warmup", type=int, default=10, show_default=True, help="Untimed ping-pongs per size.")
@click.option("--bins", type=int, default=40, show_default=True, help="Histogram bins.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Keep everything here: timings.csv, meta.json, summary.txt, full.txt, analysis.json, plots/.")
@click.option("--from", "from_dir", type=click.Path(exists=True), default=None,
              help="Analyse an existing run (directory or JSON document) instead of measuring.")
@click.option("--full", is_flag=True, help="Print the full output (timer study, histograms, frequency tables).")
@click.option("--timeout", "timeout_s", type=float, default=3600, show_default=True, help="Seconds for the mpirun.")
@json_option
def pingpong(np, launcher, mpicc, source, dest, msizes, ntrial, npp, npp_sweep, npp_init, npptrial, res_npp, max_pp,
             cut_coef, compare, loop_iters, loop_reps, timer, timer_reads, warmup, bins, outdir, from_dir, full,
             timeout_s, as_json):
    """Small-message latency: timer resolution and overhead, ping-pong with
    hand-shake, npp from the timer resolution, full statistics (paper 004).

    Times are one-way: ping-pong time / npp / 2, with the timer's minimum
    overhead subtracted. --json prints per message size and npp: msize, npp,
    res_timing_s, min_ov_s, min_s, median_s, mean_s, max_s, variance_s2, std_s,
    cv, se_s, rse, rates (MB/s) and the same under "filtered" with "removed".
    """
    from mpitempo.analysis import pingpong as analysis
    from mpitempo.io import pingpong as data

    np_ = 2 if np is None else np
    src, dst = validate(np_, source, dest, npp, res_npp, cut_coef, ntrial, npptrial, npp_init, bins)
    sizes = parse_sizes0(msizes)
    sweep = parse_npp_list(npp_sweep) if npp_sweep else None
    if sweep and npp is not None:
        raise MtError("--npp and --npp-sweep exclude each other: give one of them")
    for name, v in (("--max-pp", max_pp), ("--loop-iters", loop_iters), ("--loop-reps", loop_reps),
                    ("--timer-reads", timer_reads)):
        if v is not None and v < 1:
            raise MtError(f"invalid {name} {v}: must be >= 1")
    if warmup < 0:
        raise MtError(f"invalid --warmup {warmup}: must be >= 0")

    out = Path(outdir) if outdir else None
    if from_dir:
        run = data.load(from_dir)
    else:
        if out is not None:
            if out.exists() and any(out.iterdir()):
                raise MtError(f"--outdir '{out}' exists and is not empty; choose a new directory")
            out.mkdir(parents=True, exist_ok=True)
        from mpitempo.build import ensure_build

        b = ensure_build(mpicc)
        args = ["--source", str(src), "--dest", str(dst), "--msizes", ",".join(str(s) for s in sizes),
                "--ntrial", str(ntrial), "--npp-init", str(npp_init), "--npptrial", str(npptrial),
                "--res-npp", repr(float(res_npp)), "--timer-reads", str(timer_reads), "--warmup", str(warmup),
                "--loop-reps", str(loop_reps)]
        if npp is not None:
            args += ["--npp", str(npp)]
        if sweep:
            args += ["--npp-sweep", ",".join(str(x) for x in sweep)]
        if max_pp:
            args += ["--max-pp", str(max_pp)]
        if compare:
            args += ["--loop"]
        if loop_iters:
            args += ["--loop-iters", str(loop_iters)]
        if timer:
            args += ["--timer", timer]
        tmp = None
        rundir = out
        if rundir is None:
            tmp = tempfile.mkdtemp(prefix="mpitempo-pingpong-")
            rundir = Path(tmp)
        try:
            run_core(b, np_, launcher, args, rundir, timeout_s)
            run = data.load_dir(rundir)
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
    a = analysis.analyse(run, cut_coef=cut_coef, bins=bins, details=full or out is not None)
    present(a, as_json, full, out, run)
