"""The MPI libraries mpitempo knows (docs/design.md, "The MPI library"): one module per library
(openmpi, mpich, smpi) implementing the contract of :class:`mpitempo.mpilib.base.MpiLib`. Code outside
this package asks ``of(build)`` what the library does and never compares library names
(tests/py/test_mpilib_switches.py)."""
from __future__ import annotations

from mpitempo.mpilib import mpich, openmpi, smpi
from mpitempo.mpilib.base import MpiLib

# Detection order: SimGrid's smpirun first (it names the MPI it imitates), then Open MPI, then MPICH.
LIBRARIES: tuple[MpiLib, ...] = (smpi.LIB, openmpi.LIB, mpich.LIB)
UNKNOWN = MpiLib()
NAMES = tuple(lib.name for lib in LIBRARIES)


def of(what) -> MpiLib:
    """The library of a Build (its ``flavour``) or of a flavour name; the unknown library otherwise."""
    name = what if isinstance(what, str) else getattr(what, "flavour", None)
    return next((lib for lib in LIBRARIES if lib.name == name), UNKNOWN)


def detect(version_text: str) -> str:
    """The flavour name of an `mpiexec --version` output ("unknown" when no library recognises it)."""
    low = version_text.lower()
    return next((lib.name for lib in LIBRARIES if lib.recognises(low)), UNKNOWN.name)


def launcher_of(mpicc: str) -> str | None:
    """The launcher of a compiler wrapper that a library knows by its name (smpicc: smpirun), or None."""
    for lib in LIBRARIES:
        found = lib.launcher_of(mpicc)
        if found:
            return found
    return None


def lib_globs() -> tuple[str, ...]:
    """The library files of every known MPI (the fingerprint watches them; in this order, which the
    fingerprints of cached cores were computed with)."""
    return tuple(dict.fromkeys(g for lib in (openmpi.LIB, mpich.LIB, smpi.LIB) for g in lib.lib_globs))


def known_bug(output: str, argv: list[str]) -> str | None:
    """A known bug of any MPI library that a failed mpirun's output shows, or None."""
    return next((b for lib in LIBRARIES if (b := lib.known_bug(output, argv))), None)
