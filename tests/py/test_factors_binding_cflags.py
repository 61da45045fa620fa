"""Pinning and compiler flags as campaign factors: `binding` and `cflags` per configuration."""
from __future__ import annotations

import pytest

from mpitempo.build import Build, fingerprint
from mpitempo.errors import MtError
from mpitempo.io.campaign import build_campaign
from mpitempo.runner.launch import default_template


def test_binding_and_cflags_keys():
    c = build_campaign({"config": [{"name": "a"}, {"name": "b", "binding": "none", "cflags": "-O0"}]})
    a, b = c.configs
    assert (a.binding, a.cflags) == ("core", None) and (b.binding, b.cflags) == ("none", "-O0")
    toml = c.to_toml()
    assert 'binding = "none"' in toml and 'cflags = "-O0"' in toml
    assert build_campaign({"binding": "none"}).configs[0].binding == "none"


def test_bad_binding_and_cflags():
    with pytest.raises(MtError, match=r"invalid binding 'socket' in \[\[config\]\] 'b' \(allowed: core, none\)"):
        build_campaign({"config": [{"name": "b", "binding": "socket"}]})
    with pytest.raises(MtError, match="invalid cflags 3"):
        build_campaign({"cflags": 3})


@pytest.mark.parametrize("flavour,bound,unbound", [("mpich", "-bind-to core", None),
                                                   ("openmpi", "--bind-to core", "--bind-to none")])
def test_default_template_binding(monkeypatch, flavour, bound, unbound):
    monkeypatch.setattr("mpitempo.runner.launch.ncores", lambda: 2)
    b = Build(fingerprint="x", mpicc="", mpiexec="mpiexec", flavour=flavour, show="", mpiexec_version="",
              bindir="/", origin="built", source="")
    t, binding, over = default_template(b, 2)
    assert bound in t and binding == "core" and not over
    t, binding, over = default_template(b, 2, "none")
    assert "bind-to core" not in t and binding == "none" and not over
    if unbound:
        assert unbound in t


def test_cflags_change_the_fingerprint(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int x;\n")
    base = fingerprint("/bin/true", "cc", tmp_path)
    assert fingerprint("/bin/true", "cc", tmp_path, None) == base
    assert fingerprint("/bin/true", "cc", tmp_path, "-O0") != base != fingerprint("/bin/true", "cc", tmp_path, "-O2")


def test_logp_results_are_not_factors():
    """Two LogP mpiruns measure different L, o_s, ... (results, per run and per pair): not a difference
    of experimental factors; a different o_r method (a setting) is."""
    from mpitempo.analysis.factors import flatten, within_group_differences

    def meta(L, method="probe"):
        return flatten({"config": "default", "logp_config": {"nrep": 200, "o_r_method": method,
                                                              "timer_overhead_s": L / 100},
                        "logp": {"L_s": L, "o_s_s": 2 * L, "sane": True},
                        "pairs": [{"a": 0, "b": 1, "L_s": L, "rtt_s": 9 * L}]})
    assert within_group_differences({"r0": meta(1e-7), "r1": meta(2e-7)}) == {}
    assert within_group_differences({"r0": meta(1e-7), "r1": meta(2e-7, "wait")}) == {"default": ["logp_config.o_r_method"]}
