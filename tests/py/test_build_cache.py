"""Which core a run uses, and when the cached build is reused or rebuilt.

Fake MPI wrappers, a fake cmake and a fake installed core keep these fast; the
last test builds a copy of the real sources with the real MPI. The stat index in
front of the fingerprint must never hand out a binary built from other sources
or for another MPI.
"""
from __future__ import annotations

import ast
import os
import shutil
import time
from pathlib import Path

import pytest

from mpitempo import build as B
from mpitempo.errors import MtError

ROOT = Path(__file__).resolve().parents[2]


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def _fake_mpi(prefix: Path, version: str = "4.9.9") -> Path:
    """An MPI installation: bin/mpicc answering -show, bin/mpiexec answering --version, lib/libmpi.so.12."""
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "lib" / "libmpi.so.12").write_bytes(b"lib")
    _script(prefix / "bin" / "mpiexec", f"echo 'HYDRA build details:'; echo '    Version:   {version}'\n")
    return _script(prefix / "bin" / "mpicc",
                   f'case "$1" in -show) echo "gcc -I{prefix}/include -L{prefix}/lib -lmpi";; *) exit 1;; esac\n')


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fake cmake on PATH (logs its calls, 'builds' the three binaries), a small
    C source tree in MPITEMPO_SOURCE, a fresh cache, one fake MPI."""
    log = tmp_path / "cmake.log"
    tools = tmp_path / "tools"
    _script(tools / "cmake", f"""echo "$@" >> {log}
build=
while [ $# -gt 0 ]; do
  case "$1" in -B) shift; dir="$1";; --build) shift; dir="$1"; build=1;; esac; shift
done
mkdir -p "$dir"
if [ -n "$build" ]; then
  for n in mpitempo-bench mpitempo-pingpong mpitempo-clocks mpitempo-tree mpitempo-logp; do printf '#!/bin/sh\\n' > "$dir/$n"; chmod +x "$dir/$n"; done
fi
""")
    src = tmp_path / "csrc"
    (src / "src" / "core" / "clock").mkdir(parents=True)
    (src / "src" / "apps").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("project(x C)\n")
    (src / "src" / "core" / "clock" / "sync.c").write_text("int sync;\n")
    (src / "src" / "apps" / "bench.c").write_text("int main(void) { return 0; }\n")
    mpicc = _fake_mpi(tmp_path / "mpi-a")
    for var in ("MPITEMPO_CORE", "MPITEMPO_MPICC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    monkeypatch.setenv("MPITEMPO_SOURCE", str(src))
    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    # files made by a test are seconds old: let the index trust them (the racy case has its own test)
    monkeypatch.setattr(B, "_RACY_S", -3600.0)

    class Env:
        pass

    e = Env()
    e.tmp, e.src, e.mpicc, e.log, e.tools = tmp_path, src, str(mpicc), log, tools
    e.cmake_calls = lambda: len(log.read_text().splitlines()) if log.exists() else 0
    return e


def _bump(path: Path, text: str | None = None) -> None:
    """Change a file's content (or only its mtime) so that the stat index sees it."""
    st = path.stat()
    if text is not None:
        path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_first_build_says_so_cached_build_is_silent(env, capsys):
    b = B.ensure_build(env.mpicc)
    err = capsys.readouterr().err
    assert f"mpitempo: building the core for {env.mpicc} (first use)" in err
    assert b.origin == "built" and b.source == str(env.src) and b.flavour == "mpich"
    assert "-DMPITEMPO_TESTS=OFF" in env.log.read_text()
    assert env.cmake_calls() == 2
    again = B.ensure_build(env.mpicc)
    assert capsys.readouterr().err == ""
    assert env.cmake_calls() == 2
    assert again.fingerprint == b.fingerprint and again.bindir == b.bindir


def test_cached_path_does_not_run_the_wrapper(env, monkeypatch):
    b = B.ensure_build(env.mpicc)

    def boom(*a, **k):
        raise AssertionError("the cached path ran an MPI tool")

    monkeypatch.setattr(B, "wrapper_show", boom)
    monkeypatch.setattr(B, "detect_flavour", boom)
    assert B.ensure_build(env.mpicc).fingerprint == b.fingerprint


def test_changed_source_rebuilds_touched_source_does_not(env, capsys):
    b = B.ensure_build(env.mpicc)
    f = env.src / "src" / "core" / "clock" / "sync.c"
    _bump(f)  # same content, new mtime: the full fingerprint is checked again, same build
    t = B.ensure_build(env.mpicc)
    assert t.fingerprint == b.fingerprint and env.cmake_calls() == 2
    _bump(f, "int sync = 1;\n")  # new content: new fingerprint, rebuilt
    capsys.readouterr()
    c = B.ensure_build(env.mpicc)
    assert c.fingerprint != b.fingerprint and env.cmake_calls() == 4
    assert "(first use)" in capsys.readouterr().err


@pytest.mark.parametrize("new", ["src/core/op/op_new.c", "src/apps/tree.c", "params/params.def", "cmake/x.cmake"])
def test_new_file_anywhere_in_the_tree_rebuilds(env, new):
    b = B.ensure_build(env.mpicc)
    (env.src / new).parent.mkdir(parents=True, exist_ok=True)
    (env.src / new).write_text("x\n")
    assert B.ensure_build(env.mpicc).fingerprint != b.fingerprint
    assert env.cmake_calls() == 4


def test_fingerprint_hashes_the_whole_tree_recursively(env):
    before = B._sources_hash(env.src)
    deep = env.src / "src" / "core" / "a" / "b" / "c.h"
    deep.parent.mkdir(parents=True)
    deep.write_text("#define X 1\n")
    assert B._sources_hash(env.src) != before
    assert deep in B.source_files(env.src)
    assert not any("__pycache__" in str(p) for p in B.source_files(env.src))


def test_other_mpicc_other_build(env):
    a = B.ensure_build(env.mpicc)
    other = _fake_mpi(env.tmp / "mpi-b", version="5.0.0")
    b = B.ensure_build(str(other))
    assert b.fingerprint != a.fingerprint and b.mpicc == str(other)
    assert b.mpiexec_version.endswith("5.0.0")
    assert B.ensure_build(env.mpicc).fingerprint == a.fingerprint  # both stay cached
    assert env.cmake_calls() == 4


def test_changed_wrapper_or_library_is_noticed(env):
    a = B.ensure_build(env.mpicc)
    mpicc = Path(env.mpicc)
    _bump(mpicc, mpicc.read_text().replace("-lmpi", "-lmpi -lextra"))
    b = B.ensure_build(env.mpicc)
    assert b.fingerprint != a.fingerprint and "-lextra" in b.show
    lib = env.tmp / "mpi-a" / "lib" / "libmpi.so.12"
    _bump(lib, "a new library")
    c = B.ensure_build(env.mpicc)
    assert c.fingerprint != b.fingerprint


def test_wrapper_environment_is_part_of_the_key(env, monkeypatch):
    a = B.ensure_build(env.mpicc)
    calls = []
    real = B.wrapper_show
    monkeypatch.setattr(B, "wrapper_show", lambda m: calls.append(m) or real(m))
    monkeypatch.setenv("MPICH_CC", "clang")  # changes what a real MPICH wrapper prints
    assert B.ensure_build(env.mpicc).fingerprint == a.fingerprint  # the fake wrapper ignores MPICH_CC
    assert calls, "a changed MPICH_CC must send the lookup to the wrapper again"


def test_recently_modified_files_are_not_indexed(env, monkeypatch):
    monkeypatch.setattr(B, "_RACY_S", 2.0)
    (env.src / "src" / "apps" / "bench.c").write_text("int main(void) { return 1; }\n")  # modified just now
    B.ensure_build(env.mpicc)
    assert not list((env.tmp / "cache" / "index").glob("build-*.json"))


def test_half_finished_build_is_rebuilt(env):
    b = B.ensure_build(env.mpicc)
    (Path(b.bindir) / "mpitempo-clocks").unlink()
    c = B.ensure_build(env.mpicc)
    assert (Path(c.bindir) / "mpitempo-clocks").exists() and env.cmake_calls() == 4


# ---------------------------------------------------------------------------- installed cores

def _installed_core(d: Path, with_mpiexec: bool = True, names=B.BINARIES) -> Path:
    for n in names:
        _script(d / n, f"echo {n}\n")
    if with_mpiexec:
        _script(d / "mpiexec", "echo 'HYDRA build details:'; echo '    Version:   4.3.0'\n")
    return d


def test_installed_core_from_variable(env, monkeypatch, capsys):
    core = _installed_core(env.tmp / "spack" / "bin")
    monkeypatch.setenv("MPITEMPO_CORE", str(core))
    b = B.ensure_build()
    assert b.origin == "installed" and b.source == "MPITEMPO_CORE" and b.bindir == str(core)
    assert b.mpiexec == str(core / "mpiexec") and b.flavour == "mpich" and b.mpiexec_version == "HYDRA 4.3.0"
    assert b.binary("mpitempo-clocks") == str(core / "mpitempo-clocks")
    assert "installed core in" in b.describe() and env.cmake_calls() == 0
    assert capsys.readouterr().err == ""
    # the fingerprint is the binaries': another binary, another fingerprint
    _bump(core / "mpitempo-bench", "#!/bin/sh\necho v2\n")
    assert B.ensure_build().fingerprint != b.fingerprint
    # the variable may name the binary itself
    monkeypatch.setenv("MPITEMPO_CORE", str(core / "mpitempo-bench"))
    assert B.ensure_build().bindir == str(core)


def test_installed_core_on_path_with_mpiexec_on_path(env, monkeypatch):
    core = _installed_core(env.tmp / "module" / "bin", with_mpiexec=False)
    mpi = env.tmp / "mpi-a" / "bin"
    monkeypatch.setenv("PATH", f"{core}:{mpi}:{env.tools}:/usr/bin:/bin")
    b = B.ensure_build()
    assert b.origin == "installed" and b.source == "PATH" and b.bindir == str(core)
    assert b.mpiexec == str(mpi / "mpiexec")
    assert B.ensure_build().to_json() == b.to_json()  # cached record


def test_explicit_mpi_builds_even_with_an_installed_core(env, monkeypatch):
    core = _installed_core(env.tmp / "spack" / "bin")
    monkeypatch.setenv("MPITEMPO_CORE", str(core))
    assert B.ensure_build(env.mpicc).origin == "built"
    monkeypatch.setenv("MPITEMPO_MPICC", env.mpicc)
    assert B.ensure_build().origin == "built"


def test_core_build_value_turns_detection_off(env, monkeypatch):
    core = _installed_core(env.tmp / "module" / "bin")
    monkeypatch.setenv("PATH", f"{core}:{Path(env.mpicc).parent}:{env.tools}:/usr/bin:/bin")
    monkeypatch.setenv("MPITEMPO_CORE", "build")
    assert B.ensure_build().origin == "built"


def test_incomplete_installed_core(env, monkeypatch):
    core = _installed_core(env.tmp / "old" / "bin", names=("mpitempo-bench",))
    monkeypatch.setenv("PATH", f"{core}:{Path(env.mpicc).parent}:{env.tools}:/usr/bin:/bin")
    assert B.ensure_build().origin == "built"  # a lone mpitempo-bench on PATH is not a core
    monkeypatch.setenv("MPITEMPO_CORE", str(core))
    with pytest.raises(MtError, match="mpitempo-pingpong, mpitempo-clocks, mpitempo-tree, mpitempo-logp not found"):
        B.ensure_build()


def test_cli_build_names_the_core(env, monkeypatch, cli):
    code, out, _ = cli("build", "--mpicc", env.mpicc)
    assert code == 0 and f"built by mpitempo from {env.src}" in out
    core = _installed_core(env.tmp / "spack" / "bin")
    monkeypatch.setenv("MPITEMPO_CORE", str(core))
    code, out, _ = cli("build")
    assert code == 0 and f"installed core in {core} (found via MPITEMPO_CORE)" in out


# ---------------------------------------------------------------------------- optional components

def _fake_otf2(prefix: Path) -> None:
    (prefix / "include" / "otf2").mkdir(parents=True, exist_ok=True)
    (prefix / "include" / "otf2" / "otf2.h").write_text("/* otf2 */\n")
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "lib" / "libotf2.so").write_bytes(b"otf2")


def test_otf2_installed_after_the_build_rebuilds(env, monkeypatch, capsys):
    """Hostile sequence: the core is built, then OTF2 is installed (here into a prefix of
    CMAKE_PREFIX_PATH, where CMake's find_path/find_library look). On main the cached core without
    OTF2 was reused silently; the fingerprint includes the optional components, so it is rebuilt,
    and reused again once nothing changes. Removing OTF2 rebuilds too."""
    prefix = env.tmp / "otf2-prefix"
    monkeypatch.setenv("CMAKE_PREFIX_PATH", str(prefix))
    # only the prefix's candidates: the machine may have OTF2 installed in /usr (CI installs it)
    real = B._component_candidates
    monkeypatch.setattr(B, "_component_candidates", lambda: {
        k: [c for c in v if str(c).startswith(str(prefix))] for k, v in real().items()})
    b = B.ensure_build(env.mpicc)
    assert B.optional_components()["otf2_header"] is None and env.cmake_calls() == 2
    _fake_otf2(prefix)
    assert B.optional_components()["otf2_header"] == str(prefix / "include" / "otf2" / "otf2.h")
    capsys.readouterr()
    c = B.ensure_build(env.mpicc)
    assert c.fingerprint != b.fingerprint and env.cmake_calls() == 4
    assert "(first use)" in capsys.readouterr().err
    assert B.ensure_build(env.mpicc).fingerprint == c.fingerprint and env.cmake_calls() == 4
    shutil.rmtree(prefix)
    assert B.ensure_build(env.mpicc).fingerprint == b.fingerprint   # the first build is still cached


def test_hwloc_pkgconfig_file_is_part_of_the_key(env, monkeypatch):
    """hwloc found through pkg-config (PKG_CONFIG_PATH) after the build: a new fingerprint."""
    pc = env.tmp / "pc"
    monkeypatch.setenv("PKG_CONFIG_PATH", str(pc))
    b = B.ensure_build(env.mpicc)
    pc.mkdir()
    (pc / "hwloc.pc").write_text("Name: hwloc\nVersion: 2.9.0\n")
    assert B.ensure_build(env.mpicc).fingerprint != b.fingerprint


def test_configured_components_from_the_cmake_cache(tmp_path):
    """What CMake found is read back from CMakeCache.txt; NOTFOUND is absent."""
    (tmp_path / "CMakeCache.txt").write_text(
        "OTF2_INCLUDE_DIR:PATH=/usr/include\nOTF2_LIBRARY:FILEPATH=/usr/lib/libotf2.so\n"
        "HWLOC_FOUND:INTERNAL=1\nHWLOC_VERSION:INTERNAL=2.9.0\n")
    assert B.configured_components(tmp_path) == {"otf2": "/usr/lib/libotf2.so", "hwloc": "2.9.0"}
    (tmp_path / "CMakeCache.txt").write_text(
        "OTF2_INCLUDE_DIR:PATH=OTF2_INCLUDE_DIR-NOTFOUND\nOTF2_LIBRARY:FILEPATH=OTF2_LIBRARY-NOTFOUND\n"
        "HWLOC_FOUND:INTERNAL=\n")
    assert B.configured_components(tmp_path) == {"otf2": None, "hwloc": None}


def test_cli_build_says_which_components_are_in(env, cli):
    """`mpitempo build` and `build --json` name the optional components of the core."""
    code, out, _ = cli("build", "--mpicc", env.mpicc)
    assert code == 0 and "optional:" in out and "OTF2" in out and "hwloc" in out
    import json

    code, out, _ = cli("build", "--mpicc", env.mpicc, "--json")
    assert code == 0 and set(json.loads(out)["components"]) >= {"otf2", "hwloc"}


# ---------------------------------------------------------------------------- packaging

def test_setup_py_copies_what_the_build_hashes():
    tree = ast.parse((ROOT / "setup.py").read_text())
    found = [ast.literal_eval(n.value) for n in tree.body
             if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "CORE_TREES" for t in n.targets)]
    assert found == [B.CORE_TREES]


@pytest.mark.mpi
def test_real_build_from_a_copy_rebuilds_after_a_source_change(tmp_path, monkeypatch):
    """The real MPI and cmake: a copy of the sources (as in the wheel) builds without
    the C tests, and a changed source file gives a new build."""
    src = tmp_path / "_csrc"
    for name in B.CORE_TREES:
        p = ROOT / name
        if p.is_file():
            src.mkdir(exist_ok=True)
            shutil.copy2(p, src / name)
        elif p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("MPITEMPO_SOURCE", str(src))
    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MPITEMPO_MPICC", raising=False)
    monkeypatch.setenv("MPITEMPO_CORE", "build")
    a = B.ensure_build()
    assert a.source == str(src) and all(os.access(Path(a.bindir) / n, os.X_OK) for n in B.BINARIES)
    assert "MPITEMPO_TESTS:BOOL=OFF" in (Path(a.bindir) / "CMakeCache.txt").read_text()
    assert not list(Path(a.bindir).glob("test_*"))
    t0 = time.perf_counter()
    assert B.ensure_build().fingerprint == a.fingerprint
    cached = time.perf_counter() - t0
    assert cached < 0.5, f"cached ensure_build took {cached:.3f} s"
    some_c = sorted((src / "src").rglob("*.c"))[0]
    _bump(some_c, some_c.read_text() + "\n/* changed */\n")
    b = B.ensure_build()
    assert b.fingerprint != a.fingerprint and Path(b.bindir, "mpitempo-bench").exists()
