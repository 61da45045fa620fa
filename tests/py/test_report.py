"""The HTML report, the diagnostics behind it, and its rendering in headless Chromium."""
import json
import shutil
import subprocess

import numpy as np
import pytest
from scipy import stats as sps

from mpitempo.stats.diagnostics import clt_means, mpirun_factor, normalized
from mpitempo.io.synthetic import make_campaign

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_normalized_textbook():
    v, d = normalized([2.0, 2.2, 2.1])
    assert v.tolist() == pytest.approx([1.0, 1.1, 1.05]) and d == pytest.approx(0.1)


def test_mpirun_factor_against_scipy():
    rng = np.random.default_rng(1)
    runs = [rng.normal(m, 0.1, 50) for m in (1.0, 1.0, 1.3)]
    r = mpirun_factor(runs)
    h, p = sps.kruskal(*runs)
    assert (r["kruskal_h"], r["kruskal_p"]) == (pytest.approx(h), pytest.approx(p)) and p < 1e-6
    assert r["means"][2] == pytest.approx(runs[2].mean())


def test_clt_means_become_normal():
    rng = np.random.default_rng(2)
    x = rng.lognormal(0, 1.0, 5000)             # strongly right-skewed
    res = clt_means(x, (10, 500), nboot=2000, seed=3)
    assert res[10]["skewness"] > res[500]["skewness"] > -0.3
    assert res[500]["means"].mean() == pytest.approx(x.mean(), rel=0.02)


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("rep")
    camp = make_campaign(d / "camp", {"mpich": 1.0, "ompi": 1.05}, runs=8, msizes=(8, 1024, 65536), nrep=80, seed=4)
    out = d / "report.html"
    assert main(["report", str(camp), "-o", str(out)]) == 0
    return out


def test_report_content(report_file):
    doc = report_file.read_text()
    for s in ("<h2>Factors</h2>", "<h2>Summary</h2>", "Comparison by config (A = mpich)", "Runtime vs message size",
              "Per-mpirun medians per size", "Method diagnostics", "Kruskal", "max relative difference",
              "data:image/png;base64,", "[µs]", "Found "):
        assert s in doc, s
    assert doc.count("<img") >= 8


def test_report_errors(cli, tmp_path):
    (tmp_path / "runs").mkdir()
    code, out, err = cli("report", tmp_path)
    assert code == 2 and "no complete runs" in err and err.count("\n") == 1


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(report_file, tmp_path):
    shot = report_file.parent / "report.png"
    profile = tmp_path / "chromium-profile"
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,2000",
                        report_file.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    # the page is not blank: the screenshot has many distinct colours (text, tables, plots)
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] >= 1900 and img.shape[1] >= 1200
    assert len(np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50
    # DOM check: chromium's own serialisation of the page has the tables
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={profile}", "--dump-dom", report_file.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert "<h2>Summary</h2>" in r.stdout and "mpich" in r.stdout
    shutil.copy(shot, tmp_path / "kept.png")
