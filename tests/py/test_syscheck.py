"""`info --check`: each finding from a fake procfs/sysfs tree, and the command on this machine."""
import json

import pytest

from mpitempo.runner import syscheck


def tree(tmp_path, files: dict):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def by_check(found):
    out = {}
    for f in found:
        out.setdefault(f["check"], []).append(f)
    return out


IDLE_TSC = {"proc/loadavg": "0.02 0.05 0.01 1/120 999\n",
            "proc/cpuinfo": "flags\t: fpu constant_tsc nonstop_tsc rdtscp\n",
            "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc\n"}


def test_quiet_machine_has_no_warnings(tmp_path):
    root = tree(tmp_path, {**IDLE_TSC, **{f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor": "performance\n"
                                          for c in (0, 1)},
                           "sys/devices/system/cpu/intel_pstate/no_turbo": "1\n",
                           "sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0\n",
                           "sys/devices/system/cpu/cpu1/topology/thread_siblings_list": "1\n",
                           "proc/self/timens_offsets": "monotonic 0 0\nboottime 0 0\n"})
    found = syscheck.system_check(2, "core", root=root, cpus=[0, 1])
    assert syscheck.warnings_of(found) == []
    assert {f["check"] for f in found} >= {"governor", "turbo", "smt", "load", "clocksource", "time_namespace",
                                          "oversubscription", "binding"}


def test_every_spoiler_is_found(tmp_path):
    root = tree(tmp_path, {"proc/loadavg": "3.50 2.0 1.0 4/120 999\n",
                           "proc/cpuinfo": "flags\t: fpu rdtscp hypervisor\n",
                           "sys/devices/system/clocksource/clocksource0/current_clocksource": "hpet\n",
                           "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
                           "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "performance\n",
                           "sys/devices/system/cpu/intel_pstate/no_turbo": "0\n",
                           "sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0-1\n",
                           "sys/devices/system/cpu/cpu1/topology/thread_siblings_list": "0-1\n",
                           "proc/self/timens_offsets": "monotonic 5 0\nboottime 0 0\n"})
    found = by_check(syscheck.system_check(2, "none", root=root, cpus=[0, 1]))
    w = lambda k: [f for f in found[k] if f["status"] == "warning"]  # noqa: E731
    assert "'powersave' on CPUs 0" in w("governor")[0]["message"] and "performance" in w("governor")[0]["advice"]
    assert w("turbo") and "no_turbo" in w("turbo")[0]["advice"]
    assert "2 ranks cannot each have a core" in w("smt")[0]["message"]
    assert "not bound" in w("binding")[0]["message"]
    assert "3.50" in w("load")[0]["message"] and "3 other process(es)" in w("load")[0]["message"]
    assert "'hpet'" in w("clocksource")[0]["message"]
    assert "nonstop_tsc" in w("tsc")[0]["message"]
    assert "monotonic shifted by +5 s" in w("time_namespace")[0]["message"]
    assert found["virtual"][0]["status"] == "info"
    line = syscheck.line(w("governor")[0])
    assert line.startswith("warning: ") and "\n" not in line and "; set 'performance'" in line


def test_oversubscription(tmp_path):
    root = tree(tmp_path, IDLE_TSC)
    found = by_check(syscheck.system_check(4, "none", oversubscribed=True, root=root, cpus=[0, 1]))
    assert found["oversubscription"][0]["status"] == "warning" and "4 ranks on 2" in found["oversubscription"][0]["message"]
    assert "binding" not in found     # oversubscribed runs are unbound by design: one warning says it


@pytest.mark.parametrize("text, want", [("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]), ("", []), ("5\n", [5])])
def test_cpulist(text, want):
    assert syscheck.parse_cpulist(text) == want


def test_info_check_command(cli):
    code, out, err = cli("info", "--check", "-n", "2")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert all(ln.split(":")[0] in ("ok", "warning", "info") for ln in lines[:-1] if not ln.startswith("    "))
    assert max(len(ln) for ln in lines) <= 100          # long findings wrap, continuation lines indented
    assert "for 2 ranks with launcher" in lines[-1]
    code, out, err = cli("info", "--check", "-n", "64", "--json")
    res = json.loads(out)
    assert code == 0 and any(f["check"] == "oversubscription" and f["status"] == "warning" for f in res["findings"])
    code, out, err = cli("info", "--check", "-n", "0")
    assert code == 2 and "0" in err and err.count("\n") == 1


def test_compact_and_fit():
    from mpitempo.present.tables import compact, fit, plain_table

    cols = [("config", "left"), ("op", "left"), ("nprocs", "right"), ("median", "right"), ("mean", "right")]
    rows = [["A", "allreduce", "2", "1.0", "1.1"], ["B", "allreduce", "2", "2.0", "2.1"]]
    c, r, const = compact(cols, rows, keep=("op",))
    assert [h for h, _ in c] == ["config", "op", "median", "mean"] and const == ["nprocs = 2"]
    c2, r2, out = fit(c, r, ("mean", "config"), width=30)
    assert out == ["mean"] and [h for h, _ in c2] == ["config", "op", "median"] and r2[1] == ["B", "allreduce", "2.0"]
    assert plain_table(cols, rows, "csv").splitlines()[1] == "A,allreduce,2,1.0,1.1"
    md = plain_table(cols, rows, "markdown").splitlines()
    assert md[0] == "| config | op | nprocs | median | mean |" and md[1] == "|:---|:---|---:|---:|---:|"


def test_every_help_has_an_example_and_one_style_of_defaults(cli):
    from mpitempo.cli import COMMANDS

    for cmd in [None, *COMMANDS]:
        code, out, err = cli(*([cmd] if cmd else []), "--help")
        assert code == 0 and "Example" in out, cmd
        assert "(default " not in out, cmd          # defaults are shown as [default: X] everywhere


def test_progress_inside_an_mpirun(tmp_path, capsys):
    """The runner follows the core's per-experiment lines while the mpirun runs (partial lines wait)."""
    from mpitempo.runner.execute import _watch
    from mpitempo.runner.progress import Progress

    seen, got = {}, []
    f = open(tmp_path / "stderr.log", "w+")
    f.write("mpitempo-bench: [1/4] allreduce 8 B: median 1.2 us (100/100 valid)\nmpitempo-bench: note: x\n"
            "mpitempo-bench: [2/4] bcast 1024 B: median 2.0 us (98/100 valid)\nmpitempo-bench: [3/4] bc")
    pos = _watch(f, 0, seen, lambda *a: got.append(a))
    assert got == [(1, 4, "allreduce", 8, 100), (2, 4, "bcast", 1024, 200)]
    f.write("ast 8 B: median 1.0 us (100/100 valid)\n")
    _watch(f, pos, seen, lambda *a: got.append(a))
    assert got[-1] == (3, 4, "bcast", 8, 300)
    p = Progress(2, live=False)
    p.start("A-000", "A", 2)
    p._last_inside -= 11                     # the log line appears at most every 10 s
    p.inside(3, 4, "bcast", 1024, 300)
    assert "3/4 experiments, last bcast 1K, 300 measurements" in capsys.readouterr().err


def test_help_imports_no_heavy_module():
    """`mpitempo CMD --help` starts fast: numpy, scipy, duckdb and matplotlib load only when a command runs."""
    import subprocess
    import sys

    from mpitempo.cli import COMMANDS
    from mpitempo.cmd_compare import ALTERNATIVES
    from mpitempo.stats.compare import ALTERNATIVES as STATS_ALTERNATIVES

    assert tuple(ALTERNATIVES) == tuple(STATS_ALTERNATIVES)
    code = ("import sys; from mpitempo.cli import main\n"
            "for c in sys.argv[1:]:\n"
            "    try: main([c, '--help'])\n"
            "    except SystemExit: pass\n"
            "print(sorted(m for m in ('numpy', 'scipy', 'duckdb', 'matplotlib') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, *COMMANDS], capture_output=True, text=True)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stderr[-500:]


def test_binomial_cdf_without_scipy_agrees_with_scipy():
    from scipy import stats as sps

    from mpitempo.stats.describe import binom_half_cdf

    for n in range(1, 80):
        for k in range(-1, n + 1):
            assert binom_half_cdf(k, n) == pytest.approx(sps.binom.cdf(k, n, 0.5), rel=1e-12, abs=1e-300)
