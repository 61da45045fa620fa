"""One message-size grammar: the C core (mpitempo-bench --check-args, which parses without MPI) reads
every case of tests/size_cases.py as the Python parser does (tests/py/test_sizes_shared.py)."""
from __future__ import annotations

import json
import subprocess

import pytest

from size_cases import SIZE_CASES

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("text,want", SIZE_CASES)
def test_core_reads_sizes_as_python_does(build, text, want):
    r = subprocess.run([build.binary(), "--check-args", "--ops", "allreduce", "--msizes", text], capture_output=True,
                       text=True)
    if want is None:
        assert r.returncode == 2 and "invalid" in r.stderr, (r.returncode, r.stderr)
    else:
        assert r.returncode == 0, r.stderr
        assert [e["msize"] for e in json.loads(r.stdout)["experiments"]] == want
