"""Received files are data, never code (issue 32, class 1; docs/security.md).

A campaign directory, a tuning.env or a platform file may come from someone else. What they may set
without the user's consent is an ALLOW-list (tuning variables of the MPI libraries; SMPI settings
checked by what their values mean); everything else is refused in one line naming it and the flag
that accepts it. A platform file replaced after a simulated campaign began is refused on resume.
Rows of docs/reliability.md ("Received files: the trust boundary") name these tests.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mpitempo.errors import MtError

ROOT = Path(__file__).resolve().parents[2]
TOML = 'name = "synthetic"\nmpiruns = 2\nnrep = 20\nops = ["allreduce"]\nmsizes = [8]\n'


def _canonical(text: str) -> str:
    import tomllib

    from mpitempo.io.campaign import build_campaign

    return build_campaign(tomllib.loads(text)).to_toml()


def _campaign(root: Path, extra: str = "") -> Path:
    """A complete two-run synthetic campaign whose campaign.toml (TOML + extra) plans exactly those
    runs, with spec.json as `run` writes it; its second run removed, so a resume has work to do."""
    from mpitempo.io.campaign import build_campaign, load_toml
    from mpitempo.io.synthetic import make_campaign
    from mpitempo.runner.resume import write_record

    make_campaign(root, configs={"default": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=20)
    (root / "campaign.toml").write_text(_canonical(TOML + extra))
    write_record(root, build_campaign(load_toml(root / "campaign.toml")))
    shutil.rmtree(root / "runs" / "default-001")
    return root


# -- the environment of a received campaign: an allow-list -------------------------------------------

ALLOWED = ["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_CH4_PROGRESS_THROTTLE", "MPICH_ASYNC_PROGRESS",
           "OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_allreduce_algorithm", "OMPI_MCA_btl",
           "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_pml", "OMPI_MCA_mpi_yield_when_idle", "UCX_TLS",
           "UCX_RNDV_THRESH", "FI_PROVIDER", "I_MPI_ADJUST_ALLREDUCE", "MV2_USE_SHMEM_COLL", "OMP_NUM_THREADS",
           "OMPI_MCA_coll_tuned_dynamic_rules_filename", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"]
# not on the list (an unknown name is not a tuning variable), or naming code, a path or a file
REFUSED = ["FOO", "X", "LD_PRELOAD", "LD_LIBRARY_PATH", "PATH", "HOME", "HYDRA_LAUNCHER_EXEC",
           "OMPI_MCA_orte_fork_agent", "OMPI_MCA_mca_base_component_path", "OMPI_MCA_plm_rsh_agent",
           "OMPI_MCA_rmaps_base_oversubscribe", "PRTE_MCA_prte_fork_agent", "UCX_MODULE_DIR", "FI_PROVIDER_PATH",
           "MPIR_CVAR_NAMESERV_FILE_PUBDIR", "OMP_TOOL_LIBRARIES", "I_MPI_PMI_LIBRARY", "PYTHONPATH",
           "MPITEMPO_TRACE_DIR", "GCONV_PATH", "OMPI_MCA_btl_openib_ib_pkey_file", "OPAL_PREFIX"]


@pytest.mark.parametrize("var", ALLOWED)
def test_allow_list_takes_tuning_variables(var):
    from mpitempo.runner.resume import env_allowed

    assert env_allowed(var, "1"), var


@pytest.mark.parametrize("var", REFUSED)
def test_allow_list_refuses_everything_else(var):
    from mpitempo.runner.resume import env_allowed

    assert not env_allowed(var, "1"), var


def test_smpi_cfg_value_is_checked():
    from mpitempo.runner.resume import env_allowed

    assert env_allowed("MPITEMPO_SMPI_CFG", "smpi/allreduce:rdb smpi/coll-selector:mpich")
    assert not env_allowed("MPITEMPO_SMPI_CFG", "smpi/privatize-libs:/tmp/evil.so")


@pytest.mark.parametrize("var, value", [("FOO", "1"), ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
                                        ("UCX_MODULE_DIR", "/tmp/x"), ("OMP_TOOL_LIBRARIES", "/tmp/t.so")])
def test_resume_with_a_variable_off_the_list_is_refused(var, value, cli, tmp_path, monkeypatch):
    """Hostile input: a received campaign whose env sets a variable that is not a tuning variable of
    the allow-list (before: only names matching a deny-list of words asked for consent, so FOO or
    OMPI_MCA_rmaps_* ran without a word). `run --resume` refuses in one line naming it and --yes;
    nothing is run."""
    monkeypatch.delenv(var, raising=False)
    camp = _campaign(tmp_path / "camp", f'env = {{ {var} = "{value}" }}\n')
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary")
    assert code == 2 and err.count("\n") == 1, err
    assert "without your consent" in err and f"env {var}" in err and "--yes" in err, err
    assert not (camp / "runs" / "default-001").exists()


def test_resume_with_tuning_variables_asks_nothing(tmp_path):
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.resume import stored_commands

    c = build_campaign(__import__("tomllib").loads(
        TOML + 'env = { MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = "ring", OMPI_MCA_btl = "self,vader", UCX_TLS = "sm" }\n'))
    assert stored_commands(c, tmp_path) == []
    c = build_campaign(__import__("tomllib").loads(TOML + 'env = { MY_VAR = "1" }\n'))
    assert [w for w, _, _ in stored_commands(c, tmp_path)] == ["env MY_VAR"]


# -- tune --verify tuning.env ---------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["LD_PRELOAD=/tmp/evil.so", "export PATH=/tmp/evil", "FOO=1",
                                  "OMPI_MCA_mca_base_env_list=LD_PRELOAD=/tmp/e.so", "UCX_MODULE_DIR=/tmp"])
def test_tune_verify_refuses_a_file_with_other_variables(line, cli, tmp_path):
    """Hostile input: a received tuning.env with a line that is not a tuning variable (before: every
    line, LD_PRELOAD included, was applied to every process of the job). Refused in one line naming
    the variable and --yes, before anything is built or created."""
    env = tmp_path / "tuning.env"
    env.write_text("# written by someone\nMPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring\n" + line + "\n")
    out = tmp_path / "o"
    code, so, err = cli("tune", "--verify", env, "--ops", "allreduce", "--msizes", "8", "-o", out)
    assert code == 2 and err.count("\n") == 1, err
    var = line.removeprefix("export ").split("=")[0]
    assert f"sets {var}=" in err and "--yes" in err and "allow-list" in err, err
    assert not out.exists()


def test_tune_verify_takes_tuning_variables_and_yes_only_with_verify(tmp_path):
    from mpitempo.io.tuning_files import read_settings
    from mpitempo.runner.resume import check_received_env

    env = tmp_path / "tuning.env"
    env.write_text("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring\nOMPI_MCA_coll_tuned_use_dynamic_rules=1\n")
    check_received_env(read_settings(env), "x", yes=False)            # accepted as it is
    check_received_env({"LD_PRELOAD": "/x.so"}, "x", yes=True)        # the user's consent
    with pytest.raises(MtError, match="sets LD_PRELOAD='/x.so'"):
        check_received_env({"LD_PRELOAD": "/x.so"}, "x", yes=False)


def test_tune_yes_without_verify_is_refused(cli, tmp_path):
    code, out, err = cli("tune", "--yes", "--ops", "allreduce", "-o", tmp_path / "o")
    assert code == 2 and "--yes applies to --verify only" in err, err


def test_tune_verify_of_a_fifo_does_not_block(cli, tmp_path):
    import os

    fifo = tmp_path / "tuning.env"
    os.mkfifo(fifo)
    code, out, err = cli("tune", "--verify", fifo, "--ops", "allreduce", "-o", tmp_path / "o")
    assert code == 2 and "FIFO" in err and err.count("\n") == 1, err


# -- platform files --------------------------------------------------------------------------------------

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def _platform(path: Path, props: dict[str, str] | None = None, hosts: str = "") -> Path:
    conf = "".join(f'<prop id="{k}" value="{v}"/>' for k, v in (props or {}).items())
    body = (f'<platform version="4.1"><config>{conf}</config><zone id="z" routing="Full">'
            + (hosts or '<host id="a" speed="1Gf" core="4"/>') + "</zone></platform>")
    path.write_text(HEAD + body)
    return path


@pytest.mark.parametrize("key, value", [
    ("smpi/privatize-libs", "/tmp/evil.so"),   # SMPI loads these libraries into every rank
    ("plugin", "host_energy"),
    ("path", "/tmp/evil"),
    ("smpi/tmpdir", "/tmp/x"),
    ("tracing/filename", "/home/user/important.txt"),
    ("smpi/comp-adjustment-file", "/tmp/x.csv"),
    ("smpi/papi-events", "PAPI_TOT_CYC"),
    ("model-check/replay", "1;2"),
    ("no/such-key", "1"),
])
def test_platform_config_that_is_not_on_the_list_is_refused(key, value, tmp_path):
    """Hostile input: a platform file whose <config> sets a property that loads code, names a file or
    is unknown (before: any property was handed to SMPI)."""
    from mpitempo.io.platform import read_platform

    with pytest.raises(MtError, match=re.escape(repr(key)) + " is not one mpitempo accepts"):
        read_platform(_platform(tmp_path / "p.xml", {key: value}))


@pytest.mark.parametrize("key, value", [("network/model", "/tmp/x.so"), ("smpi/os", "0:1e-6:0;$(touch x)"),
                                        ("smpi/allreduce", "../../lib"), ("smpi/display-timing", "maybe"),
                                        ("smpi/host-speed", "fast")])
def test_platform_config_values_are_checked_by_meaning(key, value, tmp_path):
    from mpitempo.io.platform import read_platform

    with pytest.raises(MtError, match="has value .* which is not a"):
        read_platform(_platform(tmp_path / "p.xml", {key: value}))


def test_shipped_platforms_pass_the_config_allow_list():
    from mpitempo.io.platform import read_platform

    for p in sorted((ROOT / "platforms").glob("*.xml")):
        read_platform(p)


@pytest.mark.parametrize("hosts, why", [
    ('<cluster id="c" prefix="n" radical="0-999999999999" speed="1Gf" bw="1GBps" lat="1us"/>', "more than 262144 hosts"),
    ('<cluster id="c" prefix="n" radical="' + ",".join(f"{i * 100000}-{i * 100000 + 99999}" for i in range(5))
     + '" speed="1Gf" bw="1GBps" lat="1us"/>', "more than 262144 hosts"),
    ('<host id="a" speed="1Gf" core="99999999999999999999"/>', "more than 65536 cores per host"),
    ('<host id="a" speed="1Gf" core="' + "9" * 5000 + '"/>', "expected an integer >= 1"),
    ('<cluster id="c" prefix="n" radical="0-200000" core="60000" speed="1Gf" bw="1GBps" lat="1us"/>',
     "more than 4194304 cores in all"),
])
def test_platform_counts_are_bounded_before_allocation(hosts, why, tmp_path):
    """Hostile input: a small platform file whose radical or core count is huge (before: a MemoryError
    traceback, or tens of GB allocated). One line with the bound; nothing allocated."""
    import tracemalloc

    from mpitempo.io.platform import read_platform

    p = _platform(tmp_path / "p.xml", hosts=hosts)
    assert p.stat().st_size < 20_000
    tracemalloc.start()
    try:
        with pytest.raises(MtError, match=why):
            read_platform(p)
        assert tracemalloc.get_traced_memory()[1] < 200 << 20
    finally:
        tracemalloc.stop()


def test_platform_fifo_does_not_block(tmp_path):
    import os

    from mpitempo.io.platform import read_platform

    os.mkfifo(tmp_path / "p.xml")
    with pytest.raises(MtError, match="not a regular file"):
        read_platform(tmp_path / "p.xml")


def test_resume_on_a_replaced_platform_file_is_refused(cli, tmp_path):
    """Hostile input: a simulated campaign whose platform file was replaced after its runs were
    simulated (before: resumed without a word, the new runs simulating another machine under the same
    name). `run --resume` refuses with both digests, before anything is built or run."""
    import hashlib

    plat = _platform(tmp_path / "p.xml", {"smpi/os": "0:1e-6:0"})
    old = hashlib.sha256(plat.read_bytes()).hexdigest()
    camp = _campaign(tmp_path / "camp", f'platform = "{plat}"\n')
    launch = {"config": "default", "launcher": {"simulation": {"platform": str(plat), "platform_sha256": old}}}
    (camp / "runs" / "default-000" / "launch.json").write_text(json.dumps(launch))
    from mpitempo.io.campaign import build_campaign, load_toml
    from mpitempo.runner.resume import check_platform_digest

    check_platform_digest(build_campaign(load_toml(camp / "campaign.toml")), camp)   # the same file: accepted
    _platform(plat, {"smpi/os": "0:9e-6:0"})
    new = hashlib.sha256(plat.read_bytes()).hexdigest()
    code, out, err = cli("run", "--resume", camp, "--quiet", "--no-summary", "--yes")
    assert code == 2 and err.count("\n") == 1, err
    assert old in err and new in err and "replaced" in err, err
    assert not (camp / "runs" / "default-001").exists()


def test_security_doc_lists_the_allow_lists():
    """docs/security.md describes the boundary the code enforces: every allowed prefix, MCA framework
    and platform property is in the document, and every one the document's tables list is allowed."""
    from mpitempo.io.platform import PLATFORM_CONFIG_ALLOW
    from mpitempo.runner.resume import ENV_ALLOW_MCA, ENV_ALLOW_PREFIXES

    doc = (ROOT / "docs" / "security.md").read_text()
    env_part = doc.split("## Environment variables")[1].split("## Stored commands")[0]
    doc_prefixes = set(re.findall(r"^\| `([A-Z0-9_]+_)` \|", env_part, re.M))
    assert doc_prefixes == set(ENV_ALLOW_PREFIXES), doc_prefixes ^ set(ENV_ALLOW_PREFIXES)
    fw = re.search(r"for the frameworks (.*?) \(", env_part, re.S).group(1)
    assert set(re.findall(r"`(\w+)`", fw)) == set(ENV_ALLOW_MCA)
    plat_part = doc.split("## Platform files")[1].split("## Reading")[0]
    rows = [ln for ln in plat_part.splitlines() if ln.startswith("| ") and "`" in ln.split("|")[2]]
    doc_props = {p for ln in rows for p in re.findall(r"`([^`]+)`", ln.split("|")[2])}
    assert doc_props == set(PLATFORM_CONFIG_ALLOW), doc_props ^ set(PLATFORM_CONFIG_ALLOW)
    from mpitempo.io.platform import PLATFORM_CODE_ELEMENTS, PLATFORM_FILE_ATTRS, PLATFORM_FILE_ELEMENTS

    files_part = plat_part.split("Elements and attributes that make SimGrid read")[1].split("Counts are")[0]
    for a in PLATFORM_FILE_ATTRS:
        assert f"`{a}`" in files_part, a
    for el, attr in PLATFORM_FILE_ELEMENTS.items():
        assert f"`<{el}>`" in files_part or f"`<{el} {attr}>`" in files_part, el
    for el in PLATFORM_CODE_ELEMENTS:
        assert f"`<{el}>`" in files_part, el


# -- class 5: plans that cannot work are refused up front ---------------------------------------------------

def test_host_memory_is_checked_per_host():
    """8 ranks x window 64 x 64 MiB = 32 GiB of buffers on a 23.5 GiB host (each rank's 4 GiB passes
    the core's per-rank check): refused; the same on one rank, or spread by an unknown launcher, passes."""
    from mpitempo.runner.preflight import check_host_memory, ranks_on_this_host

    plan = {"options": {"bw_window": 64, "bw_rbuf": "window"},
            "experiments": [{"op": "mbw_mr", "msize": 8}, {"op": "mbw_mr", "msize": 64 << 20}]}
    mem = int(23.5 * 2**30)
    with pytest.raises(MtError, match=r"32.0 GiB of message buffers on this host \(8 ranks x 64 x 67108864 B "
                                      r"for op mbw_mr\), more than 75% of its memory \(23.5 GiB\)"):
        check_host_memory(plan, ranks_on_this_host(8, None, False), mem=mem)
    check_host_memory(plan, 2, mem=mem)                               # 8 GiB
    check_host_memory(plan, ranks_on_this_host(8, "srun", False), mem=mem)   # unknown placement
    single = dict(plan, options={"bw_window": 64, "bw_rbuf": "single"})
    check_host_memory(single, 8, mem=mem)                             # one receive block per rank
    assert ranks_on_this_host(8, "mpiexec -f hosts -n {np} {cmd}", False) is None
    assert ranks_on_this_host(8, "smpirun {cmd}", True) == 8


def test_run_refuses_buffers_beyond_the_host(cli, build, tmp_path, monkeypatch):
    """The same through `run`: the window is chosen so that one rank's buffers pass the core's own check
    (a fifth of this host's memory) and four ranks' do not fit; refused before the directory exists."""
    from mpitempo.runner.preflight import host_memory_bytes

    for v in ("SLURM_JOB_ID", "PBS_NODEFILE", "LSB_HOSTS", "HYDRA_HOST_FILE"):
        monkeypatch.delenv(v, raising=False)
    msize = 64 << 20
    window = max(1, host_memory_bytes() // 5 // msize)
    out = tmp_path / "out"
    code, so, err = cli("run", "--ops", "mbw_mr", "--msizes", "64M", "--bw-window", window, "-n", 4, "-o", out,
                        "--quiet", "--no-summary")
    assert code == 2 and "of message buffers on this host (4 ranks x" in err and err.count("\n") == 1, err
    assert not out.exists()


# -- the platform reader under fuzzing (hypothesis, as tests/fuzz does for the campaign readers) ----------

_VALID_PLATFORM = (HEAD + '<platform version="4.1"><config><prop id="smpi/os" value="0:1e-6:0"/></config>'
                   '<zone id="z" routing="Full"><cluster id="c" prefix="n" radical="0-3" core="2" speed="1Gf" '
                   'bw="1GBps" lat="1us"/><host id="a" speed="1Gf" core="4"/></zone></platform>').encode()


def _mutations():
    from hypothesis import strategies as st

    pieces = st.sampled_from([b'radical="0-99999999999"', b'core="-1"', b'core="1e9"', b"<config>", b'<prop id="x"/>',
                              b"\x00", b"\xff", b"<!ENTITY a 'aaaa'>", b"&a;", b"]]>", b"<" * 300, b'value="$(x)"'])
    return st.tuples(st.integers(0, len(_VALID_PLATFORM)), st.integers(0, 40), pieces, st.binary(max_size=64))


def test_platform_reader_fuzzed(tmp_path):
    """Whatever a platform file holds (mutations of a valid one, random bytes), read_platform returns a
    platform or raises one MtError: never another exception, never an allocation beyond the bounds."""
    from hypothesis import HealthCheck, given, settings

    from mpitempo.io.platform import MAX_CORES, MAX_HOSTS, read_platform

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_mutations())
    def check(m):
        at, cut, piece, noise = m
        data = _VALID_PLATFORM[:at] + piece + noise + _VALID_PLATFORM[at + cut:]
        p = tmp_path / "p.xml"
        p.write_bytes(data)
        try:
            plat = read_platform(p)
        except MtError as e:
            assert "\n" not in str(e)
            return
        assert 1 <= plat.nhosts <= MAX_HOSTS and plat.ncores <= MAX_CORES

    check()


# -- platform elements and attributes that name files SimGrid reads (simgrid.dtd 4.1) ----------------------

@pytest.mark.parametrize("hosts, named", [
    ('<host id="a" speed="1Gf" core="4" speed_file="/dev/zero"/>', "speed_file='/dev/zero'"),
    ('<host id="a" speed="1Gf" core="4" state_file="fifo"/>', "state_file='fifo'"),
    ('<host id="a" speed="1Gf" core="4" availability_file="a.txt"/>', "availability_file='a.txt'"),
    ('<host id="a" speed="1Gf" core="4"/><link id="l" bandwidth="1GBps" bandwidth_file="/etc/shadow"/>',
     "bandwidth_file='/etc/shadow'"),
    ('<host id="a" speed="1Gf" core="4"/><link id="l" bandwidth="1GBps" latency_file="../x"/>', "latency_file='../x'"),
    ('<host id="a" speed="1Gf" core="4"/><link id="l" bandwidth="1GBps" state_file="s"/>', "state_file='s'"),
    ('<host id="a" speed="1Gf" core="4"/><trace id="t" file="/dev/zero" periodicity="1"/>', "file='/dev/zero'"),
    ('<include file="other.xml"/><host id="a" speed="1Gf" core="4"/>', "file='other.xml'"),
    ('<storage_type id="s" size="1TB" content="/etc/passwd"/><host id="a" speed="1Gf" core="4"/>',
     "content='/etc/passwd'"),
])
def test_platform_attributes_naming_files_are_refused(hosts, named, tmp_path):
    """Hostile input: a platform whose elements name files SimGrid reads: a host's speed/state profile, a
    link's bandwidth/latency/state profile, <trace file>, <include file>, a storage's content (before:
    passed to SimGrid as they were: a FIFO blocks the simulation, /dev/zero never ends). Refused in
    one line naming the attribute, before anything is created or launched."""
    from mpitempo.io.platform import read_platform

    with pytest.raises(MtError, match=re.escape(named) + " names a file that SimGrid would read"):
        read_platform(_platform(tmp_path / "p.xml", hosts=hosts))


def test_platform_actors_are_refused_and_inline_profiles_accepted(tmp_path):
    from mpitempo.io.platform import read_platform

    p = tmp_path / "q.xml"
    p.write_text(HEAD + '<platform version="4.1"><zone id="z" routing="Full"><host id="a" speed="1Gf" core="4"/>'
                 '</zone><actor host="a" function="evil"/></platform>')
    with pytest.raises(MtError, match="<actor> starts simulated code"):
        read_platform(p)
    read_platform(_platform(tmp_path / "r.xml", hosts='<host id="a" speed="1Gf" core="4"/>'
                                                      '<trace id="t" periodicity="1">0 1.0\n1 0.5</trace>'
                                                      '<trace_connect trace="t" element="a" kind="SPEED"/>'))


def test_platform_run_with_a_profile_file_is_refused_before_anything(cli, tmp_path):
    out = tmp_path / "out"
    plat = _platform(tmp_path / "p.xml", hosts='<host id="a" speed="1Gf" core="4" speed_file="/dev/zero"/>')
    code, so, err = cli("run", "--platform", plat, "-n", 2, "-o", out)
    assert code == 2 and err.count("\n") == 1 and "speed_file='/dev/zero'" in err, err
    assert not out.exists()
