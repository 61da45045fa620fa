"""One message-size grammar: the Python parser reads every case of tests/size_cases.py as the C core
does (tests/mpi/test_sizes_shared_mpi.py runs the same table through mpitempo-bench), as `run --msizes`
reads them (0 B allowed)."""
from __future__ import annotations

import pytest

from mpitempo.errors import MtError
from mpitempo.io.sizes import parse_sizes
from size_cases import SIZE_CASES


@pytest.mark.parametrize("text,want", SIZE_CASES)
def test_python_reads_sizes_as_the_core_does(text, want):
    if want is None:
        with pytest.raises(MtError, match=r"^invalid (size|msizes)"):
            parse_sizes(text, allow_zero=True)
    else:
        assert parse_sizes(text, allow_zero=True) == want
