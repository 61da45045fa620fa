"""Simulated platforms (SimGrid/SMPI): the platform files, their checks before anything is created,
the smpirun launch, and the 'simulated' flag wherever results are shown. No SimGrid needed here:
tests/mpi/test_smpi.py runs the real simulator."""
from __future__ import annotations

from pathlib import Path

import pytest

from mpitempo.build import Build
from mpitempo.errors import MtError
from mpitempo.io import platform as pf

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ROOT / "platforms"

pytestmark = pytest.mark.one_library

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def write(tmp_path, body: str, name: str = "p.xml") -> Path:
    p = tmp_path / name
    p.write_text(HEAD + body)
    return p


@pytest.mark.parametrize("name, hosts, cores", [("cluster64-fast", 64, 256), ("cluster64-slow", 64, 256),
                                                 ("fattree256", 256, 1024), ("torus1024", 1024, 1024)])
def test_shipped_platforms_count(name, hosts, cores):
    plat = pf.read_platform(PLATFORMS / f"{name}.xml")
    assert (plat.nhosts, plat.ncores) == (hosts, cores)
    assert plat.network_model == "SMPI"
    # the correction factors are 1: the platform's latency and bandwidth are the truth
    assert plat.config.get("smpi/lat-factor") == "0:1" and plat.config.get("smpi/bw-factor") == "0:1"
    assert len(plat.sha256) == 64


def test_hosts_of_mixed_elements(tmp_path):
    p = write(tmp_path, """<platform version="4.1"><zone id="z" routing="Full">
        <host id="a" speed="1Gf" core="2"/><host id="b" speed="1Gf"/>
        <cluster id="c" prefix="n" suffix=".x" radical="0-2,7" speed="1Gf" bw="1GBps" lat="1us" core="3"/>
        </zone></platform>""")
    plat = pf.read_platform(p)
    assert plat.hosts == [("a", 2), ("b", 1), ("n0.x", 3), ("n1.x", 3), ("n2.x", 3), ("n7.x", 3)]
    assert plat.ncores == 15
    assert pf.slots(plat, 1) == [(h, 1) for h, _ in plat.hosts]


@pytest.mark.parametrize("body, why", [
    ("<foo/>", "the root element is <foo>"),
    ("<platform version='4.1'><zone id='z' routing='Full'/></platform>", "declares no host"),
    ("<platform version='4.1'><cluster id='c' prefix='n' radical='0-x' speed='1Gf' bw='1GBps' lat='1us'/></platform>",
     "radical '0-x'"),
    ("<platform version='4.1'><cluster id='c' prefix='n' radical='3-1' speed='1Gf' bw='1GBps' lat='1us'/></platform>",
     "radical range '3-1'"),
    ("<platform version='4.1'><host id='a' speed='1Gf' core='0'/></platform>", "core='0'"),
    ("<platform version='4.1'><host id='a' speed='1Gf'/><host id='a' speed='1Gf'/></platform>", "host 'a' is declared twice"),
    ("<platform version='4.1'><host id='a'", "not XML"),
])
def test_bad_platforms(tmp_path, body, why):
    with pytest.raises(MtError, match="invalid --platform|radical|core=|declared twice") as e:
        pf.read_platform(write(tmp_path, body))
    assert why in str(e.value)


def test_missing_and_directory(tmp_path):
    with pytest.raises(MtError, match="not found"):
        pf.read_platform(tmp_path / "nope.xml")
    with pytest.raises(MtError, match="not a regular file"):
        pf.read_platform(tmp_path)
    with pytest.raises(MtError, match="give the path"):
        pf.read_platform("")


def test_check_np_and_ppn():
    plat = pf.read_platform(PLATFORMS / "cluster64-fast.xml")
    pf.check_np(plat, 256)
    with pytest.raises(MtError, match="257 ranks do not fit .* room for 256 ranks"):
        pf.check_np(plat, 257)
    pf.check_np(plat, 257, oversubscribe=True)
    pf.check_np(plat, 64, ppn=1)
    with pytest.raises(MtError, match="room for 64 ranks at 1 rank"):
        pf.check_np(plat, 65, ppn=1)
    with pytest.raises(MtError, match="invalid platform_ppn"):
        pf.check_np(plat, 2, ppn=0)


def test_hostfile_fills_hosts_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    plat = pf.read_platform(PLATFORMS / "fattree256.xml")
    lines = pf.hostfile(plat).read_text().splitlines()
    assert lines[:5] == ["ft-0"] * 4 + ["ft-1"] and len(lines) == 1024
    assert pf.hostfile(plat, 1).read_text().splitlines()[:2] == ["ft-0", "ft-1"]


def smpi_build(tmp_path) -> Build:
    exe = tmp_path / "smpirun"
    exe.write_text("#!/bin/sh\necho SimGrid version 3.32\n")
    exe.chmod(0o755)
    return Build(fingerprint="f" * 16, mpicc="/usr/bin/smpicc", mpiexec=str(exe), flavour="smpi", show="",
                 mpiexec_version="SimGrid version 3.32", bindir=str(tmp_path))


def test_launch_smpirun(tmp_path, monkeypatch):
    from mpitempo.runner.launch import make_launch

    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    b = smpi_build(tmp_path)
    plat = PLATFORMS / "cluster64-slow.xml"
    lw = make_launch(b, 128, ["core", "--x"], platform=str(plat), platform_ppn=2)
    argv = lw.argv
    assert argv[0] == b.mpiexec and argv[argv.index("-platform") + 1] == str(plat.resolve())
    assert argv[argv.index("-np") + 1] == "128" and argv[-2:] == ["core", "--x"]
    lines = Path(argv[argv.index("-hostfile") + 1]).read_text().splitlines()
    assert lines[:3] == ["slow-0", "slow-0", "slow-1"] and len(lines) == 128   # no 'host:N': smpirun keeps
    assert not any(":" in ln for ln in lines)                                   # unrolled copies in the cwd
    assert "--cfg=smpi/simulate-computation:no" in argv
    sim = lw.to_json()["simulation"]
    assert sim["simulated"] and sim["simgrid_version"] == "3.32" and sim["platform_hosts"] == 64
    assert sim["network_model"] == "SMPI" and sim["ranks_per_host"] == 2 and len(sim["platform_sha256"]) == 64
    assert not lw.oversubscribed and lw.binding == "simulated"


def test_launch_refusals(tmp_path, monkeypatch):
    from mpitempo.runner.launch import make_launch

    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    b = smpi_build(tmp_path)
    plat = str(PLATFORMS / "cluster64-fast.xml")
    with pytest.raises(MtError, match="runs on a simulated platform only; give --platform"):
        make_launch(b, 2, ["core"])
    with pytest.raises(MtError, match="srun cannot start a simulated platform"):
        make_launch(b, 2, ["core"], "srun", platform=plat)
    with pytest.raises(MtError, match="must contain \\{platform\\}"):
        make_launch(b, 2, ["core"], "smpirun -np {np} {cmd}", platform=plat)
    with pytest.raises(MtError, match="300 ranks do not fit"):
        make_launch(b, 300, ["core"], platform=plat)
    hw = Build(fingerprint="0" * 16, mpicc="/usr/bin/mpicc", mpiexec="/bin/true", flavour="mpich", show="",
               mpiexec_version="HYDRA", bindir=str(tmp_path))
    with pytest.raises(MtError, match="--platform needs a core built with SimGrid's smpicc"):
        make_launch(hw, 2, ["core"], platform=plat)
    # a custom template with the placeholders
    lw = make_launch(b, 4, ["core"], "{mpiexec} -platform {platform} -hostfile {hostfile} -np {np} "
                                       "--cfg=network/model:CM02 {cmd}", platform=plat)
    assert lw.simulation["network_model"] == "CM02"


def test_campaign_refuses_before_creating(tmp_path, cli):
    out = tmp_path / "c"
    code, _, err = cli("run", "--platform", PLATFORMS / "cluster64-fast.xml", "-n", "300", "-o", out)
    assert code != 0 and "300 ranks do not fit" in err and not out.exists()
    code, _, err = cli("run", "--platform", tmp_path / "none.xml", "-n", "2", "-o", out)
    assert code != 0 and "not found" in err and not out.exists()
    bad = write(tmp_path, "<notaplatform/>")
    code, _, err = cli("run", "--platform", bad, "-n", "2", "-o", out)
    assert code != 0 and "root element is <notaplatform>" in err and not out.exists()
    code, _, err = cli("run", "--platform", PLATFORMS / "cluster64-fast.xml", "--platform-ppn", "1", "-n", "65",
                       "-o", out)
    assert code != 0 and "room for 64 ranks at 1 rank(s) per host" in err and not out.exists()


def test_campaign_records_platform(tmp_path):
    from mpitempo.io.campaign import build_campaign

    c = build_campaign({"platform": str(PLATFORMS / "torus1024.xml"), "np": [64, 1024], "platform_ppn": 1})
    cfg = c.configs[0]
    assert cfg.platform == str((PLATFORMS / "torus1024.xml").resolve()) and cfg.build_mpicc == "smpicc"
    assert "platform_ppn = 1" in c.to_toml() and "torus1024.xml" in c.to_toml()
    with pytest.raises(MtError, match="invalid platform_ppn"):
        build_campaign({"platform": str(PLATFORMS / "torus1024.xml"), "platform_ppn": "x"})


def test_simulated_flag():
    from mpitempo.analysis.flags import flag_cell, flag_notes, group_flags, simulation_of

    sim_meta = {"launch": {"launcher": {"simulation": {"simulated": True, "platform": "/p.xml"}}}}
    assert simulation_of(sim_meta)["platform"] == "/p.xml"
    assert simulation_of({"mpi": {"library": "SMPI Version 3.32."}})["simulator"] == "SimGrid/SMPI"
    assert simulation_of({"mpi": {"library": "MPICH Version: 4.0"}}) is None
    rows = [{"run_id": "r0", "run_index": 0, "n": 5, "median_s": 1e-5, "outliers": 0}]
    g = group_flags(rows, {"r0": sim_meta})
    assert g["flags"][0] == "simulated"
    assert "SIMULATED" in flag_cell(g["flags"])
    note = flag_notes([{"flags": g["flags"], "config": "d", "op": "barrier", "msize": 0, "nprocs": 2}])
    assert any("SIMULATED platform" in n and "not a measurement of hardware" in n for n in note)
    assert group_flags(rows, {"r0": {}})["flags"] == []
