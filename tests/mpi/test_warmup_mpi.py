"""--warmup auto for real (issue 27): every scheme records in meta.json, per experiment, the warm-up
calls it made and whether the cap stopped them; the calls really happen (the delay op's wall time
covers them); all ranks make the same number (a collective op would hang otherwise); the Python side
accepts `--warmup auto` from the command line and campaign files and shows the counts in summary.
Timings are never asserted: the machine is shared."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi
WINDOW, AGREE, CAP = 20, 2, 2000   # MT_WARMUP_* of src/core/scheme/scheme.h


def bench(build, args, outdir, np=2):
    outdir.mkdir(parents=True, exist_ok=True)
    launch = make_launch(build, np, [build.binary(), *args, "--outdir", str(outdir)])
    env = dict(os.environ)
    env.update(launch.env)
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads((outdir / "meta.json").read_text()), r.stderr


def check_auto(meta):
    s = meta["scheme"]
    assert s["warmup"] == "auto"
    assert s["warmup_auto"] == {"window": WINDOW, "rel_tol": 0.05, "abs_tol_s": 2e-8, "agree": AGREE, "cap": CAP,
                                "statistic": "max over ranks of the median call time of a window"}
    capped = 0
    for e in meta["experiments"]:
        n = e["warmup_calls"]
        assert isinstance(n, int) and n % WINDOW == 0 and (AGREE + 1) * WINDOW <= n <= CAP, e
        assert e["warmup_capped"] == (n == CAP and e["warmup_capped"]), e   # capped only at the cap
        capped += e["warmup_capped"]
    assert s["warmup_capped_experiments"] == capped


@pytest.mark.parametrize("scheme", ["barrier", "loop", "barrier_loop", "window", "roundtime"])
def test_auto_recorded_by_every_scheme(build, tmp_path, scheme):
    extra = ["--window", "2ms"] if scheme == "window" else []
    meta, err = bench(build, ["--ops", "allreduce,bcast", "--msizes", "8,4K", "--nrep", "10", "--warmup", "auto",
                              "--scheme", scheme, "--allow-few-valid", *extra], tmp_path / scheme)
    check_auto(meta)
    assert len(meta["experiments"]) == 4
    for e in meta["experiments"]:
        if e["warmup_capped"]:
            assert f"{e['op']} {e['msize']} B: --warmup auto found no steady state in {CAP} calls" in err


def test_auto_calls_really_happen(build, tmp_path):
    """The delay op busy-waits 300 us per call: a steady sequence from the first call, so the test stops
    at its minimum, and the experiment's wall time covers warm-up plus measurements."""
    meta, _ = bench(build, ["--ops", "delay", "--delay", "300us", "--nrep", "10", "--warmup", "auto"], tmp_path / "d")
    check_auto(meta)
    (e,) = meta["experiments"]
    assert e["warmup_calls"] >= (AGREE + 1) * WINDOW
    assert e["wall_s"] >= (e["warmup_calls"] + 10) * 300e-6 * 0.99, e


def test_fixed_warmup_recorded(build, tmp_path):
    meta, _ = bench(build, ["--ops", "allreduce", "--msizes", "8", "--nrep", "10", "--warmup", "7"], tmp_path / "f")
    assert meta["scheme"]["warmup"] == 7 and "warmup_auto" not in meta["scheme"]
    (e,) = meta["experiments"]
    assert e["warmup_calls"] == 7 and e["warmup_capped"] is False


@pytest.mark.parametrize("value,msg", [("often", "expected an integer in [0, 100000000] or auto"),
                                       ("-1", "expected an integer in [0, 100000000] or auto"),
                                       ("Auto", "expected an integer in [0, 100000000] or auto")])
def test_bad_warmup_in_the_core(build, tmp_path, value, msg):
    launch = make_launch(build, 2, [build.binary(), "--warmup", value])
    env = dict(os.environ)
    env.update(launch.env)
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0 and f"invalid --warmup '{value}': {msg}" in r.stderr


def test_cli_and_campaign_file(cli, build, tmp_path):
    out = tmp_path / "camp"
    code, so, se = cli("run", "--ops", "allreduce", "--msizes", "8", "--nrep", "10", "--warmup", "auto",
                       "--mpiruns", "2", "-o", out, "--quiet", "--no-summary")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    assert code == 0, se
    (row,) = json.loads(so)
    w = row["warmup"]
    assert w["setting"] == "auto" and w["calls_min"] >= (AGREE + 1) * WINDOW and w["calls_max"] <= CAP
    assert ("warmup_capped" in row["flags"]) == bool(w["capped_runs"])
    code, so, se = cli("summary", out)
    # the table fits 100 columns: the warm-up column is shown, or named as left out (the last
    # column to go, when long flags such as a core-placement stratum take the room)
    assert code == 0 and "warm-up" in so
    code, so, se = cli("summary", out, "--markdown")   # every column
    assert code == 0 and "warm-up" in so and "auto" in so
    # a campaign file with warmup = "auto"
    toml = tmp_path / "c.toml"
    toml.write_text('np = 2\nmpiruns = 1\nops = ["allreduce"]\nmsizes = "8"\nnrep = 10\nwarmup = "auto"\n')
    out2 = tmp_path / "camp2"
    code, so, se = cli("run", toml, "-o", out2, "--quiet", "--no-summary")
    assert code == 0, se
    metas = list(out2.glob("runs/*/meta.json"))
    assert metas and json.loads(metas[0].read_text())["scheme"]["warmup"] == "auto"
    # bad values are refused before anything is created
    out3 = tmp_path / "camp3"
    code, so, se = cli("run", "--ops", "allreduce", "--warmup", "often", "-o", out3)
    assert code == 2 and "invalid --warmup 'often': expected an integer >= 0 or auto" in se and not out3.exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('np = 2\nops = ["allreduce"]\nwarmup = "sometimes"\n')
    code, so, se = cli("run", bad, "-o", tmp_path / "camp4")
    assert code == 2 and "warmup" in se and "sometimes" in se and not (tmp_path / "camp4").exists()
