"""The report of a 2-configuration campaign rendered by headless Chromium at two widths: no two
text boxes overlap (bounding boxes from the DOM after layout) and figures use the page width;
screenshots are kept under $MPITEMPO_ARTIFACTS (default ci-artifacts/) for people to look at."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpitempo.io.synthetic import make_campaign

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")

# After layout: every element whose own text is visible, its box, and the pairs that overlap.
PROBE = """<script>
window.addEventListener('load', () => {
  const els = [...document.querySelectorAll('h1,h2,h3,p,th,td,caption,li,span,b')]
    .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()));
  const boxes = [];
  for (const e of els) {
    const r = document.createRange(); r.selectNodeContents(e);
    for (const b of r.getClientRects()) if (b.width > 0 && b.height > 0) boxes.push({e, b});
  }
  const over = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], c = boxes[j];
    if (a.e.contains(c.e) || c.e.contains(a.e)) continue;
    const w = Math.min(a.b.right, c.b.right) - Math.max(a.b.left, c.b.left);
    const h = Math.min(a.b.bottom, c.b.bottom) - Math.max(a.b.top, c.b.top);
    if (w > 1 && h > 1) over.push([a.e.textContent.slice(0, 40), c.e.textContent.slice(0, 40)]);
  }
  const imgs = [...document.images].map(i => i.getBoundingClientRect().width);
  const body = document.body.getBoundingClientRect().width;
  const res = {boxes: boxes.length, overlaps: over.slice(0, 20), imgs, body,
               scrollW: document.documentElement.scrollWidth, viewW: window.innerWidth};
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre);
});
</script>"""


def chromium(*args, timeout=180):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("render")
    camp = make_campaign(d / "camp", {"mpich": 1.0, "ompi": 1.06}, runs=6, ops=("allreduce", "bcast"),
                         msizes=(8, 64, 1024, 8192, 65536, 1 << 20), nrep=60, seed=5)
    out = d / "report.html"
    assert main(["report", str(camp), "-o", str(out)]) == 0
    return out


def test_report_reads_as_a_person_needs(report):
    doc = report.read_text()
    assert "<h2>Headline</h2>" in doc and doc.index("<h2>Headline</h2>") < doc.index("<h2>Factors</h2>")
    assert "<p class='headline'><b>allreduce</b>: " in doc and "<p class='headline'><b>bcast</b>: " in doc
    # diagnostics for every configuration, not only the first
    for cfg in ("mpich", "ompi"):
        for op in ("allreduce", "bcast"):
            assert f"<h3>{cfg} {op} 8</h3>" in doc and f"<h3>{cfg} {op} 1M</h3>" in doc


@pytest.mark.parametrize("width", [1400, 800])
def test_report_renders_without_overlapping_text(report, width, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    r = chromium(f"--window-size={width},2000", "--dump-dom", probe.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    if m is None:
        pytest.skip(f"chromium did not render here: {r.stderr.strip()[-300:]}")
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert res["boxes"] > 100
    assert res["overlaps"] == [], res["overlaps"]
    assert res["scrollW"] <= res["viewW"] + 1           # nothing wider than the window
    assert min(res["imgs"]) >= 0.9 * res["body"] - 50   # figures use the page width
    art = Path(os.environ.get("MPITEMPO_ARTIFACTS", ROOT / "ci-artifacts")) / "report-screenshots"
    art.mkdir(parents=True, exist_ok=True)
    shot = art / f"report-{width}px.png"
    r = chromium(f"--window-size={width},3000", f"--screenshot={shot}", report.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000, r.stderr[-300:]


def _overlapping_labels(fig) -> list:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [(t.get_text(), t.get_window_extent(r)) for t in axis.get_ticklabels(which="both")
                     if t.get_visible() and t.get_text()]
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    if boxes[i][1].overlaps(boxes[j][1]):
                        out.append((boxes[i][0], boxes[j][0]))
    return out


def test_plots_have_human_sizes_and_no_overlapping_ticks():
    import numpy as np

    from mpitempo.present import plots

    sizes = [8 << k for k in range(18)]                      # 8 .. 1M: 18 sizes
    series = {c: {"msize": sizes, "median": [1e-6 * (1 + m / 1e4) * f for m in sizes],
                  "lo": [1e-6 * (1 + m / 1e4) * f * 0.98 for m in sizes],
                  "hi": [1e-6 * (1 + m / 1e4) * f * 1.02 for m in sizes]} for c, f in (("A", 1.0), ("B", 1.1))}
    fig = plots.runtime_vs_size("allreduce", series)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[0] == "8" and "2K" in labels and "512K" in labels and len(labels) <= 10
    assert all(re.fullmatch(r"\d+[KMG]?", t) for t in labels)
    assert _overlapping_labels(fig) == []
    rng = np.random.default_rng(1)
    groups = {m: {c: rng.normal(1e-6 * (1 + m / 1e4), 1e-8, 8) for c in ("A", "B")} for m in sizes}
    fig = plots.strip_per_size("allreduce", groups, {m: "**" for m in sizes})
    assert _overlapping_labels(fig) == []
    assert [t.get_text().split("\n")[0] for t in fig.axes[0].get_xticklabels()][:3] == ["8", "32", "128"]   # 18 sizes: every other one labelled
    x = np.concatenate([rng.normal(1e-6, 1e-8, 990), np.full(10, 1e-3)])
    fig = plots.histogram_kde(x, "t")
    assert "above the 99th percentile" in fig.axes[0].get_title() and fig.axes[0].get_xlim()[1] < 100


@pytest.fixture(scope="module")
def report_rates(tmp_path_factory):
    """A report with bandwidth and overlap ops: its bandwidth and overlap plots render like the rest."""
    from mpitempo.cli import main
    from mpitempo.io.synthetic import op_info

    def em(cfg, i, op, m):
        d = op_info(op, m, 2)
        if op.endswith("_overlap"):
            d["overlap"] = {"compute_target_s": 2e-6, "compute_median_s": 2e-6, "compute_min_s": 2e-6,
                            "compute_max_s": 2e-6, "pure_s": 1e-6, "compute_calls": 100}
        return d

    d = tmp_path_factory.mktemp("render-rates")
    camp = make_campaign(d / "camp", {"mpich": 1.0, "ompi": 1.06}, runs=6,
                         ops=("bw", "mbw_mr", "iallreduce", "iallreduce_overlap"),
                         msizes=(8, 64, 1024, 8192, 65536, 1 << 20), nrep=30, seed=5, exp_meta=em)
    out = d / "report.html"
    assert main(["report", str(camp), "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("width", [1400, 800])
def test_report_with_bandwidth_and_overlap_renders_without_overlapping_text(report_rates, width, tmp_path):
    doc = report_rates.read_text()
    assert "<h2>Bandwidth vs message size</h2>" in doc and "<h2>Overlap vs message size</h2>" in doc
    probe = tmp_path / "probe.html"
    probe.write_text(doc.replace("</body>", PROBE + "</body>"))
    r = chromium(f"--window-size={width},2000", "--dump-dom", probe.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    if m is None:
        pytest.skip(f"chromium did not render here: {r.stderr.strip()[-300:]}")
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert res["overlaps"] == [], res["overlaps"]
    assert res["scrollW"] <= res["viewW"] + 1
    assert min(res["imgs"]) >= 0.9 * res["body"] - 50


def test_rate_plots_have_no_overlapping_ticks():
    from mpitempo.present import plots

    sizes = [8 << k for k in range(18)]
    bw = {c: {"msize": sizes, "median": [f * m / (1e-6 + m * 1e-10) / 1e6 for m in sizes],
              "lo": [0.95 * f * m / (1e-6 + m * 1e-10) / 1e6 for m in sizes],
              "hi": [1.05 * f * m / (1e-6 + m * 1e-10) / 1e6 for m in sizes]} for c, f in (("A", 1.0), ("B", 1.2))}
    fig = plots.bandwidth_vs_size("bw", bw)
    assert len(fig.axes[0].get_xticklabels()) <= 10 and _overlapping_labels(fig) == []
    ov = {"A": {"msize": sizes, "median": [min(99.0, 10.0 + 5 * k) for k in range(18)],
                "lo": [5.0] * 18, "hi": [100.0] * 18}}
    fig = plots.overlap_vs_size("iallreduce_overlap", ov)
    assert fig.axes[0].get_ylim() == (0.0, 100.0) and _overlapping_labels(fig) == []
