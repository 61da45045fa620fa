"""The Spack recipes follow Spack's conventions (loaded with a stand-in for spack.package that
records the directives), release.py writes checksums that match the tarball, and a LICENSE exists."""
import hashlib
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPACK = ROOT / "packaging" / "spack"


def load_recipe(path: Path):
    calls: list[tuple] = []

    def directive(name):
        def f(*args, **kw):
            calls.append((name, args, kw))
        return f

    mod = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "maintainers", "license", "conflicts", "patch", "resource"):
        setattr(mod, name, directive(name))
    mod.CMakePackage = type("CMakePackage", (), {})
    mod.PythonPackage = type("PythonPackage", (), {})
    mod.run_after = lambda *a, **k: (lambda f: f)
    mod.on_package_attributes = lambda **k: (lambda f: f)
    mod.__all__ = [n for n in dir(mod) if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = mod
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules.update({"spack": spack, "spack.package": mod})
    try:
        ns: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), ns)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    cls = [v for k, v in ns.items() if isinstance(v, type) and k in ("Mpitempo", "PyMpitempo")][0]
    return cls, calls


def names(calls, what):
    return [c for c in calls if c[0] == what]


def test_core_recipe_conventions():
    cls, calls = load_recipe(SPACK / "packages" / "mpitempo" / "package.py")
    assert cls.__doc__ and cls.homepage and cls.url.endswith(".tar.gz") and cls.git
    assert names(calls, "license") == [("license", ("BSD-3-Clause",), {})]
    assert names(calls, "maintainers")
    deps = {c[1][0]: c[2] for c in names(calls, "depends_on")}
    assert deps["c"] == {"type": "build"} and "mpi" in deps and deps["hwloc"] == {"when": "+hwloc"}
    assert [c[1][0] for c in names(calls, "variant")] == ["hwloc", "otf2"] and deps["otf2"] == {"when": "+otf2"}
    src = (SPACK / "packages" / "mpitempo" / "package.py").read_text()
    assert 'self.define("MPITEMPO_TESTS", self.run_tests)' in src and "def check(self)" in src
    assert 'env.set("MPITEMPO_CORE", self.prefix.bin)' in src


def test_python_recipe_uses_the_installed_core():
    cls, calls = load_recipe(SPACK / "packages" / "py-mpitempo" / "package.py")
    deps = {c[1][0].split("@")[0]: c[2] for c in names(calls, "depends_on")}
    assert deps["mpitempo"] == {"type": "run"}
    assert names(calls, "license") == [("license", ("BSD-3-Clause",), {})] and names(calls, "maintainers")
    # every runtime dependency of pyproject.toml has its py- package
    text = (ROOT / "pyproject.toml").read_text()
    deps_block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    for line in deps_block.strip().splitlines():
        name = line.strip().strip('",').split(">")[0].split(";")[0].split("=")[0].strip()
        assert f"py-{name}" in deps, name


def test_release_writes_matching_checksums(tmp_path):
    copy = tmp_path / "spack"
    shutil.copytree(SPACK, copy)
    tarball = tmp_path / "mpitempo-9.8.7.tar.gz"
    tarball.write_bytes(b"release contents")
    want = hashlib.sha256(b"release contents").hexdigest()
    for _ in range(2):      # running it twice keeps one line per version
        r = subprocess.run([sys.executable, str(copy / "release.py"), "9.8.7", str(tarball)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    for name in ("mpitempo", "py-mpitempo"):
        cls, calls = load_recipe(copy / "packages" / name / "package.py")
        versions = {c[1][0]: c[2] for c in names(calls, "version")}
        assert versions == {"main": {"branch": "main"}, "9.8.7": {"sha256": want}}
        assert cls.url.endswith("/mpitempo-9.8.7.tar.gz")
    r = subprocess.run([sys.executable, str(copy / "release.py"), "v1", str(tarball)], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def test_license_matches_pyproject():
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    assert 'license = {text = "BSD-3-Clause"}' in (ROOT / "pyproject.toml").read_text()
