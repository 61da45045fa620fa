"""Compile the C core against one MPI installation, cached by that MPI's identity.

A binary is bound to the MPI it was compiled with. `ensure_build()` finds the
installation (an explicit mpicc, $MPITEMPO_MPICC, the mpicc on PATH, or the one
in this Python environment), computes a fingerprint from the wrapper's
identity (path, `-show` output, the library file it links) and the C sources,
and builds with CMake into ``$MPITEMPO_CACHE/builds/<fingerprint>`` once.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from mpitempo.errors import MtError

BINARIES = ("mpitempo-bench", "mpitempo-pingpong", "mpitempo-clocks")


@dataclass
class Build:
    fingerprint: str
    mpicc: str
    mpiexec: str
    flavour: str          # "mpich", "openmpi" or "unknown"
    show: str             # the wrapper's compile line
    mpiexec_version: str  # first line of `mpiexec --version`
    bindir: str

    def binary(self, name: str = "mpitempo-bench") -> str:
        path = Path(self.bindir) / name
        if not path.exists():
            raise MtError(f"binary '{name}' is missing from the build in {self.bindir}; run 'mpitempo build --force'")
        return str(path)

    def to_json(self) -> dict:
        return asdict(self)


def source_root() -> Path:
    """The C sources: $MPITEMPO_SOURCE, or the checkout this package lives in."""
    env = os.environ.get("MPITEMPO_SOURCE")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [here.parents[2], here.parent / "_csrc"]
    for c in candidates:
        if (c / "CMakeLists.txt").exists() and (c / "src" / "core").is_dir():
            return c
    raise MtError("cannot find the mpitempo C sources (CMakeLists.txt); set MPITEMPO_SOURCE to the checkout")


def cache_root() -> Path:
    env = os.environ.get("MPITEMPO_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mpitempo"


def find_mpicc(mpicc: str | None = None) -> str:
    """Resolve which mpicc to use; raise with a clear message when there is none."""
    if mpicc:
        path = shutil.which(mpicc) if os.sep not in mpicc else (mpicc if os.access(mpicc, os.X_OK) else None)
        if not path:
            raise MtError(f"mpicc '{mpicc}' not found or not executable")
        return os.path.abspath(path)
    env = os.environ.get("MPITEMPO_MPICC")
    if env:
        return find_mpicc(env)
    path = shutil.which("mpicc")
    if path:
        return os.path.abspath(path)
    local = Path(sys.prefix) / "bin" / "mpicc"
    if local.exists():
        return str(local)
    raise MtError("no MPI found: no mpicc on PATH (install an MPI, e.g. 'pip install mpich', or pass --mpicc PATH)")


def _run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def wrapper_show(mpicc: str) -> str:
    for flag in ("-show", "--showme"):
        try:
            r = _run([mpicc, flag])
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    raise MtError(f"'{mpicc}' does not answer -show or --showme: is it an MPI compiler wrapper?")


def find_mpiexec(mpicc: str) -> str:
    """The launcher that belongs to this mpicc: the mpiexec/mpirun beside it."""
    d = Path(mpicc).parent
    for name in ("mpiexec", "mpirun"):
        if (d / name).exists():
            return str(d / name)
    real = Path(os.path.realpath(mpicc)).parent
    for name in ("mpiexec", "mpirun"):
        if (real / name).exists():
            return str(real / name)
    raise MtError(f"no mpiexec or mpirun next to '{mpicc}'; pass --launcher with a template")


def detect_flavour(mpiexec: str) -> tuple[str, str]:
    """(flavour, first version line) of an mpiexec."""
    try:
        r = _run([mpiexec, "--version"], timeout=30)
        text = (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MtError(f"cannot run '{mpiexec} --version': {e}") from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    for ln in lines:  # Hydra prints "HYDRA build details:" first and the version below
        if ln.lower().startswith("version:"):
            first = f"{first.split()[0]} {ln.split(':', 1)[1].strip()}"
            break
    low = text.lower()
    if "open mpi" in low or "openrte" in low or "prrte" in low or "prterun" in low or "open-mpi" in low:
        return "openmpi", first
    if "hydra" in low or "mpich" in low or "intel(r) mpi" in low:
        return "mpich", first
    return "unknown", first


def _lib_identity(show: str) -> list[str]:
    """size and mtime of libmpi files under the wrapper's -L directories."""
    out = []
    for tok in show.split():
        if tok.startswith("-L"):
            d = Path(tok[2:])
            for lib in sorted(d.glob("libmpi.so*"))[:4]:
                try:
                    st = lib.stat()
                    out.append(f"{lib}:{st.st_size}:{int(st.st_mtime)}")
                except OSError:
                    pass
    return out


def _sources_hash(root: Path) -> str:
    h = hashlib.sha256()
    files = [root / "CMakeLists.txt"] + sorted((root / "src").rglob("*"))
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def fingerprint(mpicc: str, show: str, root: Path) -> str:
    h = hashlib.sha256()
    for part in [os.path.realpath(mpicc), show, *_lib_identity(show), _sources_hash(root)]:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def ensure_build(mpicc: str | None = None, force: bool = False, quiet: bool = True) -> Build:
    """Build (or reuse) the C core for this MPI; returns where the binaries are."""
    mpicc = find_mpicc(mpicc)
    show = wrapper_show(mpicc)
    mpiexec = find_mpiexec(mpicc)
    flavour, mpiexec_version = detect_flavour(mpiexec)
    root = source_root()
    fp = fingerprint(mpicc, show, root)
    bdir = cache_root() / "builds" / fp
    info_path = bdir / "build.json"
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two campaigns building the same MPI wait for each other
        if info_path.exists() and not force:
            info = json.loads(info_path.read_text())
            b = Build(**info)
            if all((Path(b.bindir) / n).exists() for n in BINARIES):
                return b
        cmake = shutil.which("cmake")
        if not cmake:
            raise MtError("cmake not found on PATH: it is needed to build the C core")
        work = bdir / "cmake"
        if force and work.exists():
            shutil.rmtree(work)
        env = dict(os.environ)
        cfg = [cmake, "-S", str(root), "-B", str(work), f"-DMPI_C_COMPILER={mpicc}", "-DMPITEMPO_TESTS=OFF",
               "-DCMAKE_BUILD_TYPE=Release"]
        for cmd in (cfg, [cmake, "--build", str(work), "-j", str(os.cpu_count() or 2)]):
            if not quiet:
                print("+ " + " ".join(cmd), file=sys.stderr)
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode != 0:
                tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
                raise MtError(f"building the C core with {mpicc} failed:\n{tail}")
        b = Build(fingerprint=fp, mpicc=mpicc, mpiexec=mpiexec, flavour=flavour, show=show,
                  mpiexec_version=mpiexec_version, bindir=str(work))
        tmp = info_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(b.to_json(), indent=2))
        tmp.replace(info_path)
        return b


def list_registry(build: Build) -> dict:
    """The names the core accepts (timers, ops, schemes, ...), without starting MPI."""
    r = _run([build.binary(), "--list"])
    if r.returncode != 0:
        raise MtError(f"'{build.binary()} --list' failed: {r.stderr.strip()}")
    return json.loads(r.stdout)
