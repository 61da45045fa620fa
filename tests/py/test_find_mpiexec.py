"""find_mpiexec: the launcher that belongs to an MPI compiler wrapper, also where Debian's
alternatives point mpicc and mpiexec at different MPIs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpitempo.build import find_mpiexec
from mpitempo.errors import MtError


def exe(p: Path) -> Path:
    p.write_text("#!/bin/sh\n")
    p.chmod(0o755)
    return p


def test_suffixed_wrapper_gets_the_suffixed_launcher(tmp_path):
    b = tmp_path / "bin"
    b.mkdir()
    for n in ("mpicc.mpich", "mpiexec.hydra", "orterun", "opal_wrapper"):
        exe(b / n)
    os.symlink("mpiexec.hydra", b / "mpiexec.mpich")
    os.symlink("opal_wrapper", b / "mpicc.openmpi")
    os.symlink("orterun", b / "mpiexec.openmpi")
    alt = tmp_path / "alternatives"
    alt.mkdir()
    os.symlink(b / "mpicc.openmpi", alt / "mpi")          # mpicc -> Open MPI
    os.symlink(b / "mpiexec.openmpi", alt / "mpiexec")    # mpiexec -> Open MPI ...
    os.symlink(alt / "mpi", b / "mpicc")
    os.symlink(alt / "mpiexec", b / "mpiexec")
    assert find_mpiexec(str(b / "mpicc.mpich")) == str(b / "mpiexec.mpich")   # ... but not for MPICH's wrapper
    assert find_mpiexec(str(b / "mpicc.openmpi")) == str(b / "mpiexec.openmpi")
    assert find_mpiexec(str(b / "mpicc")) == str(b / "mpiexec.openmpi")       # through the alternative
    # the alternative switched to MPICH: the unsuffixed mpicc follows it
    (alt / "mpi").unlink()
    os.symlink(b / "mpicc.mpich", alt / "mpi")
    assert find_mpiexec(str(b / "mpicc")) == str(b / "mpiexec.mpich")


def test_plain_wrapper_and_missing_launcher(tmp_path):
    d = tmp_path / "venv" / "bin"
    d.mkdir(parents=True)
    exe(d / "mpicc")
    with pytest.raises(MtError, match="no mpiexec or mpirun next to"):
        find_mpiexec(str(d / "mpicc"))
    exe(d / "mpirun")
    assert find_mpiexec(str(d / "mpicc")) == str(d / "mpirun")
    exe(d / "mpiexec")
    assert find_mpiexec(str(d / "mpicc")) == str(d / "mpiexec")
    # a suffixed wrapper without a suffixed launcher falls back to the one beside it
    exe(d / "mpicc-4.1")
    assert find_mpiexec(str(d / "mpicc-4.1")) == str(d / "mpiexec")
