"""Traces on a full disk and hostile call-site tables (issue 32, classes 2 and 3): `trace run` stages the
trace in a directory beside -o and renames it whole; a trace's sites.tsv that names a FIFO (or another
non-regular file) as an object file is refused, never read. Rows of docs/reliability.md ("Received
files: the trust boundary") name these tests. Real traces of examples/trace/amg_like.c on 1-2 ranks."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def amg(build, tmp_path_factory):
    exe = tmp_path_factory.mktemp("amg") / "amg_like"
    subprocess.run([build.mpicc, "-O2", "-g", "-o", str(exe), str(ROOT / "examples/trace/amg_like.c")], check=True)
    return exe


def _fill(d: Path) -> None:
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\1" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_trace_on_a_full_disk_leaves_nothing_under_its_name(cli, small_fs, amg):
    """Fault: `trace run -o DIR` on a file system that fills while the tracer writes (a 256 KiB tmpfs;
    before: DIR kept a half-written events.csv/OTF2 archive under the final names and the error blamed
    the application). The tracer writes into a staging directory beside DIR; a trace that is not whole
    is removed, the error says the tracer could not finish writing it, and DIR does not exist."""
    out = small_fs / "tr"
    code, so, err = cli("trace", "run", "-n", "2", "-o", out, "--", amg, "--iters", "600")
    assert code != 0, err
    last = err.strip().splitlines()[-1]
    assert "the tracer could not finish writing it" in last and f"nothing was left under '{out}'" in last, err
    assert not out.exists()
    assert [p.name for p in small_fs.iterdir()] == [], list(small_fs.iterdir())


def test_a_trace_is_staged_and_renamed(cli, tmp_path, amg):
    """The whole trace appears under -o at once (an empty -o is replaced), with launch.json naming the
    staging directory it was written in; nothing is left beside it."""
    out = tmp_path / "tr"
    out.mkdir()
    code, so, err = cli("trace", "run", "-n", "2", "-o", out, "--json", "--", amg, "--iters", "20")
    assert code == 0, err
    assert (out / "trace.json").is_file() and (out / "events.csv").is_file()
    import json

    rec = json.loads((out / "launch.json").read_text())
    assert rec["staged_as"].startswith(".mpitempo-trace-staging-tr.")
    assert rec["staged_as"] in " ".join(rec["argv"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tr"]


def test_an_unfinished_otf2_archive_is_removed(tmp_path):
    """A trace whose OTF2 archive the tracer could not finish (trace.json "otf2": null) keeps its other
    files; the half-written archive is not left under the final name."""
    from mpitempo.cmd_trace import _trace_whole

    (tmp_path / "otf2" / "traces").mkdir(parents=True)
    (tmp_path / "otf2" / "traces.otf2").write_text("half")
    (tmp_path / "trace.json").write_text('{"otf2": null}')
    assert _trace_whole(tmp_path) and not (tmp_path / "otf2").exists()
    (tmp_path / "otf2").mkdir()
    (tmp_path / "trace.json").write_text('{"otf2": "otf2/traces.otf2"}')
    assert _trace_whole(tmp_path) and (tmp_path / "otf2").is_dir()


@pytest.fixture(scope="module")
def a_trace(cli_module, tmp_path_factory, amg):
    out = tmp_path_factory.mktemp("t") / "tr"
    code, so, err = cli_module("trace", "run", "-n", "2", "-o", out, "--json", "--", amg, "--iters", "20")
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def cli_module():
    from mpitempo.cli import main

    def run(*args):
        import contextlib
        import io

        o, e = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            code = main([str(a) for a in args])
        return code, o.getvalue(), e.getvalue()

    return run


@pytest.mark.parametrize("what", ["fifo", "socket", "dir", "dev"])
def test_sites_naming_a_special_file_are_refused_without_blocking(what, a_trace, tmp_path):
    """Hostile input: a received trace whose sites.tsv names a FIFO (or a socket, directory, device) as
    the object file of its call sites (before: a FIFO there could block `trace show`; now refused in
    one line naming it, before anything is read). Run in a subprocess with a timeout: a block fails."""
    import shutil
    import socket
    import sys

    tr = tmp_path / "tr"
    shutil.copytree(a_trace, tr)
    special = {"fifo": tmp_path / "obj.so", "socket": tmp_path / "s.so", "dir": tmp_path / "d.so",
               "dev": Path("/dev/zero")}[what]
    if what == "fifo":
        os.mkfifo(special)
    elif what == "socket":
        s = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            s.bind(special.name)
        finally:
            os.chdir(cwd)
    elif what == "dir":
        special.mkdir()
    lines = (tr / "sites.tsv").read_text().splitlines()
    assert len(lines) > 1, "the trace has no call sites"
    rows = [ln.split("\t") for ln in lines[1:]]
    for r in rows:
        r[2] = str(special)
    (tr / "sites.tsv").write_text("\n".join([lines[0], *["\t".join(r) for r in rows]]) + "\n")
    p = subprocess.run([sys.executable, "-m", "mpitempo.cli", "trace", "show", str(tr)], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, COLUMNS="200"))
    kind = {"fifo": "a FIFO", "socket": "a socket", "dir": "a directory", "dev": "a character device"}[what]
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and f"'{special}', which is {kind}" in p.stderr and "regular files" in p.stderr, \
        p.stderr


def test_sites_of_a_regular_object_are_still_named(a_trace, cli_module):
    """The object is handed to addr2line as the file already opened and checked (/proc/self/fd/N): the
    call sites of amg_like (built with -g) are still named by function and line."""
    import json

    code, so, err = cli_module("trace", "show", a_trace, "--json")
    assert code == 0, err
    res = json.loads(so)
    text = json.dumps(res)
    assert "amg_like.c:" in text, text[:2000]
