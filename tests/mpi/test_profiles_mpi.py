"""--like osu|imb through real 2-rank mpiruns: the profile and the settings it chose are recorded as
factors (campaign.toml, every run's meta.json through the core), `info --diff` and `compare` see
them, and the core ran with them (its own meta.json says so)."""
from __future__ import annotations

import json
import tomllib

import pytest

pytestmark = pytest.mark.mpi


def _metas(out):
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/meta.json"))}


def test_osu_names_record_the_profile(cli, build, tmp_path):
    out = tmp_path / "c"
    code, so, se = cli("run", "--ops", "osu_bw,osu_bibw", "--msizes", "8,1K", "--nrep", "5", "--mpiruns", "1",
                       "-o", out, "--quiet", "--no-summary")
    assert code == 0, se
    spec = tomllib.loads((out / "campaign.toml").read_text())
    assert spec["like"] == "osu" and spec["ops"] == ["bw", "bibw"]
    assert (spec["scheme"], spec["bw_rbuf"], spec["bw_window"], spec["datatype"]) == ("loop", "single", 64, "char")
    (meta,) = _metas(out).values()
    assert meta["like"] == "osu"
    assert meta["scheme"]["name"] == "loop"
    op = meta["operation_params"]
    assert (op["bw_rbuf"], op["bw_window"], op["datatype"]) == ("single", 64, "char")
    # resume reads campaign.toml back: nothing to run, nothing refused
    code, so, se = cli("run", "--resume", out, "--quiet", "--no-summary", "--yes")
    assert code == 0, se


def test_profile_as_a_factor_of_a_campaign(cli, build, tmp_path):
    """Two configurations, one with --like imb: info --diff and compare --by like name the factor."""
    spec = tmp_path / "c.toml"
    spec.write_text('ops = ["pingping"]\nmsizes = [8, 1024]\nnrep = 5\nmpiruns = 1\n'
                    '[[config]]\nname = "imb"\nlike = "imb"\n\n[[config]]\nname = "plain"\n')
    out = tmp_path / "c"
    code, so, se = cli("run", spec, "-o", out, "--quiet", "--no-summary")
    assert code == 0, se
    metas = _metas(out)
    assert metas["imb-000"]["like"] == "imb" and "like" not in metas["plain-000"]
    assert metas["imb-000"]["scheme"]["name"] == "loop" and metas["plain-000"]["scheme"]["name"] == "barrier"
    code, so, se = cli("info", "--diff", out, "--json")
    assert code == 0, se
    diff = json.loads(so)
    text = json.dumps(diff)
    assert '"like"' in text and '"imb"' in text, text[:2000]
    code, so, se = cli("compare", out, "--by", "like", "--json")
    assert code == 0, se
    rows = json.loads(so)
    assert {(r["a"], r["b"]) for r in rows} == {("imb", "none")} or {(r["a"], r["b"]) for r in rows} == {("none", "imb")}


def test_pingpong_like_osu(cli, build, tmp_path):
    out = tmp_path / "pp"
    code, so, se = cli("pingpong", "--like", "osu", "--msizes", "8", "--ntrial", "5", "--loop-reps", "2",
                       "--timer-reads", "10000", "-o", out, "--quiet")
    assert code == 0, se
    spec = tomllib.loads((out / "campaign.toml").read_text())
    assert spec["like"] == "osu" and spec["loop"] is True and "loop_iters" not in spec
    (meta,) = _metas(out).values()
    assert meta["like"] == "osu"
    rows = (out / "runs" / "default-000" / "timings.csv").read_text().splitlines()
    assert any(r.startswith("loop,") for r in rows), rows[:3]
