"""`mpitempo tune` rows that keep the default still show the best alternative (gain, CI, Holm p), and
the core-placement strata notes name the algorithm and are folded into one line per (op, size, np)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mpitempo.io.synthetic import sample_runtimes, write_run


def _probe(rtt):
    return {"core_latency": {"before": {"ranks": [0, 1], "rounds": 2000, "rtt_median_s": rtt},
                             "after": {"ranks": [0, 1], "rounds": 2000, "rtt_median_s": rtt}}}


def _campaign(root: Path, factors: dict[str, dict[int, float]], runs=10, probes=None, seed=0) -> Path:
    """A tune campaign: config -> {msize: runtime factor}; probes: run index -> core-to-core probe (s)."""
    rng = np.random.default_rng(seed)
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "t"\nkind = "tune"\n')
    for i in range(runs):
        for cfg, per in factors.items():
            sizes = sorted(per)
            far = probes is not None and probes(i, cfg) > 300e-9
            op = np.repeat("allreduce", 50 * len(sizes))
            ms = np.repeat(np.array(sizes, dtype=np.int64), 50)
            rt = np.concatenate([sample_runtimes(rng, 50, 1e-6 * (1 + m / 1024) * per[m] * (2.0 if far else 1.0)
                                                 * np.exp(rng.normal(0, 0.01))) for m in sizes])
            write_run(root, f"{cfg}-{i:03d}", cfg, i, op, ms, rt,
                      meta=_probe(probes(i, cfg)) if probes is not None else None)
    return root


def test_default_kept_rows_show_the_best_alternative(tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide

    root = _campaign(tmp_path / "c", {"default": {8: 1.0, 1024: 1.0},
                                      "allreduce.ring": {8: 0.97, 1024: 1.3},   # 3%: below --min-gain
                                      "allreduce.rd": {8: 1.2, 1024: 0.6}})
    dec = decide(open_campaign(root), min_gain_pct=5.0)
    r8 = next(r for r in dec.rows if r["msize"] == 8)
    r1k = next(r for r in dec.rows if r["msize"] == 1024)
    assert r8["chosen"] == "default" and r1k["chosen"] == "rd"
    alt = r8["alternative"]
    assert alt["algorithm"] == "ring" and 0 < alt["gain_pct"] < 5
    assert alt["gain_ci_lo_pct"] < alt["gain_pct"] < alt["gain_ci_hi_pct"]
    assert alt["p_holm"] is not None and 0 <= alt["p_holm"] <= 1
    # the Holm p is that of ring among the algorithms tried at 8 B
    cand = next(c for c in dec.candidates if c["msize"] == 8 and c["algorithm"] == "ring")
    assert alt["p_holm"] == cand["p_holm"] and alt["gain_pct"] == cand["gain_pct"]
    assert "alternative" not in r1k           # a chosen algorithm is the row's own gain


def test_alternative_in_terminal_and_report(tmp_path, capsys):
    from mpitempo.present.tune import print_rows, report_text

    rows = [{"op": "allreduce", "msize": 8, "nprocs": 2, "chosen": "default", "median_default_s": 1e-6,
             "median_chosen_s": 1e-6, "gain_pct": 0.0, "p_value": None, "why_default": "fastest other: ring",
             "alternative": {"algorithm": "ring", "gain_pct": 3.1, "gain_ci_lo_pct": -1.2, "gain_ci_hi_pct": 7.0,
                             "p_holm": 0.31, "median_s": 0.97e-6}},
            {"op": "allreduce", "msize": 1024, "nprocs": 2, "chosen": "rd", "median_default_s": 2e-6,
             "median_chosen_s": 1.2e-6, "gain_pct": 40.0, "gain_ci_lo_pct": 35.0, "gain_ci_hi_pct": 44.0,
             "p_value": 0.001}]
    print_rows(rows, "t")
    out = capsys.readouterr().out
    line8 = next(ln for ln in out.splitlines() if ln.lstrip().startswith("allreduce") and " 8 " in ln)
    assert "best other: ring" in out and "(+3.1% [-1.2, +7.0])" in line8 and "(0.31)" in line8
    assert "those of the best" in out and "named in 'chosen'" in out
    text = report_text({"library": "mpich", "discovery": "x", "method": "y", "alpha": 0.05, "min_gain_pct": 5,
                        "rows": rows, "settings_file": "s", "settings": {}})
    l8 = next(ln for ln in text.splitlines() if ln.startswith("allreduce") and ln.split()[1] == "8")
    assert "best other: ring +3.1% [-1.2, +7.0] (Holm p=0.31)" in l8


def test_strata_notes_folded_per_size_and_named(tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide

    # every configuration's runs alternate near / distant cores (the distant ones 2x slower)
    root = _campaign(tmp_path / "c", {"default": {8: 1.0, 64: 1.0}, "allreduce.ring": {8: 1.0, 64: 1.0},
                                      "allreduce.rd": {8: 1.0, 64: 1.0}},
                     probes=lambda i, cfg: 470e-9 if i % 3 == 0 else 110e-9)
    dec = decide(open_campaign(root), min_gain_pct=5.0)
    strata_notes = [n for n in dec.notes if "core-to-core latency probe" in n]
    assert len(strata_notes) == 2                                  # one per (op, size, np), not per algorithm
    n8 = next(n for n in strata_notes if n.startswith("allreduce 8 np=2"))
    assert "allreduce.ring vs default" in n8 and "allreduce.rd vs default" in n8
    assert "110 ns" in n8 and "470 ns" in n8 and "van Elteren" in n8


def test_compare_folds_strata_into_one_line(tmp_path):
    from mpitempo.analysis.comparison import core_strata_notes

    def row(b, runs_a, runs_b):
        return {"op": "allreduce", "msize": 8, "nprocs": 2, "a": "default", "b": b,
                "strata": [{"core_rtt_s": 110e-9, "runs_a": runs_a[0], "runs_b": runs_b[0], "delta_pct": 1.0,
                            "p_value": 0.5},
                           {"core_rtt_s": 470e-9, "runs_a": runs_a[1], "runs_b": runs_b[1], "delta_pct": None,
                            "p_value": None}],
                "stratified": {"p_value": 0.4, "significant": False, "strata": 1}}
    other = dict(row("x", (5, 5), (5, 5)), msize=64)
    notes = core_strata_notes([row("ring", (5, 5), (5, 5)), row("rd", (9, 1), (2, 8)), other])
    assert len(notes) == 2
    assert notes[0].count(" vs default: ") == 2 and "ring vs default" in notes[0] and "rd vs default" in notes[0]
    assert "different shares" in notes[0] and notes[0].index("ring vs") < notes[0].index("rd vs")
    assert notes[1].startswith("allreduce 64 np=2: ")
    assert json.dumps(notes)            # plain strings


def test_report_html_folds_strata_per_size(cli, tmp_path):
    """The HTML report of a tune campaign: one strata note per (op, size, np), naming each algorithm;
    the flags cell lists the most severe flag first."""
    root = _campaign(tmp_path / "c", {"default": {8: 1.0}, "allreduce.ring": {8: 1.0}, "allreduce.rd": {8: 1.0}},
                     probes=lambda i, cfg: 470e-9 if i % 3 == 0 else 110e-9)
    out = tmp_path / "r.html"
    code, _, err = cli("report", root, "-o", out)
    assert code == 0, err
    html = out.read_text()
    notes = [ln for ln in html.split("<p class='note'>") if "strata (core placement;" in ln]
    assert len(notes) == 1 and html.count("strata (core placement;") == 1
    # the report compares with its first configuration: each of the others is named
    assert "allreduce.ring vs allreduce.rd" in notes[0] and "default vs allreduce.rd" in notes[0]
    assert "class='flag-mixed' title='mixed'>" in html
