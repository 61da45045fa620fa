# Copyright the mpitempo developers. SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame check that runs an mpitempo campaign and reports, for every (op, message size), the
median of the per-mpirun medians and the bounds of its 95% confidence interval as ReFrame
performance variables (µs), with references that ReFrame checks.

    reframe -C integrations/reframe/settings.py -c integrations/reframe/mpitempo_check.py -r \
            --performance-report

Variables (set with -S name=value): ops, msizes, nrep, mpiruns, np, launcher (an mpitempo
--launcher value; empty = mpitempo's default), references ("allreduce/8=1.5,bcast/1K=3": µs) and
tolerance (0.5: a median more than 50% above its reference fails; faster never fails).
Performance variables are named "<op>/<size>" (median), "<op>/<size>/ci_lo" and ".../ci_hi".

Bandwidth and non-blocking ops are also read the way ReFrame reads OSU Micro-Benchmarks output:
the check exports the campaign as OSU text (`mpitempo export --osu osu`) and takes, with ReFrame's
sanity functions, "<op>/<size>/MBps" from osu_bw / osu_bibw / osu_mbw_mr / osu_put_bw / osu_get_bw
(``extractsingle(rf'^{size}\s+(\S+)', ...)``, the pattern of hpctestlib's osu_bw check) and
"<op>/<size>/overall" and ".../overlap" from osu_i<coll> (Overall(us) and Overlap(%) of the
i<coll>_overlap op, e.g. ops=iallreduce,iallreduce_overlap). -S campaign=DIR reads a campaign
that was already run (e.g. by a batch job) instead of running one.
"""
import glob
import os
import json

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, run_after, run_before, sanity_function, variable


def _size(n: int) -> str:
    for unit, mul in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mul and n % mul == 0:
            return f"{n // mul}{unit}"
    return str(n)


@rfm.simple_test
class mpitempo_campaign(rfm.RunOnlyRegressionTest):
    descr = "mpitempo campaign: medians over mpiruns with 95% confidence intervals"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    ops = variable(str, value="allreduce,bcast")
    msizes = variable(str, value="8,1K")
    nrep = variable(int, value=100)
    mpiruns = variable(int, value=6)
    np = variable(int, value=2)
    launcher = variable(str, value="")
    references = variable(str, value="")
    tolerance = variable(float, value=0.5)
    campaign = variable(str, value="")
    num_tasks = 1          # mpitempo starts the mpiruns itself
    local = True
    executable = "mpitempo"
    tags = {"mpi", "benchmark"}
    keep_files = ["summary.json", "campaign/campaign.toml", "campaign/system-check.json", "osu"]

    @run_before("run")
    def set_campaign(self):
        run = ["run", "--ops", self.ops, "--msizes", self.msizes, "--nrep", str(self.nrep),
               "--mpiruns", str(self.mpiruns), "-n", str(self.np), "-o", "campaign", "--quiet", "--no-summary"]
        if self.launcher:
            run += ["--launcher", f"'{self.launcher}'"]
        src = "campaign"
        if self.campaign:
            src, run = f"'{self.campaign}'", ["--version"]
        self.executable_opts = run
        self.postrun_cmds = [f"mpitempo summary {src} --json > summary.json",
                             f"mpitempo export {src} --osu osu > /dev/null || true"]

    def _osu(self, row, stem):
        """The OSU file of a summary row (one configuration and nprocs), or None."""
        name = f"{stem}.*np{row['nprocs']}.txt"
        files = sorted(glob.glob(os.path.join(self.stagedir, "osu", name)))
        cfg = [f for f in files if os.path.basename(f).startswith(f"{stem}.{row['config']}.")]
        return (cfg or files or [None])[0]

    def _rows(self):
        with open(f"{self.stagedir}/summary.json") as f:
            return json.load(f)

    @sanity_function
    def validate(self):
        return sn.all([sn.assert_eq(self.job.exitcode, 0),
                       sn.assert_found(r"\[", "summary.json"),
                       sn.assert_not_found(r"error", self.stderr)])

    @run_before("performance")
    def set_perf_variables(self):
        self.perf_variables = {}
        for r in self._rows():
            if r.get("median_s") is None:
                continue
            key = f"{r['op']}/{_size(r['msize'])}"
            ci = r.get("median_ci") or {}
            self.perf_variables[key] = sn.make_performance_function(sn.defer(r["median_s"] * 1e6), "us")
            if ci.get("lo_s") is not None:
                self.perf_variables[f"{key}/ci_lo"] = sn.make_performance_function(sn.defer(ci["lo_s"] * 1e6), "us")
                self.perf_variables[f"{key}/ci_hi"] = sn.make_performance_function(sn.defer(ci["hi_s"] * 1e6), "us")
            self._osu_variables(r, key)
        refs = {}
        for item in filter(None, (x.strip() for x in self.references.split(","))):
            name, _, value = item.partition("=")
            refs[name.strip()] = (float(value), None, self.tolerance, "us")
        if refs:
            self.reference = {"*": refs}

    def _osu_variables(self, r, key):
        """MB/s of the bandwidth ops and Overall / Overlap of the non-blocking ops, read from the OSU
        export with ReFrame's sanity functions."""
        size = r["msize"]
        if r.get("bandwidth_MBps") and r["op"] in ("bw", "bibw", "mbw_mr", "put_bw", "get_bw"):
            f = self._osu(r, f"osu_{r['op']}")
            if f:
                self.perf_variables[f"{key}/MBps"] = sn.make_performance_function(
                    sn.extractsingle(rf"^{size}\s+(\S+)", f, 1, float), "MB/s")
        if r["op"].endswith("_overlap") and r.get("overlap_pct"):
            base = r["op"][:-len("_overlap")]
            f = self._osu(r, f"osu_{base}")
            if f:
                k = f"{base}/{_size(size)}"
                lead = rf"^{size}\s+" if base != "ibarrier" else r"^\s+"
                self.perf_variables[f"{k}/overall"] = sn.make_performance_function(
                    sn.extractsingle(lead + r"(\S+)\s+\S+\s+\S+\s+\S+$", f, 1, float), "us")
                self.perf_variables[f"{k}/overlap"] = sn.make_performance_function(
                    sn.extractsingle(lead + r"\S+\s+\S+\s+\S+\s+(\S+)$", f, 1, float), "%")
