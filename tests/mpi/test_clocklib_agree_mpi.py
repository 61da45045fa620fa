"""libmpitempo-clock's collective contract on 2 real ranks (issue 32): a create call where the ranks ask
for different clocks (spec, timer, wait mode) fails on every rank with the same message instead of
deadlocking; a non-finite time is refused the same way on every rank; every message names the library's
own calls and arguments. These are correctness tests (no timing), so a failure is a failure on a loaded
machine too (unlike test_clocklib_mpi.py's accuracy tests). Every launch has a timeout: a deadlock fails
the test instead of hanging it."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def prefix(build, tmp_path_factory):
    """cmake --install of the tested build into a temporary prefix."""
    work = Path(build.bindir)
    if not (work / "CMakeCache.txt").is_file():
        pytest.skip(f"the core in {work} was not built by mpitempo (no CMake tree to install from)")
    if not shutil.which("pkg-config"):
        pytest.skip("pkg-config is not installed")
    pfx = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(work), "--prefix", str(pfx)], check=True, capture_output=True)
    return pfx


@pytest.fixture(scope="module")
def probe(prefix, tmp_path_factory):
    """tests/mpi/clocklib_src/probe.c (per-rank arguments to the library's calls), built with `cc` and
    pkg-config only, as a user builds against the library."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "mpitempo-clock"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    exe = tmp_path_factory.mktemp("probe") / "probe"
    cc = shutil.which("cc") or shutil.which("gcc")
    r = subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                        str(Path(__file__).parent / "clocklib_src" / "probe.c"), *flags, "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


PROBE_TIMEOUT_S = 120   # a create call of these specs takes well under a second; a deadlock never ends


def run_probe(build, prefix, probe, *args):
    """probe on 2 ranks in its own session (killed as a whole when it hangs); one JSON line per rank."""
    launch = make_launch(build, 2, [str(probe), *args])
    env = dict(os.environ)
    env.update(launch.env)
    env["LD_LIBRARY_PATH"] = str(prefix / "lib") + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    if launch.oversubscribed:
        env["MPITEMPO_CLOCK_SLEEP"] = "1"
    p = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"probe {' '.join(args)}: no answer after {PROBE_TIMEOUT_S} s (the ranks deadlocked)")
    assert p.returncode == 0, (p.returncode, err)
    ranks = sorted((json.loads(line) for line in out.splitlines() if line.startswith("{")), key=lambda d: d["rank"])
    assert [d["rank"] for d in ranks] == [0, 1], out
    return ranks, err


@pytest.mark.parametrize("args,what,rank0,rank1", [
    (["hca3|jk"], "sync_spec", "'hca3' (hca3:", "'jk' (jk:"),
    (["skampi:pp=5|skampi:pp=6"], "sync_spec", "'skampi:pp=5' (skampi:pp=5", "'skampi:pp=6' (skampi:pp=6"),
    (["@null|h2:hca3/prop"], "sync_spec", "NULL (the default spec)", "'h2:hca3/prop' (h["),
    (["hca3:fitpts=10,pp=10", "monotonic|realtime"], "opt->timer", "'monotonic'", "'realtime'"),
    (["hca3:fitpts=10,pp=10", "@null", "0|1"], "opt->wait", "0", "1"),
], ids=["algorithm", "parameter", "default-vs-written", "timer", "wait"])
def test_ranks_giving_different_arguments_fail_alike(build, prefix, probe, args, what, rank0, rank1):
    """Two ranks asking for different (each valid) clocks: every rank returns MTC_EINVAL with the same
    message naming the argument and both values, nobody waits in a sync, and the ranks are still in step
    afterwards (a barrier and a new clock succeed). Before: a deadlock, or ranks running different syncs."""
    ranks, _ = run_probe(build, prefix, probe, "create", *args)
    assert all(d["agreed"] == 1 for d in ranks), ranks
    assert [d["rc"] for d in ranks] == [2, 2], ranks
    assert ranks[0]["err"] == ranks[1]["err"], ranks
    msg = ranks[0]["err"]
    assert msg.startswith(f"mpitempo-clock: mtc_create_ex: the ranks gave different {what}: rank 0 {rank0}"), msg
    assert f", rank 1 {rank1}" in msg and f"every rank of the communicator must give the same {what}" in msg, msg
    assert [d["after"] for d in ranks] == [0, 0], ranks


def test_a_null_output_pointer_on_one_rank_fails_alike(build, prefix, probe):
    """out == NULL on rank 1 only: every rank returns MTC_EINVAL with the same message (before: rank 1
    returned at once and rank 0 waited for it in the create call's agreement)."""
    ranks, _ = run_probe(build, prefix, probe, "create", "skampi:pp=5", "@null", "0", "0|1")
    assert [d["rc"] for d in ranks] == [2, 2] and all(d["agreed"] == 1 for d in ranks), ranks
    assert ranks[0]["err"] == ranks[1]["err"] == \
        "mpitempo-clock: mtc_create_ex: the output pointer (out) is NULL", ranks
    assert [d["after"] for d in ranks] == [0, 0], ranks


def test_the_same_spec_spelled_differently_is_one_clock(build, prefix, probe):
    """Specs are compared in their canonical form: 'skampi:pp=5' and the same with its defaults written out
    are the same clock."""
    ranks, _ = run_probe(build, prefix, probe, "create", "skampi:pp=5")
    assert [d["rc"] for d in ranks] == [0, 0], ranks
    ranks, _ = run_probe(build, prefix, probe, "create", "skampi:pp=5|skampi:pp=5,offset=skampi")
    assert [d["rc"] for d in ranks] == [0, 0], ranks


@pytest.mark.parametrize("t,shown", [("inf", "inf"), ("-inf", "-inf"), ("nan", "NaN"), ("-nan", "NaN"),
                                     ("nan|-nan", "NaN")],
                         ids=["inf", "minus-inf", "nan", "minus-nan", "nan-sign-per-rank"])
def test_non_finite_time_is_refused_alike(build, prefix, probe, t, shown):
    """mtc_to_global of a non-finite local time: NaN and the same message on every rank (before: the model
    made inf on one rank and NaN on the other, and no message)."""
    ranks, _ = run_probe(build, prefix, probe, "to_global", t)
    assert [d["rc"] for d in ranks] == [0, 0], ranks
    assert [d["value"] for d in ranks] == ["nan", "nan"], ranks
    assert ranks[0]["err"] == ranks[1]["err"] == \
        f"mpitempo-clock: mtc_to_global: local_s is {shown}; give a finite time in seconds", ranks


def test_finite_time_is_converted(build, prefix, probe):
    ranks, _ = run_probe(build, prefix, probe, "to_global", "1.5")
    assert all(isinstance(d["value"], float) and abs(d["value"] - 1.5) < 1e-3 and d["err"] == "" for d in ranks)


@pytest.mark.parametrize("args,start", [
    (["bogus"], "mpitempo-clock: mtc_create_ex: sync_spec: unknown clock-sync algorithm 'bogus'"),
    (["none"], "mpitempo-clock: mtc_create_ex: sync_spec: sync spec 'none' gives no global clock"),
    (["hca3|hca3:pp=0"], "mpitempo-clock: mtc_create_ex: sync_spec: "),
    (["hca3", "sundial"], "mpitempo-clock: mtc_create_ex: opt->timer: unknown timer 'sundial'"),
    (["hca3", "@null", "7"], "mpitempo-clock: mtc_create_ex: invalid wait mode 7 in opt->wait"),
], ids=["spec-unknown", "spec-none", "spec-bad-on-one-rank", "timer", "wait"])
def test_messages_name_the_library_api(build, prefix, probe, args, start):
    """Every refusal names the library's function and argument (mpitempo/clock.h), is the same on every
    rank, and speaks of no mpitempo command-line option and no meta.json."""
    ranks, err = run_probe(build, prefix, probe, "create", *args)
    assert ranks[0]["err"] == ranks[1]["err"] and ranks[0]["rc"] == ranks[1]["rc"] == 2, ranks
    msg = ranks[0]["err"]
    assert msg.startswith(start), msg
    for text in (msg, err):
        assert "meta.json" not in text and not re.search(r"(^|\s)--[a-z]", text), text


def test_library_source_speaks_of_its_own_api():
    """The library's own texts (src/clocklib) name no command-line option and no meta.json, and it does not
    call the executables' session steps whose warnings point to meta.json (mt_gclock_sync and later)."""
    src = "".join((ROOT / "src" / "clocklib" / f).read_text() for f in ("clocklib.c", "clocklib_args.c"))
    literals = re.findall(r'"((?:[^"\\\n]|\\.)*)"', src)
    assert literals
    bad = [s for s in literals if "meta.json" in s or re.search(r"(^|\s)--[a-z]", s)]
    assert not bad, bad
    for fn in ("mt_gclock_sync", "mt_gclock_check_if_due", "mt_gclock_finish", "mt_gclock_write_meta"):
        assert f"{fn}(" not in src, fn
