"""Build hook: put the C core's sources into the package as mpitempo/_csrc.

`mpitempo build` compiles the core from them when no checkout is around (pip
install ., a wheel). Everything else about the package is in pyproject.toml.
"""
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# What a build of the core needs (keep in step with CORE_TREES in python/mpitempo/build.py;
# tests/py/test_build_cache.py checks that they agree). Tests and benchmarks stay out.
CORE_TREES = ("CMakeLists.txt", "src", "params", "cmake")
SKIP_DIRS = {"__pycache__", ".git"}
SKIP_SUFFIXES = (".pyc", ".o", ".swp", "~")


def core_files(root):
    """(path, path relative to root) of every file of the C source tree."""
    for name in CORE_TREES:
        p = root / name
        if p.is_file():
            yield p, Path(name)
        elif p.is_dir():
            for d, dirs, files in os.walk(p):
                dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
                for f in sorted(files):
                    if not f.endswith(SKIP_SUFFIXES):
                        yield Path(d) / f, (Path(d) / f).relative_to(root)


class build_py_with_csrc(build_py):
    def run(self):
        editable = getattr(self, "editable_mode", False)
        stale = Path(self.build_lib) / "mpitempo"
        if not editable and stale.exists():
            # setuptools' build/lib outlives the tree it was made from: a module moved or
            # deleted since the last build would otherwise end up in the wheel
            shutil.rmtree(stale)
        super().run()
        if editable:
            return  # an editable install builds from the checkout itself
        dest = Path(self.build_lib) / "mpitempo" / "_csrc"
        n = 0
        for src, rel in core_files(HERE):
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)
            n += 1
        if not (dest / "CMakeLists.txt").is_file():
            raise SystemExit("setup.py: no CMakeLists.txt to put into mpitempo/_csrc (is this the mpitempo tree?)")
        print(f"setup.py: {n} C source files -> {dest}")


if __name__ == "__main__":
    setup(cmdclass={"build_py": build_py_with_csrc})
