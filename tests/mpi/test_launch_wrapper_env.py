"""Every command that launches MPI ranks composes with the user's environment (real 2-rank jobs):
a launcher template with a per-rank wrapper runs the wrapper for every rank, and what the user set
(LD_PRELOAD of a library of their own, OMP_NUM_THREADS, MPIR_CVAR_*/OMPI_MCA_* variables, PATH)
reaches the ranks unchanged; the tracer puts its library in front of the user's LD_PRELOAD, and
mpitempo's own launch settings (the throttling of oversubscribed ranks) give way to the user's."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kit(build, tmp_path_factory):
    """A wrapper that records rank, argv and environment per process, a preload library that marks
    every process it is loaded into, and amg_like for the tracer."""
    d = tmp_path_factory.mktemp("wrapenv")
    (d / "marker.c").write_text(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void mark(void) { const char *d = getenv(\"WTF_MARK_DIR\");\n"
        "  if (!d) return; char p[512], e[1024]; ssize_t n = readlink(\"/proc/self/exe\", e, sizeof e - 1);\n"
        "  e[n > 0 ? n : 0] = 0; snprintf(p, sizeof p, \"%s/%d\", d, (int)getpid());\n"
        "  FILE *f = fopen(p, \"w\"); if (f) { fprintf(f, \"%s\\n\", e); fclose(f); } }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libmarker.so"), str(d / "marker.c")], check=True)
    wrap = d / "wrap.sh"
    wrap.write_text("#!/bin/sh\nr=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-x}}\n"
                    "printf '%s\\n' \"$r\" \"$LD_PRELOAD\" \"$OMP_NUM_THREADS\" \"$MPIR_CVAR_WTF_MARK\" "
                    "\"$OMPI_MCA_wtf_mark\" \"$PATH\" \"$*\" > \"$WTF_LOG_DIR/$$\"\nexec \"$@\"\n")
    wrap.chmod(0o755)
    amg = d / "amg_like"
    subprocess.run([build.mpicc, "-O2", "-o", str(amg), str(ROOT / "examples/trace/amg_like.c")], check=True)
    return d


LAUNCHING = {   # command -> (its arguments, ranks the wrapper must see)
    "run": (["run", "-n", "2", "--mpiruns", "1", "--nrep", "5", "--msizes", "8", "--warmup", "1", "--quiet",
             "--no-summary", "-o", "{out}"], 2),
    "clocks": (["clocks", "-n", "2", "--mpiruns", "1", "--algorithms", "hca3", "--check-pp", "5", "--quiet",
                "-o", "{out}"], 2),
    "drift": (["drift", "-n", "2", "--duration", "1s", "--interval", "0.5s", "--check-pp", "5", "--quiet",
               "-o", "{out}"], 2),
    "pingpong": (["pingpong", "-n", "2", "--msizes", "8", "--ntrial", "3", "--mpiruns", "1", "--quiet", "-o", "{out}"], 2),
    "tree": (["tree", "-n", "2", "--ncalls", "10", "--mpiruns", "1", "--quiet", "-o", "{out}"], 2),
    "imbalance": (["imbalance", "-n", "2", "--msize", "8", "--nrep", "5", "--mpiruns", "1", "--variants", "none",
                   "--quiet", "-o", "{out}"], 2),
    "barrier": (["barrier", "-n", "2", "--mpiruns", "1", "--nrep", "5", "--logp-nrep", "3", "--algorithms",
                 "barrier:central", "--no-native", "--quiet", "-o", "{out}"], 2),
    "tune": (["tune", "-n", "2", "--ops", "allreduce", "--msizes", "8", "--mpiruns", "1", "--nrep", "5", "--quiet",
              "-o", "{out}"], 2),
    "trace": (["trace", "run", "-n", "2", "--json", "-o", "{out}", "--", "{amg}", "--iters", "5"], 2),
    "trace-campaign": (["trace", "run", "-n", "2", "--mpiruns", "1", "--quiet", "-o", "{out}", "--", "{amg}",
                        "--iters", "5"], 2),
    "info-timers": (["info", "--timers", "--timer-reads", "1000"], 1),
}


@pytest.mark.parametrize("name", list(LAUNCHING))
def test_wrapper_and_user_environment_reach_every_rank(name, kit, cli, build, tmp_path, monkeypatch):
    args, nranks = LAUNCHING[name]
    logs, marks = tmp_path / "logs", tmp_path / "marks"
    logs.mkdir()
    marks.mkdir()
    lib = str(kit / "libmarker.so")
    path = f"{kit}:{os.environ['PATH']}"
    for k, v in {"WTF_LOG_DIR": str(logs), "WTF_MARK_DIR": str(marks), "LD_PRELOAD": lib, "OMP_NUM_THREADS": "3",
                 "MPIR_CVAR_WTF_MARK": "7", "OMPI_MCA_wtf_mark": "9", "PATH": path}.items():
        monkeypatch.setenv(k, v)
    argv = [a.format(out=tmp_path / "out", amg=kit / "amg_like") for a in args]
    k = 2 if argv[0] == "trace" else 1   # the options before the application of trace run
    code, out, err = cli(*argv[:k], "--launcher", f"{{mpiexec}} -n {{np}} {kit / 'wrap.sh'} {{cmd}}", *argv[k:])
    monkeypatch.delenv("LD_PRELOAD")   # the checks below are this process's own business
    # barrier: its LogP step may fail its sanity checks (L < 0 where the round trip is shorter than the
    # two overheads, as with Open MPI's shared memory, or on a loaded machine): a one-line error after
    # its mpiruns, as tests/mpi/test_barrier_mpi.py accepts; the launches are what this test checks
    sane_fail = name == "barrier" and code != 0 and "LogP sanity check failed" in err.strip().splitlines()[-1]
    assert code == 0 or sane_fail, err
    seen = [p.read_text().split("\n") for p in logs.iterdir()]
    ranks = sorted({s[0] for s in seen})
    assert ranks == [str(r) for r in range(nranks)], (ranks, err)   # the wrapper ran for every rank
    for rank, preload, omp, cvar, mca, rpath, cmd, *_ in seen:
        assert lib in preload.split(":"), preload         # the user's preload stays preloaded
        assert (omp, cvar, mca) == ("3", "7", "9")
        # the user's PATH reaches the rank; Open MPI started by its absolute path (as mpitempo starts
        # it) puts its own bin directory in front, once per launch stage (Debian's 4.1: twice)
        assert rpath.endswith(path), rpath
        front = [e for e in rpath[:len(rpath) - len(path)].split(":") if e]
        assert build.flavour == "openmpi" or not front, rpath
        assert all(os.path.realpath(e) == os.path.dirname(os.path.realpath(build.mpiexec)) for e in front), \
            (rpath, build.mpiexec)
        if name.startswith("trace"):
            assert "libmpitempo-trace.so" in cmd          # the tracer goes in after the wrapper
    exes = [p.read_text().strip() for p in marks.iterdir()]
    ran = [e for e in exes if "mpitempo-" in e or e.endswith("amg_like")]
    assert len([e for e in ran if "watchdog" not in e]) >= nranks, exes   # the user's library is in the ranks
    if name == "trace":
        assert (tmp_path / "out" / "trace.json").is_file()   # and the tracer too, beside it


def test_oversubscribed_throttle_gives_way_to_the_user(cli, build, tmp_path, monkeypatch):
    """An oversubscribed MPICH run gets mpitempo's progress throttling, except where the user set the
    variable: their value reaches the ranks and a note says so (it was silently replaced by 1)."""
    if build.flavour != "mpich":
        pytest.skip("the throttle variables are MPICH's")
    import mpitempo.runner.launch as launch

    monkeypatch.setattr(launch, "ncores", lambda: 1)   # 2 ranks on "1 core": oversubscribed
    monkeypatch.setattr(launch, "_SAID", set())        # notes are printed once per process
    wrap = tmp_path / "wrap.sh"
    wrap.write_text(f"#!/bin/sh\necho \"$MPIR_CVAR_CH4_PROGRESS_THROTTLE $MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT\""
                    f" > {tmp_path}/seen.$$\nexec \"$@\"\n")
    wrap.chmod(0o755)
    monkeypatch.setenv("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "0")
    code, out, err = cli("run", "-n", "2", "--mpiruns", "1", "--nrep", "5", "--msizes", "8", "--warmup", "1",
                         "--quiet", "--no-summary", "-o", tmp_path / "out",
                         "--launcher", f"{{mpiexec}} -n {{np}} {wrap} {{cmd}}")
    assert code == 0, err
    seen = sorted(p.read_text().split() for p in tmp_path.glob("seen.*"))
    assert seen == [["0", "1"], ["0", "1"]], seen
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE=0 of your environment kept" in err, err
    rec = json.loads((tmp_path / "out" / "runs" / "default-000" / "launch.json").read_text())["launcher"]
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE" not in rec["env_added"] and rec["oversubscribed"]
    assert any("of your environment kept" in n for n in rec["notes"])
