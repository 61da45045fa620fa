"""The C core for one MPI installation: an installed core, or one compiled and cached by mpitempo.

A binary is bound to the MPI it was compiled with. `ensure_build()` returns the
core a run uses, in this order:

1. an explicit MPI (``--mpicc PATH`` or ``$MPITEMPO_MPICC``): compiled for it;
2. an installed core (Spack, a module, ``cmake --install``): ``$MPITEMPO_CORE``
   names the directory holding ``mpitempo-bench``, ``mpitempo-clocks``,
   ``mpitempo-pingpong`` and ``mpitempo-tree``, or else ``mpitempo-bench`` is found on PATH
   with the others beside it (``MPITEMPO_CORE=build`` turns this off);
3. the mpicc on PATH (or the one in this Python environment): compiled for it.

A compiled core lives in ``$MPITEMPO_CACHE/builds/<fingerprint>`` (default
``~/.cache/mpitempo``, shared by ``make`` and the command line). The fingerprint
hashes the wrapper's identity (path, ``-show`` output, the libmpi files it links),
every file of the C source tree it is built from, and the optional components that
CMakeLists.txt looks for, found the way it looks for them (`optional_components`:
OTF2's header and library, hwloc's pkg-config file): a core built before OTF2 was
installed is rebuilt once it is there, and one built with it once it is gone. Computing it runs the
wrapper, so a stat index in front of it (paths, sizes, mtimes, inodes of the
wrapper, mpiexec, libmpi and every source file) lets the cached path skip that
when nothing changed; any change falls back to the full fingerprint.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.mpilib.base import cache_root, cached_text  # noqa: F401 (build.cache_root: the cache of every part)

BINARIES = ("mpitempo-bench", "mpitempo-pingpong", "mpitempo-clocks", "mpitempo-tree", "mpitempo-logp")
# What a build of the core needs, relative to the source root. The wheel carries
# the same entries under mpitempo/_csrc (setup.py keeps its own copy of this list).
CORE_TREES = ("CMakeLists.txt", "src", "params", "cmake")
_SKIP_DIRS = {"__pycache__", ".git"}
_SKIP_SUFFIXES = (".pyc", ".o", ".swp", "~")
# Environment variables that change what an MPI compiler wrapper prints for -show.
_WRAPPER_ENV_PREFIXES = ("MPICH_", "OMPI_", "OPAL_", "I_MPI_", "MPICC")
_INDEX_VERSION = 2
_RACY_S = 2.0   # files modified this recently are not trusted to the stat index


@dataclass
class Build:
    fingerprint: str
    mpicc: str
    mpiexec: str
    flavour: str          # the library's name in mpitempo.mpilib (mpilib.NAMES) or "unknown"
    show: str             # the wrapper's compile line
    mpiexec_version: str  # first line of `mpiexec --version`
    bindir: str
    origin: str = "built"  # "built": compiled by mpitempo; "installed": a core installed outside mpitempo
    source: str = ""       # built: the C source tree; installed: how it was found ("MPITEMPO_CORE", "PATH")
    # optional components as CMake configured them: {"otf2": library path or None, "hwloc": version
    # or None}; empty for an installed core (not known)
    components: dict = field(default_factory=dict)

    def binary(self, name: str = "mpitempo-bench") -> str:
        path = Path(self.bindir) / name
        if not path.exists():
            if self.origin == "installed":
                raise MtError(f"binary '{name}' is missing from the installed core in {self.bindir}")
            raise MtError(f"binary '{name}' is missing from the build in {self.bindir}; run 'mpitempo build --force'")
        return str(path)

    def describe_components(self) -> str:
        """'OTF2 yes (PATH), hwloc no' for `mpitempo build`."""
        if self.origin == "installed" or not self.components:
            return "not known (an installed core, or built before mpitempo recorded them)"
        out = []
        for name, label, without in (("otf2", "OTF2", "the tracer writes events.csv and perfetto.json only"),
                                     ("hwloc", "hwloc", "the socket level of hierarchical sync from sysfs")):
            v = self.components.get(name)
            out.append(f"{label} {'yes (' + str(v) + ')' if v else 'no (' + without + ')'}")
        return "; ".join(out)

    def describe(self) -> str:
        """One line saying which core this is."""
        if self.origin == "installed":
            return f"installed core in {self.bindir} (found via {self.source})"
        return f"built by mpitempo from {self.source or '?'}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Build":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


# ----------------------------------------------------------------------------- where things are

def source_root() -> Path:
    """The C sources: $MPITEMPO_SOURCE, the checkout this package lives in, or the copy in the wheel."""
    env = os.environ.get("MPITEMPO_SOURCE")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [here.parents[2], here.parent / "_csrc"]
    for c in candidates:
        if (c / "CMakeLists.txt").is_file() and (c / "src").is_dir():
            return c
    raise MtError("cannot find the mpitempo C sources (CMakeLists.txt); set MPITEMPO_SOURCE to the checkout")


def source_files(root: Path) -> list[Path]:
    """Every file of the C source tree under `root` (CORE_TREES, recursively), sorted."""
    out: list[Path] = []
    for name in CORE_TREES:
        p = root / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            for d, dirs, files in os.walk(p):
                dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS)
                out.extend(Path(d) / f for f in sorted(files) if not f.endswith(_SKIP_SUFFIXES))
    return out


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


def _launcher_beside(d: Path, suffix: str = "") -> str | None:
    for name in ("mpiexec", "mpirun"):
        f = d / (name + suffix)
        if f.is_file() and os.access(f, os.X_OK):
            return str(f)
    return None


def _wrapper_suffixes(mpicc: str) -> list[tuple[Path, str]]:
    """(directory, suffix) of every name along mpicc's chain of symbolic links whose name is mpicc
    with a suffix: Debian installs MPICH's and Open MPI's wrappers as mpicc.mpich and mpicc.openmpi
    beside mpiexec.mpich and mpiexec.openmpi, and points mpicc and mpiexec at one of them through two
    separate alternatives, which need not agree."""
    out, p = [], Path(mpicc)
    for _ in range(16):
        if p.name.startswith("mpicc") and len(p.name) > len("mpicc") and p.name[len("mpicc")] in ".-_":
            out.append((p.parent, p.name[len("mpicc"):]))
        if not p.is_symlink():
            break
        try:
            t = Path(os.readlink(p))
        except OSError:
            break
        p = t if t.is_absolute() else p.parent / t
    return out


def find_mpiexec(mpicc: str) -> str:
    """The launcher that belongs to this mpicc: the mpiexec/mpirun beside it (smpirun beside smpicc)."""
    own = mpilib.launcher_of(mpicc)
    if own:
        return own
    for d, suffix in _wrapper_suffixes(mpicc):   # mpicc.mpich -> mpiexec.mpich, not the alternative
        found = _launcher_beside(d, suffix)
        if found:
            return found
    found = _launcher_beside(Path(mpicc).parent) or _launcher_beside(Path(os.path.realpath(mpicc)).parent)
    if found:
        return found
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
    return mpilib.detect(text), first


# ----------------------------------------------------------------------------- fingerprints

def _lib_files(show: str) -> list[Path]:
    """The MPI library's files (libmpi; SMPI: libsimgrid) under the wrapper's -L directories."""
    out = []
    for tok in show.split():
        if tok.startswith("-L"):
            for pat in mpilib.lib_globs():
                out += sorted(Path(tok[2:]).glob(pat))[:4]
    return out


def _lib_identity(show: str) -> list[str]:
    """size and mtime of libmpi files under the wrapper's -L directories."""
    out = []
    for lib in _lib_files(show):
        try:
            st = lib.stat()
            out.append(f"{lib}:{st.st_size}:{int(st.st_mtime)}")
        except OSError:
            pass
    return out


def _sources_hash(root: Path) -> str:
    h = hashlib.sha256()
    for f in source_files(root):
        h.update(str(f.relative_to(root)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _cflags_key(cflags: str | None) -> list[str]:
    """What a core built with its own C flags adds to its fingerprint and index key."""
    return [] if cflags is None else [f"cflags without build type={cflags}"]


def fingerprint(mpicc: str, show: str, root: Path, cflags: str | None = None) -> str:
    h = hashlib.sha256()
    for part in [os.path.realpath(mpicc), show, *_lib_identity(show), _sources_hash(root),
                 *_cflags_key(cflags), *_components_key()]:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------- optional components

def _search_prefixes() -> list[Path]:
    """The prefixes CMake's find_path/find_library search by default: CMAKE_PREFIX_PATH, the
    prefixes of the PATH entries (DIR/bin -> DIR), then /usr/local, /usr and /."""
    out: list[Path] = []
    for v in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep):
        if v:
            out.append(Path(v))
    for v in os.environ.get("PATH", "").split(os.pathsep):
        if v:
            p = Path(v)
            out.append(p.parent if p.name in ("bin", "sbin") else p)
    out += [Path("/usr/local"), Path("/usr"), Path("/")]
    seen, uniq = set(), []
    for p in out:
        if str(p) not in seen:
            seen.add(str(p))
            uniq.append(p)
    return uniq


def _lib_dirs(prefix: Path) -> list[Path]:
    import sysconfig

    arch = sysconfig.get_config_var("MULTIARCH") or ""
    return [prefix / "lib" / arch] * bool(arch) + [prefix / "lib64", prefix / "lib"]


def _component_candidates() -> dict[str, list[Path]]:
    """Where each optional component of CMakeLists.txt would be found, in CMake's order."""
    prefixes = _search_prefixes()
    pc_dirs = [Path(v) for v in os.environ.get("PKG_CONFIG_PATH", "").split(os.pathsep) if v]
    pc_dirs += [d / "pkgconfig" for p in (Path("/usr/local"), Path("/usr")) for d in _lib_dirs(p)]
    pc_dirs += [Path("/usr/share/pkgconfig")]
    return {
        "otf2_header": [p / "include" / "otf2" / "otf2.h" for p in prefixes],
        "otf2_library": [d / "libotf2.so" for p in prefixes for d in _lib_dirs(p)],
        "hwloc": [d / "hwloc.pc" for d in pc_dirs],
    }


def optional_components() -> dict[str, str | None]:
    """{"otf2_header", "otf2_library", "hwloc"}: the file each would be found at, or None."""
    out = {}
    for name, cands in _component_candidates().items():
        out[name] = next((str(c) for c in cands if c.is_file()), None)
    return out


def _components_key() -> list[str]:
    """What the optional components add to the fingerprint: each found file with its size and mtime."""
    parts = []
    for name, path in sorted(optional_components().items()):
        if path is None:
            parts.append(f"{name}=absent")
        else:
            try:
                st = os.stat(path)
                parts.append(f"{name}={os.path.realpath(path)}:{st.st_size}:{int(st.st_mtime)}")
            except OSError:
                parts.append(f"{name}=absent")
    return parts


def _component_files() -> list[str]:
    """Every candidate path of every optional component (watched by the stat index: a component
    that appears or goes away changes the index key, and the full fingerprint is computed again)."""
    return [str(c) for cands in _component_candidates().values() for c in cands]


def configured_components(work: Path) -> dict:
    """What CMake found, from the build directory's CMakeCache.txt: {"otf2": library or None,
    "hwloc": version or None}."""
    cache = {}
    try:
        for ln in (work / "CMakeCache.txt").read_text(errors="replace").splitlines():
            k, sep, v = ln.partition("=")
            if sep and ":" in k and not ln.startswith(("//", "#")):
                cache[k.split(":", 1)[0]] = v
    except OSError:   # no cache to read: what the same search as CMake's finds
        found = optional_components()
        return {"otf2": found["otf2_library"] if found["otf2_header"] else None,
                "hwloc": "found" if found["hwloc"] else None}
    lib, inc = cache.get("OTF2_LIBRARY", ""), cache.get("OTF2_INCLUDE_DIR", "")
    otf2 = lib if lib and inc and "NOTFOUND" not in lib and "NOTFOUND" not in inc else None
    hwloc = (cache.get("HWLOC_VERSION") or "found") if cache.get("HWLOC_FOUND") == "1" else None
    return {"otf2": otf2, "hwloc": hwloc}


def _stat_rows(paths) -> tuple[list, float]:
    """(stat rows of `paths`, newest mtime); a missing file is a row too."""
    rows, newest = [], 0.0
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            rows.append([str(p), None])
            continue
        rows.append([str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        newest = max(newest, st.st_mtime_ns / 1e9, st.st_ctime_ns / 1e9)
    return rows, newest


def _wrapper_env() -> list[str]:
    return sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(_WRAPPER_ENV_PREFIXES))


def _wrapper_files(mpicc: str, mpiexec: str | None, show: str) -> list[str]:
    """Files whose change can change the fingerprint or the build record apart from the sources."""
    real = Path(os.path.realpath(mpicc))
    files = [mpicc, str(real)]
    if mpiexec:
        files += [mpiexec, os.path.realpath(mpiexec)]
    files += [str(p) for p in real.parent.parent.glob("share/*/mpicc-wrapper-data.txt")]  # Open MPI
    for tok in show.split():
        if tok.startswith("-L"):
            files.append(tok[2:])  # the directory: its mtime changes when a library is added or replaced
    files += [str(p) for p in _lib_files(show)]
    return files + _component_files()


def _stat_digest(watched: list[str], rows: list, srows: list) -> str:
    return hashlib.sha256(json.dumps([_INDEX_VERSION, [os.path.realpath(p) for p in watched], rows, srows,
                                      _wrapper_env()]).encode()).hexdigest()


def _index_path(kind: str, *parts: str) -> Path:
    name = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
    return cache_root() / "index" / f"{kind}-{name}.json"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs speed


# ----------------------------------------------------------------------------- an installed core

def find_installed_core() -> tuple[Path, str] | None:
    """(directory, how it was found) of an installed core, or None when the core is to be built."""
    env = os.environ.get("MPITEMPO_CORE", "").strip()
    if env.lower() == "build":
        return None
    if env:
        d = Path(env)
        if d.is_file():
            d = d.parent
        missing = [n for n in BINARIES if not os.access(d / n, os.X_OK)]
        if missing:
            raise MtError(f"MPITEMPO_CORE={env}: {', '.join(missing)} not found there; set it to the directory "
                          "that holds mpitempo-bench (e.g. /prefix/bin), or unset it")
        return d.absolute(), "MPITEMPO_CORE"
    found = shutil.which("mpitempo-bench")
    if found:
        d = Path(found).absolute().parent
        if all(os.access(d / n, os.X_OK) for n in BINARIES):
            return d, "PATH"
    return None


def _linked_libmpi_dir(binary: Path) -> Path | None:
    """The directory of the libmpi the binary loads (from ldd), or None."""
    try:
        r = _run(["ldd", str(binary)], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for ln in r.stdout.splitlines():
        if "libmpi" in ln and "=>" in ln:
            target = ln.split("=>", 1)[1].split("(")[0].strip()
            if target.startswith("/"):
                return Path(target).parent
    return None


def installed_mpiexec(bindir: Path) -> str:
    """The launcher for an installed core: beside it, beside the libmpi it loads, or on PATH."""
    found = _launcher_beside(bindir)
    if not found:
        libdir = _linked_libmpi_dir(bindir / "mpitempo-bench")
        if libdir:
            found = _launcher_beside(libdir.parent / "bin")
    if not found:
        found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise MtError(f"the installed core in {bindir} has no mpiexec or mpirun beside it or on PATH; "
                      "load its MPI or pass --launcher with a template")
    return os.path.abspath(found)


def installed_build(bindir: Path, how: str) -> Build:
    """The Build record of an installed core (fingerprint of its binaries), cached by a stat index."""
    bins = [str(bindir / n) for n in BINARIES]
    index = _index_path("installed", str(bindir), os.environ.get("PATH", ""))
    entry = _read_json(index)
    if entry and entry.get("version") == _INDEX_VERSION:
        rows, _ = _stat_rows(entry["watched"])
        if rows == entry["rows"]:
            b = Build.from_json(entry["build"])
            b.source = how
            return b
    h = hashlib.sha256()
    for p in bins:
        h.update(Path(p).name.encode() + b"\0")
        h.update(Path(p).read_bytes())
    mpiexec = installed_mpiexec(bindir)
    flavour, version = detect_flavour(mpiexec)
    b = Build(fingerprint=h.hexdigest()[:16], mpicc="", mpiexec=mpiexec, flavour=flavour, show="",
              mpiexec_version=version, bindir=str(bindir), origin="installed", source=how)
    watched = bins + [str(bindir), mpiexec, os.path.realpath(mpiexec)]
    rows, newest = _stat_rows(watched)
    if newest < time.time() - _RACY_S:
        _write_json(index, {"version": _INDEX_VERSION, "watched": watched, "rows": rows, "build": b.to_json()})
    return b


# ----------------------------------------------------------------------------- a compiled core

def _complete(b: Build) -> bool:
    return all((Path(b.bindir) / n).exists() for n in BINARIES)


def _quick_lookup(mpicc: str, root: Path, cflags: str | None = None) -> Build | None:
    """The cached build for (mpicc, root, cflags) if no watched file changed since it was indexed."""
    entry = _read_json(_index_path("build", mpicc, str(root), *_cflags_key(cflags)))
    if not entry or entry.get("version") != _INDEX_VERSION:
        return None
    srows, _ = _stat_rows(source_files(root))
    rows, _ = _stat_rows(entry["watched"])
    if _stat_digest(entry["watched"], rows, srows) != entry["key"]:
        return None
    info = _read_json(cache_root() / "builds" / entry["fingerprint"] / "build.json")
    if not info:
        return None
    b = Build.from_json(info)
    if b.fingerprint != entry["fingerprint"] or not _complete(b):
        return None
    b.source = str(root)
    return b


def ensure_build(mpicc: str | None = None, force: bool = False, quiet: bool = True,
                 cflags: str | None = None) -> Build:
    """The core a run uses: an installed one, or one built (once, cached) for this MPI. With cflags
    (a campaign's compiler flags as a factor) the core is built with exactly those C flags (no
    build type's flags added) into its own cache entry. Jobs launched from now on run under the
    compiled watchdog of that core when it has one (runner.watchdog)."""
    from mpitempo.runner import watchdog

    problem = watchdog.env_problem()   # before anything is built or launched
    if problem:
        raise MtError(problem)
    b = _ensure_build(mpicc, force, quiet, cflags)
    watchdog.use_binary_in(b.bindir)
    return b


def _ensure_build(mpicc: str | None, force: bool, quiet: bool, cflags: str | None) -> Build:
    if mpicc is None and cflags is None and not os.environ.get("MPITEMPO_MPICC"):
        installed = find_installed_core()
        if installed:
            return installed_build(*installed)
    mpicc = find_mpicc(mpicc)
    root = source_root()
    if not force:
        b = _quick_lookup(mpicc, root, cflags)
        if b:
            return b
    # The stat index entry is taken before the files are read, so that a file
    # changed while they are hashed or compiled never matches it later.
    t0 = time.time()
    srows, snewest = _stat_rows(source_files(root))
    show = wrapper_show(mpicc)
    mpiexec = find_mpiexec(mpicc)
    watched = _wrapper_files(mpicc, mpiexec, show)
    rows, wnewest = _stat_rows(watched)
    index = {"version": _INDEX_VERSION, "watched": watched, "key": _stat_digest(watched, rows, srows)}
    fp = fingerprint(mpicc, show, root, cflags)
    index["fingerprint"] = fp

    def remember():
        if max(snewest, wnewest) < t0 - _RACY_S:  # else a change within the mtime granularity could hide
            _write_json(_index_path("build", mpicc, str(root), *_cflags_key(cflags)), index)

    bdir = cache_root() / "builds" / fp
    info_path = bdir / "build.json"
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two campaigns building the same MPI wait for each other
        in_use = None
        if force:   # a running campaign holds .in-use shared (runner.lock.builds_in_use): do not pull its core away
            in_use = open(bdir / ".in-use", "w")
            try:
                fcntl.flock(in_use, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                in_use.close()
                raise MtError(f"the core in '{bdir}' is in use by a running campaign; rebuild it (--force) "
                              "when that campaign has finished") from None
        info = None if force else _read_json(info_path)
        if info:
            b = Build.from_json(info)
            if _complete(b):
                b.source = str(root)
                remember()
                return b
        cmake = shutil.which("cmake")
        if not cmake:
            raise MtError("cmake not found on PATH: it is needed to build the C core")
        flavour, mpiexec_version = detect_flavour(mpiexec)
        why = "--force" if force else "first use"
        print(f"mpitempo: building the core for {mpicc} ({why})", file=sys.stderr, flush=True)
        work = bdir / "cmake"
        if work.exists():
            shutil.rmtree(work)  # a forced, failed or half-finished build starts clean
        cfg = [cmake, "-S", str(root), "-B", str(work), f"-DMPI_C_COMPILER={mpicc}", "-DMPITEMPO_TESTS=OFF"]
        cfg += (["-DCMAKE_BUILD_TYPE=Release"] if cflags is None
                else ["-DCMAKE_BUILD_TYPE=Cflags", f"-DCMAKE_C_FLAGS={cflags}"])  # a type without flags of its own
        for cmd in (cfg, [cmake, "--build", str(work), "-j", str(os.cpu_count() or 2)]):
            if not quiet:
                print("+ " + " ".join(cmd), file=sys.stderr)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
                what = f"{mpicc} and cflags '{cflags}'" if cflags is not None else mpicc
                raise MtError(f"building the C core with {what} failed:\n{tail}")
        b = Build(fingerprint=fp, mpicc=mpicc, mpiexec=mpiexec, flavour=flavour, show=show,
                  mpiexec_version=mpiexec_version, bindir=str(work), origin="built", source=str(root),
                  components=configured_components(work))
        _write_json(info_path, b.to_json())
        remember()
        return b


def direct_argv(build: Build, binary: str) -> list[str]:
    """The command that runs a core binary on its own (--list, --check-args, no MPI job): the binary
    itself, or what its library needs (SMPI: smpirun with one rank on a one-host platform)."""
    return mpilib.of(build).direct_argv(build, binary)


def core_error_line(stderr: str) -> str:
    """The core's own error line from a stderr (SimGrid adds lines of its own after it)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    mine = [ln for ln in lines if ": error: " in ln]
    return (mine or lines or [""])[-1]


_registry_memo: dict[tuple, dict] = {}


def list_registry(build: Build) -> dict:
    """The names the core accepts (timers, ops, schemes, ...), without starting MPI. What a binary
    lists never changes: it is kept per binary (path, inode, size, mtime) in this process and in the
    build cache, so that a campaign does not start the core once more per configuration (about 45 ms
    each here)."""
    binary = build.binary()
    try:
        st = os.stat(binary)
        key = (binary, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key in _registry_memo:
        return _registry_memo[key]
    path = _index_path("registry", *map(str, key)) if key else None
    cached = _read_json(path) if path else None
    if isinstance(cached, dict) and cached.get("key") == list(map(str, key)) and isinstance(cached.get("registry"), dict):
        _registry_memo[key] = cached["registry"]
        return cached["registry"]
    r = _run([*direct_argv(build, binary), "--list"])
    if r.returncode != 0:
        raise MtError(f"'{binary} --list' failed: {core_error_line(r.stderr)}")
    reg = json.loads(r.stdout)
    if key:
        _registry_memo[key] = reg
        with contextlib.suppress(OSError):
            _write_json(path, {"key": list(map(str, key)), "registry": reg})
    return reg
