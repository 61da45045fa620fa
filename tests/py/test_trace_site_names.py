"""Call sites of a trace (mpitempo.analysis.trace_sites) and the wait states per site
(mpitempo.stats.waitstates) on synthetic inputs with known answers; a sites.tsv from someone else
is read, never obeyed."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mpitempo.analysis import trace_sites as ts
from mpitempo.errors import MtError
from mpitempo.stats import waitstates as ws

from test_trace_waitstates import events


def write_sites(d: Path, lines: list[str]) -> None:
    (d / "sites.tsv").write_text("\t".join(ts.HEADER) + "\n" + "".join(x + "\n" for x in lines))


def test_per_site_splits_the_waits_of_one_call():
    rows = [{"rank": 1, "call": "send", "kind": "send", "t0": 0.30, "t1": 0.31, "peer": 0, "tag": 1},
            {"rank": 0, "call": "recv", "kind": "recv", "t0": 0.10, "t1": 0.32, "peer": 1, "recv_tag": 1},
            {"rank": 1, "call": "send", "kind": "send", "t0": 1.50, "t1": 1.51, "peer": 0, "tag": 1},
            {"rank": 0, "call": "recv", "kind": "recv", "t0": 1.00, "t1": 1.52, "peer": 1, "recv_tag": 1}]
    ev = events(rows)
    # rows are sorted by rank then time: rank 0's two receives first
    ev["site_label"] = np.asarray(["f (a.c:1)", "g (a.c:2)", "", ""], dtype=object)
    r = ws.analyse(ev)
    sites = r["late_sender"]["per_site"]
    assert list(sites) == ["g (a.c:2)", "f (a.c:1)"]   # largest first
    assert sites["f (a.c:1)"]["total_s"] == pytest.approx(0.2) and sites["f (a.c:1)"]["count"] == 1
    assert sites["g (a.c:2)"]["total_s"] == pytest.approx(0.5) and sites["g (a.c:2)"]["per_rank_s"][0] == pytest.approx(0.5)
    assert sites["g (a.c:2)"]["call"] == "recv"
    rows_t = ws.site_rows(r)
    assert rows_t[0][:4] == ["late_sender", "g (a.c:2)", "recv", 1] and rows_t[0][4] == pytest.approx(500.0)
    # without labels every wait is at an unknown site, the totals unchanged
    del ev["site_label"]
    r2 = ws.analyse(ev)
    assert list(r2["late_sender"]["per_site"]) == ["(unknown site)"]
    assert r2["late_sender"]["total_s"] == pytest.approx(r["late_sender"]["total_s"])


@pytest.mark.skipif(shutil.which("addr2line") is None or shutil.which("cc") is None,
                    reason="needs a C compiler and addr2line (binutils)")
@pytest.mark.parametrize("pie", [True, False])
def test_resolve_names_function_and_line(tmp_path, pie):
    src = tmp_path / "s.c"
    src.write_text("int g(int x);\n__attribute__((noinline)) int g(int x) { return x + 1; }\n"
                   "int main(void)\n{\n    return g(41) - 42;\n}\n")
    exe = tmp_path / "s"
    subprocess.run(["cc", "-g", "-O1", "-fPIE" if pie else "-fno-pie", "-pie" if pie else "-no-pie", "-o", str(exe),
                    str(src)], check=True)
    # the return address of the call of g in main: the byte after the call instruction
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True).stdout
    if not dis:
        pytest.skip("objdump not available")
    lines = dis.split("<main>:", 1)[1].split("\n\n", 1)[0].splitlines()
    k = next(i for i, ln in enumerate(lines) if "call" in ln and "<g>" in ln)
    ret = int(lines[k + 1].split(":")[0].strip(), 16)
    # a PIE executable loads at another address on each rank; a fixed-address one at its own
    base0, base1 = (0x55550000, 0x55560000) if pie else (0x400000, 0x400000)
    a0, a1 = (ret + base0, ret + base1) if pie else (ret, ret)
    write_sites(tmp_path, [f"0\t{a0:x}\t{exe}\t{base0:x}\t\t0", f"1\t{a1:x}\t{exe}\t{base1:x}\t\t0"])
    labels, info = ts.resolve(tmp_path, np.asarray([0, 1, 0]), np.asarray([f"{a0:x}", f"{a1:x}", "0"], dtype=object))
    assert labels[0] == labels[1] == "main (s.c:5)" and labels[2] == ""   # one site on both ranks
    assert info["main (s.c:5)"]["line"] == 5 and info["main (s.c:5)"]["function"] == "main"


def test_hostile_sites_file(tmp_path):
    (tmp_path / "sites.tsv").write_text("not\ta\theader\n")
    with pytest.raises(MtError, match="not a call-site table"):
        ts.read_sites(tmp_path)
    write_sites(tmp_path, ["0\tzz\t/bin/true\t0\t\t0"])
    with pytest.raises(MtError, match=r"sites.tsv:2: not a call-site line"):
        ts.read_sites(tmp_path)
    # an object that is not a regular file is refused, never read (test_hostile_traces.py); a symbol
    # with control characters is kept as data (the console escapes it)
    write_sites(tmp_path, ["0\t1010\t/dev/zero\t1000\tevil\x1b[2J\t1000"])
    with pytest.raises(MtError, match="which is a character device"):
        ts.resolve(tmp_path, np.asarray([0]), np.asarray(["1010"], dtype=object))
    (tmp_path / "zero").write_bytes(b"not an ELF file")
    write_sites(tmp_path, [f"0\t1010\t{tmp_path / 'zero'}\t1000\tevil\x1b[2J\t1000"])
    labels, info = ts.resolve(tmp_path, np.asarray([0]), np.asarray(["1010"], dtype=object))
    assert labels[0] == "evil\x1b[2J+0x10 (zero+0x10)"
    from mpitempo.safe_text import safe

    assert "\x1b" not in safe(labels[0])
    # an address missing from the table: its offset, no name
    labels, _ = ts.resolve(tmp_path, np.asarray([0]), np.asarray(["2020"], dtype=object))
    assert labels[0] == "?+0x2020"
    # no sites.tsv (a partial trace, an older tracer): no site
    (tmp_path / "sites.tsv").unlink()
    labels, _ = ts.resolve(tmp_path, np.asarray([0]), np.asarray(["1010"], dtype=object))
    assert labels[0] == ""
