"""How long a bench campaign will take, from a short calibration, and fitting it to a --budget
(docs/campaigns.md, "Budget and estimate").

The calibration is one mpirun per (configuration, process count) with CAL_NREP measurements per
experiment (no adaptive rule): its duration minus the experiments' own wall time is the mpirun's
fixed cost (launch, MPI_Init, timer study, clock sync, MPI_Finalize). With the local-timer schemes a
measurement of an experiment costs its median time x the calls per measurement (at most its wall time /
CAL_NREP), and the rest of the experiment's wall time (buffers, a window's creation, the warm-up) is paid
once per mpirun; with the clock-based schemes a measurement costs wall time / CAL_NREP.
An mpirun with a fixed nrep then costs fixed + sum(per_rep x nrep); with adaptive repetitions it
costs between the floor (every experiment stops at nrep_min) and the most (each runs to nrep, or
to nrep_min plus twice exp_time: a look can come up to one block after exp_time has passed).
"""
from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io.params import parse_duration, percent_value

CAL_NREP = 5


@dataclass
class Estimate:
    floor_s: float                  # the first `mpiruns` mpiruns, every experiment at its floor
    most_s: float                   # the first `mpiruns` mpiruns at their most (cap or exp_time)
    extra_most_s: float             # adaptive mpiruns beyond them, up to max_mpiruns, at their most
    calibration_s: float
    mpiruns: int
    max_mpiruns: int
    per_run: dict = field(default_factory=dict)   # (config, np) -> {fixed_s, floor_s, most_s}
    adaptive: bool = False
    generic: bool = False           # calibrated with one whole mpirun per (configuration, np)

    @property
    def total_most_s(self) -> float:
        return self.most_s + self.extra_most_s

    def line(self) -> str:
        runs = f"{self.mpiruns} mpirun(s)" + (f" (up to {self.max_mpiruns} while rows are wider than the precision)"
                                              if self.max_mpiruns > self.mpiruns else "")
        if self.generic:
            per = "; ".join(f"{cfg} np {np_}: {fmt_s(v['most_s'])}" for (cfg, np_), v in self.per_run.items())
            return (f"mpitempo: estimate about {fmt_s(self.most_s)}: {runs} x ({per}); calibrated with one mpirun "
                    f"of each in {fmt_s(self.calibration_s)}")
        per = "; ".join(f"{cfg} np {np_}: {fmt_s(v['fixed_s'])} start-up + "
                        + (f"{fmt_s(v['floor_s'] - v['fixed_s'])} to {fmt_s(v['most_s'] - v['fixed_s'])}"
                           if fmt_s(v['floor_s']) != fmt_s(v['most_s']) else fmt_s(v['most_s'] - v['fixed_s']))
                        + " measuring"
                        for (cfg, np_), v in self.per_run.items())
        if fmt_s(self.floor_s) != fmt_s(self.total_most_s):
            what = f"between {fmt_s(self.floor_s)} and {fmt_s(self.total_most_s)}"
        else:
            what = f"about {fmt_s(self.most_s)}"
        return (f"mpitempo: estimate {what}: {runs} x ({per}); calibrated in {fmt_s(self.calibration_s)} "
                f"with {CAL_NREP} measurements per experiment")



def early_look(nrep_min: int, nrep: int, min_valid: int) -> int | None:
    """The core's early look (base/stoprule.c mt_stop_looks_early): the smallest n >= min_valid whose
    interval of the median exists at the level 1 - 0.05 / (K + 1), K the looks from nrep_min doubling to
    nrep; None when that is not below nrep_min (no early look)."""
    k, n = 1, max(1, min(nrep_min, nrep))
    while n < nrep and k < 63:
        n, k = n * 2, k + 1
    ne = max(1, min_valid)
    while ne < nrep_min and 2.0 ** (1 - ne) > 0.05 / (k + 1):
        ne += 1
    return ne if ne < min(nrep_min, nrep) else None

def fmt_s(s: float) -> str:
    s = max(0.0, float(s))
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def _calibration_mpirun(c, cfg, build, np_: int, tmp: Path, values: dict) -> tuple[float, dict]:
    """One mpirun of the campaign's core with these parameter values into a temporary directory:
    (seconds it took, its meta.json). MtError (one line) when it fails or times out."""
    import os

    from mpitempo.runner.launch import make_launch

    kind = c.kind_obj
    if getattr(kind, "command", None):   # a kind that launches something else than a core binary
        raise MtError(f"--budget and --estimate are not available for campaigns of kind '{c.kind}'")
    out = tmp / f"{cfg.name}-np{np_}"
    out.mkdir()
    cmd = [build.binary(kind.executable), "--outdir", str(out), *kind.core_args(values), "--expect-np", str(np_),
           "--quiet"]
    launch = make_launch(build, np_, cmd, cfg.launcher, cfg.env, cfg.binding, **cfg.platform_args)
    env = dict(os.environ)
    env.update(launch.env)
    t0 = time.monotonic()
    try:
        r = subprocess.run(launch.argv, env=env, capture_output=True, text=True, timeout=c.timeout_s)
    except subprocess.TimeoutExpired:
        raise MtError(f"the calibration mpirun of config '{cfg.name}' ({np_} ranks) did not finish within "
                      f"{c.timeout_s:g} s (timeout_s): no estimate") from None
    dt = time.monotonic() - t0
    try:
        meta = json.loads((out / "meta.json").read_text()) if r.returncode == 0 else None
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict):
        tail = (r.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise MtError(f"the calibration mpirun of config '{cfg.name}' ({np_} ranks) failed (exit {r.returncode}): "
                      f"{tail[0][:300]}")
    return dt, meta


def _calibrate_one(c, cfg, build, np_: int, tmp: Path) -> dict:
    """A bench mpirun with CAL_NREP measurements per experiment and no adaptive rule."""
    p = dict(c.params_for(cfg))
    p.update({"nrep": CAL_NREP, "precision": "off", "exp_time": None, "nrep_min": None, "timestamps": None,
              "per_rank": None})
    dt, meta = _calibration_mpirun(c, cfg, build, np_, tmp, p)
    sch = meta.get("scheme") or {}
    calls = int(sch.get("inner") or 1) if sch.get("name") in ("loop", "barrier_loop") else 1
    exps = []
    for e in meta.get("experiments", []):
        wall = float(e["wall_s"])
        med = e.get("median_s")
        if sch.get("name") in ("barrier", "loop", "barrier_loop") and isinstance(med, (int, float)) and med > 0:
            # a measurement costs its calls (plus a barrier, not counted); the rest of the experiment's
            # wall time (buffers, a window's creation, the warm-up) is paid once, whatever nrep is
            # (the loop scheme with --inner-min-time decides its calls per experiment: experiments[].inner)
            per_rep = min(wall / CAL_NREP, med * int(e.get("inner") or calls))
        else:   # the clock-based schemes: a measurement is a window or a round of Round-Time
            per_rep = wall / CAL_NREP
        exps.append((e["op"], e["msize"], wall, per_rep, max(0.0, wall - CAL_NREP * per_rep)))
    return {"duration_s": dt, "exps": exps}


def estimate(c, builds: dict) -> Estimate:
    """Calibrate every (configuration, process count) of a bench campaign and estimate its duration."""
    t0 = time.monotonic()
    per: dict = {}
    adaptive = False
    with tempfile.TemporaryDirectory(prefix="mpitempo-calibrate-") as td:
        for cfg in c.configs:
            p = c.params_for(cfg)
            prec = percent_value(p.get("precision") or "off")
            adaptive |= prec > 0
            nrep = int(p["nrep"])
            nmin = min(int(p.get("nrep_min") or 20), nrep)
            tmax = parse_duration(p["exp_time"], "exp_time") if p.get("exp_time") else float("inf")
            for np_ in c.np:
                cal = _calibrate_one(c, cfg, builds[cfg.name], np_, Path(td))
                meas = sum(w for _, _, w, _, _ in cal["exps"])
                # the mpirun's own cost, and each experiment's once-only cost (set-up, warm-up)
                fixed = max(0.0, cal["duration_s"] - meas) + sum(o for *_, o in cal["exps"])
                per_rep = [t for _, _, _, t, _ in cal["exps"]]
                if prec > 0:
                    ne = early_look(nmin, nrep, int(p.get("min_valid") or min(nrep, 10))) if tmax < float("inf") else None
                    # an experiment whose floor would exceed exp_time stops at the early look (bench.c exp_looks)
                    floor = fixed + sum(t * ne if ne and t * nmin >= tmax else t * nmin for t in per_rep)
                    most = fixed + sum(t * ne if ne and t * nmin >= tmax else min(t * nrep, t * nmin + 2 * tmax)
                                       for t in per_rep)
                else:
                    floor = most = fixed + sum(t * nrep for t in per_rep)
                per[(cfg.name, np_)] = {"fixed_s": fixed, "floor_s": floor, "most_s": most, "per_rep_s": per_rep}
    one_floor = sum(v["floor_s"] for v in per.values())
    one_most = sum(v["most_s"] for v in per.values())
    mx = c.max_mpiruns or c.mpiruns
    return Estimate(floor_s=c.mpiruns * one_floor, most_s=c.mpiruns * one_most,
                    extra_most_s=(mx - c.mpiruns) * one_most, calibration_s=time.monotonic() - t0,
                    mpiruns=c.mpiruns, max_mpiruns=mx, per_run=per, adaptive=adaptive)


def fit_budget(c, est: Estimate, budget_s: float, spent_s: float) -> str | None:
    """Refuse a budget the floor does not fit (MtError, one line); with adaptive repetitions lower
    exp_time so that the first `mpiruns` mpiruns fit at their most. Returns a note on what was changed."""
    left = budget_s - spent_s
    if est.floor_s > left:
        what = ("the floor of the adaptive rule" if est.adaptive else "what one calibration mpirun took" if est.generic
                else "its fixed nrep")
        raise MtError(f"--budget {fmt_s(budget_s)} does not fit this campaign: {est.mpiruns} mpiruns with {what} take "
                      f"about {fmt_s(est.floor_s)} (calibrated; {fmt_s(left)} left after the calibration): give a "
                      f"--budget of at least {fmt_s(est.floor_s + spent_s)}, or fewer mpiruns, ops, sizes or --nrep")
    if est.most_s <= left or not est.adaptive:
        return None
    # the measuring time per experiment beyond the floor that fits: (left / mpiruns - floor) / experiments / 2
    nexp = sum(len(v["per_rep_s"]) for v in est.per_run.values())
    share = (left / est.mpiruns - sum(v["floor_s"] for v in est.per_run.values())) / max(1, nexp) / 2
    share = max(share, 1e-3)
    c.params["exp_time"] = f"{share:.3g}s"
    for cfg in c.configs:
        cfg.params.pop("exp_time", None)
    return (f"mpitempo: --budget {fmt_s(budget_s)}: exp_time set to {c.params['exp_time']} per experiment and mpirun "
            "(beyond the floor) so that the first mpiruns fit")


def _one_mpirun(c, cfg, build, np_: int, tmp: Path) -> float:
    """Seconds of one mpirun of the campaign's own command (a kind without adaptive repetitions: its
    mpiruns are alike), run into a temporary directory."""
    return _calibration_mpirun(c, cfg, build, np_, tmp, c.params_for(cfg))[0]


def estimate_generic(c, builds: dict) -> Estimate:
    """The estimate of a campaign of another kind: one calibration mpirun per (configuration, process
    count), which is exactly one of the campaign's mpiruns, times the mpiruns."""
    t0 = time.monotonic()
    per = {}
    with tempfile.TemporaryDirectory(prefix="mpitempo-calibrate-") as td:
        for cfg in c.configs:
            for np_ in c.np:
                d = _one_mpirun(c, cfg, builds[cfg.name], np_, Path(td))
                per[(cfg.name, np_)] = {"fixed_s": d, "floor_s": d, "most_s": d, "per_rep_s": []}
    one = sum(v["most_s"] for v in per.values())
    return Estimate(floor_s=c.mpiruns * one, most_s=c.mpiruns * one, extra_most_s=0.0,
                    calibration_s=time.monotonic() - t0, mpiruns=c.mpiruns, max_mpiruns=c.mpiruns, per_run=per,
                    generic=True)


def check_new_target(target) -> None:
    """Before calibrating: an -o that cannot become a new campaign directory is refused now (execute
    checks it again when it creates it)."""
    if target is None:
        return
    target = Path(target)
    if target.exists() or target.is_symlink():
        if target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
            return
        raise MtError(f"'{target}' already exists: choose another -o (a campaign directory is created new)")


def budget_gate(c, budget: str | None, estimate_only: bool, quiet: bool = False, builds: dict | None = None,
                t_start: float | None = None, outdir=None) -> tuple[float | None, bool]:
    """--budget T / --estimate of a campaign-shaped command, before anything is created: calibrate,
    print the estimate, refuse a budget the campaign cannot fit. Returns (the deadline for
    execute(), or None; True when only the estimate was asked for: the caller stops)."""
    import click

    from mpitempo.runner.tuneplan import parse_budget

    budget_s = parse_budget(budget) if budget is not None else None
    if budget_s is None and not estimate_only:
        return None, False
    t_start = time.monotonic() if t_start is None else t_start
    if not estimate_only:
        check_new_target(outdir)
    if builds is None:
        from mpitempo.runner.execute import check_campaign
        builds = check_campaign(c)
    est = estimate(c, builds) if c.kind == "bench" else estimate_generic(c, builds)
    click.echo(est.line(), err=True)
    if estimate_only:
        return None, True
    note = fit_budget(c, est, budget_s, time.monotonic() - t_start)
    if note and not quiet:
        click.echo(note, err=True)
    return t_start + budget_s, False


def study_budget_gate(campaigns: list, builds: list, budget: str | None, estimate_only: bool, quiet: bool = False,
                      outdir=None) -> tuple[float | None, bool]:
    """budget_gate for a command that runs several campaigns one after the other (barrier: the barrier
    campaign and its LogP campaign): one calibration mpirun per (campaign, configuration, process count),
    an estimate line per campaign and their total; a budget the total cannot fit is refused before
    anything is created. Returns (the deadline shared by the campaigns, or None; True for --estimate)."""
    import click

    from mpitempo.runner.tuneplan import parse_budget

    budget_s = parse_budget(budget) if budget is not None else None
    if budget_s is None and not estimate_only:
        return None, False
    t_start = time.monotonic()
    if not estimate_only:
        check_new_target(outdir)
    ests = [estimate_generic(c, b) for c, b in zip(campaigns, builds)]
    for c, e in zip(campaigns, ests):
        click.echo(e.line().replace("mpitempo: estimate", f"mpitempo: {c.kind} campaign: estimate", 1), err=True)
    total = sum(e.most_s for e in ests)
    spent = time.monotonic() - t_start
    click.echo(f"mpitempo: estimate about {fmt_s(total)} in all (calibrated in {fmt_s(spent)})", err=True)
    if estimate_only:
        return None, True
    if total > budget_s - spent:
        raise MtError(f"--budget {fmt_s(budget_s)} does not fit this study: its campaigns take about {fmt_s(total)} "
                      f"(calibrated; {fmt_s(budget_s - spent)} left after the calibration): give a --budget of at "
                      f"least {fmt_s(total + spent)}, or fewer mpiruns, algorithms or process counts")
    return t_start + budget_s, False

