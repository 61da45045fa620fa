"""The example campaigns in examples/ are valid and run (shortened)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpitempo.io.campaign import build_campaign, load_toml

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_parses(path):
    c = build_campaign(load_toml(path))
    assert c.ops and c.msizes and c.configs


@pytest.mark.mpi
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(cli, build, tmp_path, path):
    out = tmp_path / "c"
    code, so, se = cli("run", path, "-o", out, "--mpiruns", "1", "--nrep", "5", "--quiet", "--no-summary")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    c = build_campaign(load_toml(path))
    assert {r["config"] for r in json.loads(so)} == {x.name for x in c.configs}
