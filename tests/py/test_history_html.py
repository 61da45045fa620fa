"""`mpitempo history --html DIR`: one self-contained page (no file or network it loads), a landing table
of the regressions, one trend plot per series with its change points and the factors changing there; it
renders in headless Chromium (as the report does) with every plot laid out and nothing wider than the page."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpitempo.history.synthetic import make_history

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[2]

PROBE = """<script>
window.addEventListener('load', () => {
  const svgs = [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect())
    .map(r => [Math.round(r.width), Math.round(r.height)]);
  const marks = document.querySelectorAll('svg line[stroke-dasharray]').length;
  const res = {svgs, marks, rows: document.querySelectorAll('table')[0].rows.length,
               scrollW: document.documentElement.scrollWidth, viewW: window.innerWidth};
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("dash")
    nights = make_history(d / "c", nights=12, change_at=7, factor=1.10, loaded=(3, 4), msizes=(8, 1024, 65536))
    db = d / "h.duckdb"
    assert main(["ingest", *map(str, nights), "--db", str(db)]) == 0
    assert main(["history", "--db", str(db), "--html", str(d / "dash")]) == 1   # the regressions: status 1
    return d / "dash" / "index.html"


def test_page_content(page):
    doc = page.read_text()
    assert doc.count("<svg") == 3 and doc.count("class='series'") == 3
    landing = doc[doc.index("<h2>Regressions</h2>"):doc.index("<h2>All change points</h2>")]
    assert landing.count("<tr>") == 1 + 3 and "library: SynthMPI 1.0 -&gt; SynthMPI 1.1" in landing
    assert "2026-10-07 02:00 .. 2026-10-08 02:00" in landing
    # self-contained: nothing loaded from elsewhere
    assert not re.search(r"(src|href)=['\"](?!#)", doc)
    # flagged runs drawn hollow and red, with why
    assert "flagged: shared_cpu" in doc


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_page_renders_in_headless_chromium(page, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--virtual-time-budget=5000", "--window-size=1000,2000", "--dump-dom", probe.as_uri()],
                       capture_output=True, text=True, timeout=180)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert m, r.stderr[-2000:]
    res = json.loads(m.group(1))
    assert len(res["svgs"]) == 3 and all(w > 600 and h > 150 for w, h in res["svgs"]), res
    assert res["marks"] == 3 and res["rows"] == 4          # a change marked in every plot; 3 regressions + header
    assert res["scrollW"] <= res["viewW"], res
    art = Path(os.environ.get("MPITEMPO_ARTIFACTS", ROOT / "ci-artifacts"))
    try:
        art.mkdir(parents=True, exist_ok=True)
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1000,1600", f"--screenshot={art / 'history-dashboard.png'}", page.as_uri()],
                       capture_output=True, timeout=180)
    except OSError:
        pass
