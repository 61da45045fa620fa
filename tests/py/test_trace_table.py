"""The tracer's call tables (src/trace/trace_calls.def, trace_count.def, trace_count4.def) against what is built and
documented: docs/trace.md holds the coverage list generated from them, and libmpitempo-trace.so
exports a wrapper for every entry of both and the user region API, nothing else."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_docs_coverage_list_is_the_table():
    from mpitempo.cmd_trace import coverage_markdown

    text = (ROOT / "docs" / "trace.md").read_text()
    m = re.search(r"<!-- coverage:begin[^>]*-->\n(.*?)<!-- coverage:end -->", text, re.S)
    assert m, "docs/trace.md has no coverage markers"
    assert m.group(1) == coverage_markdown(ROOT), \
        "docs/trace.md's coverage list is out of date: paste mpitempo.cmd_trace.coverage_markdown() between the markers"


def test_call_table_parses_every_entry():
    from mpitempo.cmd_trace import call_table

    text = (ROOT / "src/trace/trace_calls.def").read_text()
    n = len(re.findall(r"^TR_CALL\(", text, re.M))
    assert len(call_table(ROOT)) == n >= 90


def test_library_exports_every_wrapper(build):
    from mpitempo.cmd_trace import find_library

    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) not installed")
    lib = find_library(build)
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if ln.split()[-2:-1] == ["T"]}
    recorded = set(re.findall(r'^TR_CALL\(\w+, "(MPI_\w+)"', (ROOT / "src/trace/trace_calls.def").read_text(), re.M))
    counted = {"MPI_" + n for n in re.findall(r"^TR_COUNT\(\w+, (\w+),", (ROOT / "src/trace/trace_count.def").read_text(),
                                               re.M)}
    counted4 = {"MPI_" + n for n in re.findall(r"^TR_COUNT\(\w+, (\w+),",
                                                (ROOT / "src/trace/trace_count4.def").read_text(), re.M)}
    assert not recorded & counted and not (recorded | counted) & counted4
    wanted = recorded | counted | {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "mt_trace_region_begin",
                                   "mt_trace_region_end"}
    assert wanted - exported == set()
    # the MPI-4 table: all of it with an MPI-4 library (MPICH), none of it otherwise (Open MPI 5.0)
    assert counted4 & exported in (set(), counted4)
    # the Fortran bindings' wrappers (trace_fort.c): four manglings of each, MPI-3.1 tables only
    from mpitempo.cmd_trace import fortran_generator

    gen = fortran_generator(ROOT / "src" / "trace")
    _, skipped = gen.generate()
    fnames = {n.lower() for n in recorded | counted if n not in skipped} | {"mpi_init", "mpi_init_thread", "mpi_finalize"}
    fortran = {m for n in fnames for m in gen.names(n)}
    assert fortran - exported == set()
    # the counting wrappers generated at build time from this MPI's mpi.h (gen_count.py), MPI_Pcontrol
    auto_def = Path(lib).parent / "generated" / "trace_count_auto.def"
    auto = {"MPI_" + n for n in re.findall(r"^TR_COUNT\([^,]+, (\w+),", auto_def.read_text(), re.M)}
    assert not auto & (recorded | counted | counted4)
    assert exported - wanted - counted4 - fortran - auto - {"MPI_Pcontrol"} == set()


def test_count_generator_reads_declarations(tmp_path):
    """gen_count.py on a preprocessed header of its own: declarations with attributes, unnamed and
    array parameters, a return type other than int; it leaves out the tables' names, macros and
    variadic functions."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_count", ROOT / "src" / "trace" / "gen_count.py")
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    pre = ("typedef int MPI_Comm; int MPI_Send(const void *buf, int count, int dt, int dest, int tag, MPI_Comm comm) "
           "__attribute__((visibility(\"default\")));\n"
           "int MPI_Foo_c(MPI_Comm, int [], long long count) __attribute__((nonnull(1)));\n"
           "double MPI_Bar(void);\nint MPI_Var(int level, ...);\nint MPI_Mac(int x);\n"
           "MPI_Comm MPI_Baz(const int *ranks[], MPI_Comm *newcomm);")
    out = tmp_path / "auto.def"
    n = g.emit(out, pre, {"MPI_Mac"}, {"MPI_Send"})
    lines = out.read_text().splitlines()[2:]
    assert n == 3 and lines == [
        "TR_COUNT(MPI_Comm, Baz, (const int *ranks[], MPI_Comm *newcomm), (ranks, newcomm))",
        "TR_COUNT(double, Bar, (void), ())",
        "TR_COUNT(int, Foo_c, (MPI_Comm a0, int  a1[], long long count), (a0, a1, count))"]


def test_fortran_wrappers_are_generated_from_the_tables(build):
    """The build's trace_fort.c is what gen_fortran.py makes of trace_calls.def, trace_sig.def and
    trace_count.def now, and trace_sig.def has a signature for exactly the recorded calls."""
    from mpitempo.cmd_trace import find_library, fortran_generator

    gen = fortran_generator(ROOT / "src" / "trace")
    calls, sigs, _ = gen.tables()
    assert {n for _, n in calls} == set(sigs)
    built = Path(find_library(build)).parent / "generated" / "trace_fort.c"
    assert gen.main(["gen_fortran.py", "--check", str(built)]) == 0, f"{built} is not what gen_fortran.py makes now"
    assert not (ROOT / "src" / "trace" / "trace_fort.c").exists(), "trace_fort.c is generated by the build, not committed"
    text, skipped = gen.generate()
    # every recorded call has a wrapper; the counted calls without one are named in the docs list
    for _, n in calls:
        assert f"static void tr_f_{n.lower()}(" in text, n
    assert "MPI_Comm_rank" not in skipped and "MPI_Win_fence" not in skipped and "MPI_Comm_set_name" in skipped


def test_c_wrappers_are_generated_from_the_signature_table(build):
    """The recorded calls' C wrappers are generated at build time from trace_sig.def (gen_wrap.py): the
    build's trace_wrap_gen.c is what the generator makes now, with one wrapper per recorded call, each
    forwarding to the next tool (TR_FWD); no hand-written copy is committed."""
    import importlib.util

    from mpitempo.cmd_trace import find_library

    spec = importlib.util.spec_from_file_location("gen_wrap", ROOT / "src" / "trace" / "gen_wrap.py")
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    text = g.generate()
    built = Path(find_library(build)).parent / "generated" / "trace_wrap_gen.c"
    assert built.read_text() == text, f"{built} is not what gen_wrap.py makes now"
    recorded = re.findall(r'^TR_CALL\(\w+, "(MPI_\w+)"', (ROOT / "src/trace/trace_calls.def").read_text(), re.M)
    for n in recorded:
        assert re.search(rf"^int {n}\(", text, re.M), n
        assert f"TR_FWD({n[4:]}, (" in text, n
    assert "PMPI_" not in text.replace("__typeof__(&PMPI_", ""), "a wrapper calls the library directly"

    assert not (ROOT / "src" / "trace" / "trace_wrap.c").exists()
