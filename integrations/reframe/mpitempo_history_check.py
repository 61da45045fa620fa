# Copyright the mpitempo developers. SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame check whose result is the verdict of `mpitempo history` (docs/history.md): it reads a
history store (the campaigns that earlier jobs ingested) and reports as performance variables the
number of regressions (reference 0: one or more fails the check) and the largest slowdown among them (%).

    reframe -C integrations/reframe/settings.py -c integrations/reframe/mpitempo_history_check.py -r \
            -S db=postgresql://bench@dbhost/mpitempo -S machine=cluster-a -S threshold=3 -S latest=2

Variables (-S name=value): db (a DuckDB file or a postgresql:// URL; required), machine, ops (comma-
separated filters; empty: all), since (a date), threshold (%, default 5), latest (entries, default 5),
html (a directory for the dashboard; empty: none). `mpitempo history --json` is kept as history.json.
"""
import json
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function, variable


@rfm.simple_test
class mpitempo_history(rfm.RunOnlyRegressionTest):
    descr = "mpitempo history: change points and regressions across the campaigns of a store"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    db = variable(str, value="")
    machine = variable(str, value="")
    ops = variable(str, value="")
    since = variable(str, value="")
    threshold = variable(float, value=5.0)
    latest = variable(int, value=5)
    html = variable(str, value="")
    num_tasks = 1
    local = True
    executable = "sh"
    tags = {"benchmark", "history"}
    keep_files = ["history.json"]

    @run_before("run")
    def set_command(self):
        cmd = ["mpitempo", "history", "--db", self.db, "--json", "--threshold", f"{self.threshold:g}",
               "--latest", str(self.latest)]
        for flag, v in (("--machine", self.machine), ("--op", self.ops), ("--since", self.since),
                        ("--html", self.html)):
            if v:
                cmd += [flag, v]
        # status 1 is the verdict (a regression), not a failure of the job: it is checked as performance
        self.executable_opts = ["-c", shlex.quote(" ".join(shlex.quote(c) for c in cmd)
                                                  + " > history.json; echo mpitempo-history-status=$?")]

    @sanity_function
    def validate(self):
        return sn.all([sn.assert_true(self.db, msg="set the store: -S db=FILE|postgresql://..."),
                       sn.assert_found(r"^mpitempo-history-status=[01]$", self.stdout),
                       sn.assert_found(r'"regressions"', "history.json")])

    @run_before("performance")
    def set_perf_variables(self):
        with open(f"{self.stagedir}/history.json") as f:
            res = json.load(f)
        regs = res["regressions"]
        worst = max((c["size_pct"] for c in regs), default=0.0)
        self.perf_variables = {
            "regressions": sn.make_performance_function(sn.defer(len(regs)), "count"),
            "worst_regression": sn.make_performance_function(sn.defer(worst), "%"),
            "change_points": sn.make_performance_function(sn.defer(len(res["changes"])), "count"),
        }
        self.reference = {"*": {"regressions": (0, None, 0, "count")}}
