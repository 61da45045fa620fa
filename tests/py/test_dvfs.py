"""DVFS as a factor: the governor is set for a campaign and restored (on a fake sysfs tree), and
refused with the reason where cpufreq is missing."""
from __future__ import annotations

import json

import pytest

from mpitempo.errors import MtError
from mpitempo.io.campaign import build_campaign
from mpitempo.runner.dvfs import check_governor, fixed_governor


def fake_sysfs(root, n=2, gov="powersave", avail="performance powersave"):
    for i in range(n):
        d = root / f"cpu{i}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
        (d / "scaling_available_governors").write_text(avail + "\n")
    return root


def test_set_and_restore(tmp_path, monkeypatch):
    root = fake_sysfs(tmp_path / "cpu")
    monkeypatch.setenv("MPITEMPO_SYSFS_CPU", str(root))
    rec = tmp_path / "dvfs.json"
    with fixed_governor("performance", rec) as info:
        assert info["cpus"] == 2
        assert (root / "cpu1" / "cpufreq" / "scaling_governor").read_text().strip() == "performance"
    assert (root / "cpu0" / "cpufreq" / "scaling_governor").read_text().strip() == "powersave"
    d = json.loads(rec.read_text())
    assert d["restored"] and set(d["after_set"].values()) == {"performance"}


def test_restored_after_an_error(tmp_path, monkeypatch):
    root = fake_sysfs(tmp_path / "cpu")
    monkeypatch.setenv("MPITEMPO_SYSFS_CPU", str(root))
    with pytest.raises(RuntimeError):
        with fixed_governor("performance"):
            raise RuntimeError("a failed campaign")
    assert (root / "cpu0" / "cpufreq" / "scaling_governor").read_text().strip() == "powersave"


def test_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("MPITEMPO_SYSFS_CPU", str(tmp_path / "none"))
    with pytest.raises(MtError, match="no cpufreq driver"):
        check_governor("performance")
    monkeypatch.setenv("MPITEMPO_SYSFS_CPU", str(fake_sysfs(tmp_path / "cpu")))
    with pytest.raises(MtError, match=r"invalid governor 'turbo' \(allowed here: performance, powersave\)"):
        check_governor("turbo")


def test_campaign_key_and_cli_refusal(cli, tmp_path, monkeypatch):
    assert build_campaign({"governor": "performance"}).governor == "performance"
    assert 'governor = "performance"' in build_campaign({"governor": "performance"}).to_toml()
    monkeypatch.setenv("MPITEMPO_SYSFS_CPU", str(tmp_path / "none"))
    spec = tmp_path / "c.toml"
    spec.write_text('governor = "performance"\n')
    code, out, err = cli("run", spec, "-o", tmp_path / "out")
    assert code != 0 and "cannot set governor 'performance'" in err and not (tmp_path / "out").exists()
