"""Reliability: every bad input is a one-line error before anything starts; damaged data is refused.

Each case of CASES is one row of the table in docs/reliability.md (test_docs_table_matches_tests
checks that every row names a test that exists and that every case has its row). A case runs
`mpitempo ARGS` in-process in an empty working directory and requires: a non-zero exit, exactly one
line on stderr that starts with "mpitempo" and holds the expected text, no traceback, and no file
or directory left behind that was not there before (nothing is created before the checks pass).
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# id -> (files to write {name: text}, argv, expected text in the one-line error)
# "{camp}" in argv is a sealed synthetic campaign (meta.json records the digests of its data files),
# "{camp}:MUTATION" one damaged by the named mutation in MUTATIONS first.
CASES = {
    # -- campaign files (TOML) -----------------------------------------------------------------------
    "toml-env-string": ({"c.toml": 'env = "X=1"\n'}, ["run", "c.toml", "-o", "out"], "invalid env 'X=1': expected a table"),
    "toml-config-env-string": ({"c.toml": '[[config]]\nname = "a"\nenv = "X=1"\n'}, ["run", "c.toml", "-o", "out"],
                               "invalid env in [[config]] 'a'"),
    "toml-mpicc-number": ({"c.toml": "mpicc = 42\n"}, ["run", "c.toml", "-o", "out"], "invalid mpicc 42: expected a string"),
    "toml-launcher-number": ({"c.toml": "launcher = 5\n"}, ["run", "c.toml", "-o", "out"], "invalid launcher 5"),
    "toml-env-name-equals": ({"c.toml": 'env = { "A=B" = "1" }\n'}, ["run", "c.toml", "-o", "out"],
                             "invalid environment variable name 'A=B'"),
    "toml-env-name-nul": ({"c.toml": 'env = { "A\\u0000B" = "1" }\n'}, ["run", "c.toml", "-o", "out"],
                          "invalid environment variable name"),
    "toml-env-value-nul": ({"c.toml": 'env = { A = "x\\u0000y" }\n'}, ["run", "c.toml", "-o", "out"],
                           "invalid value of env A"),
    "toml-env-value-table": ({"c.toml": "env = { A = { b = 1 } }\n"}, ["run", "c.toml", "-o", "out"],
                             "invalid value of env A"),
    "toml-description-number": ({"c.toml": '[[config]]\nname = "a"\ndescription = 3\n'}, ["run", "c.toml", "-o", "out"],
                                "invalid description in [[config]] 'a' 3"),
    "toml-config-name-number": ({"c.toml": "[[config]]\nname = 7\n"}, ["run", "c.toml", "-o", "out"],
                                "invalid name of [[config]] #1 7"),
    "toml-np-duplicate": ({"c.toml": "np = [2, 2]\n"}, ["run", "c.toml", "-o", "out"], "invalid np [2, 2]: 2 is listed twice"),
    "toml-np-empty": ({"c.toml": "np = []\n"}, ["run", "c.toml", "-o", "out"], "invalid np []"),
    "toml-np-zero": ({"c.toml": "np = 0\n"}, ["run", "c.toml", "-o", "out"], "invalid np 0"),
    "toml-np-word": ({"c.toml": 'np = "two"\n'}, ["run", "c.toml", "-o", "out"], "invalid np 'two'"),
    "toml-mpiruns-zero": ({"c.toml": "mpiruns = 0\n"}, ["run", "c.toml", "-o", "out"], "invalid mpiruns 0"),
    "toml-timeout-negative": ({"c.toml": "timeout_s = -1\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s '-1'"),
    "toml-timeout-inf": ({"c.toml": "timeout_s = inf\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s 'inf'"),
    "toml-timeout-nan": ({"c.toml": "timeout_s = nan\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s 'nan'"),
    "toml-seed-negative": ({"c.toml": "seed = -1\n"}, ["run", "c.toml", "-o", "out"], "invalid seed -1"),
    "toml-order-unknown": ({"c.toml": 'order = "sideways"\n'}, ["run", "c.toml", "-o", "out"], "invalid order 'sideways'"),
    "toml-unknown-key": ({"c.toml": "nrepp = 5\n"}, ["run", "c.toml", "-o", "out"], "unknown key 'nrepp'"),
    "toml-config-unknown-key": ({"c.toml": '[[config]]\nname = "a"\nmpiccc = "x"\n'}, ["run", "c.toml", "-o", "out"],
                                "unknown key 'mpiccc' in [[config]] #1"),
    "toml-config-no-name": ({"c.toml": "[[config]]\nnrep = 5\n"}, ["run", "c.toml", "-o", "out"], "[[config]] #1 has no name"),
    "toml-config-duplicate": ({"c.toml": '[[config]]\nname = "a"\n[[config]]\nname = "a"\n'},
                              ["run", "c.toml", "-o", "out"], "duplicate configuration name 'a'"),
    "toml-config-bad-name": ({"c.toml": '[[config]]\nname = "a b"\n'}, ["run", "c.toml", "-o", "out"],
                             "invalid configuration name 'a b'"),
    "toml-config-not-table": ({"c.toml": 'config = "x"\n'}, ["run", "c.toml", "-o", "out"], "invalid 'config'"),
    "toml-syntax": ({"c.toml": "ops = [allreduce\n"}, ["run", "c.toml", "-o", "out"], "is not valid TOML"),
    "toml-missing": ({}, ["run", "nope.toml", "-o", "out"], "campaign file 'nope.toml' not found"),
    "toml-kind-unknown": ({"c.toml": 'kind = "nope"\n'}, ["run", "c.toml", "-o", "out"], "unknown kind 'nope'"),
    "toml-name-bad": ({"c.toml": 'name = "a b"\n'}, ["run", "c.toml", "-o", "out"], "invalid campaign name 'a b'"),
    "toml-nrep-word": ({"c.toml": 'nrep = "many"\n'}, ["run", "c.toml", "-o", "out"], "invalid nrep 'many'"),
    "toml-window-no-unit": ({"c.toml": 'scheme = "window"\nwindow = 20\n'}, ["run", "c.toml", "-o", "out"],
                            "invalid window '20': give a unit"),
    # -- strict TOML types: a convertible value of another type is refused, not converted (io/toml_schema.py)
    "toml-seed-string": ({"c.toml": 'seed = "7"\n'}, ["run", "c.toml", "-o", "out"],
                         "campaign file 'c.toml': invalid seed '7': expected an integer, not a string"),
    "toml-mpiruns-string": ({"c.toml": 'mpiruns = "2"\n'}, ["run", "c.toml", "-o", "out"],
                            "campaign file 'c.toml': invalid mpiruns '2': expected an integer, not a string"),
    "toml-name-number": ({"c.toml": "name = 3\n"}, ["run", "c.toml", "-o", "out"],
                         "campaign file 'c.toml': invalid name 3: expected a string, not an integer"),
    "toml-nrep-float": ({"c.toml": "nrep = 2.0\n"}, ["run", "c.toml", "-o", "out"],
                        "campaign file 'c.toml': invalid nrep 2.0: expected an integer, not a float"),
    "toml-timeout-string": ({"c.toml": 'timeout_s = "10"\n'}, ["run", "c.toml", "-o", "out"],
                            "campaign file 'c.toml': invalid timeout_s '10': expected a number"),
    "toml-bool-as-int": ({"c.toml": "per_rank = 1\n"}, ["run", "c.toml", "-o", "out"],
                         "campaign file 'c.toml': invalid per_rank 1: expected true or false, not an integer"),
    "toml-bool-as-string": ({"c.toml": '[[config]]\nname = "a"\ntimestamps = "true"\n'}, ["run", "c.toml", "-o", "out"],
                            "invalid timestamps in [[config]] 'a' 'true': expected true or false, not a string"),
    "toml-ops-one-string": ({"c.toml": 'ops = "allreduce,bcast"\n'}, ["run", "c.toml", "-o", "out"],
                            "invalid ops 'allreduce,bcast': expected an array of strings, not a string"),
    "toml-np-strings": ({"c.toml": 'np = ["2", "4"]\n'}, ["run", "c.toml", "-o", "out"],
                        "invalid np ['2', '4']: expected an integer or an array of integers, not an array holding a string"),
    "toml-warmup-string": ({"c.toml": 'warmup = "5"\n'}, ["run", "c.toml", "-o", "out"],
                           "invalid warmup '5': expected an integer or the string \"auto\""),
    "toml-value-escaped": ({"c.toml": 'seed = "7\\u001b[2J"\n'}, ["run", "c.toml", "-o", "out"],
                           "invalid seed '7\\x1b[2J': expected an integer"),
    "toml-config-single-table": ({"c.toml": '[config]\nname = "a"\n'}, ["run", "c.toml", "-o", "out"],
                                 "invalid 'config' { name = 'a' }: expected one or more [[config]] tables, not a table"),
    "toml-key-twice": ({"c.toml": "nrep = 5\nnrep = 6\n"}, ["run", "c.toml", "-o", "out"],
                       "campaign file 'c.toml' is not valid TOML"),
    "tree-file-k-string": ({"t.toml": 'shape = "kary"\nk = "2"\n'}, ["tree", "--tree", "t.toml", "-o", "out"],
                           "tree file 't.toml': invalid k '2': expected an integer, not a string"),
    # -- flags of run --------------------------------------------------------------------------------
    "flag-window-no-unit": ({}, ["run", "--scheme", "window", "--window", "20", "-o", "out"],
                            "invalid --window '20': give a unit (s, ms, us or ns), e.g. 20s or 20us"),
    "flag-window-zero": ({}, ["run", "--scheme", "window", "--window", "0s", "-o", "out"], "invalid --window '0s'"),
    "flag-time-slice-zero": ({}, ["run", "--scheme", "roundtime", "--time-slice", "0", "-o", "out"],
                             "invalid --time-slice '0'"),
    "flag-time-slice-inf": ({}, ["run", "--scheme", "roundtime", "--time-slice", "infs", "-o", "out"],
                            "invalid --time-slice 'infs'"),
    "flag-resync-age-negative": ({}, ["run", "--sync", "hca3", "--resync-age", "-1s", "-o", "out"],
                                 "invalid --resync-age '-1s'"),
    "flag-rt-slack-inf": ({}, ["run", "--rt-slack", "inf", "-o", "out"], "invalid --rt-slack inf"),
    "flag-rt-slack-nan": ({}, ["run", "--rt-slack", "nan", "-o", "out"], "invalid --rt-slack nan"),
    "flag-delay-overflow": ({}, ["run", "--ops", "delay", "--delay", "1e10s", "-o", "out"],
                            "invalid --delay '1e10s': longer than the largest duration"),
    "flag-delay-no-unit": ({}, ["run", "--ops", "delay", "--delay", "20", "-o", "out"], "invalid --delay '20': give a unit"),
    "flag-delay-over-an-hour": ({}, ["run", "--ops", "delay", "--delay", "2h", "-o", "out"], "invalid --delay '2h'"),
    "plan-delay-exceeds-timeout": ({}, ["run", "--ops", "delay", "--delay", "100s", "--timeout", "60", "-o", "out"],
                                   "needs at least 2000 s (1 delay experiment(s) x 20 calls of 100 s at the fewest the stopping "
                                   "rule allows), more than "
                                   "the timeout of 60 s"),
    "plan-roundtime-exceeds-timeout": ({}, ["run", "--scheme", "roundtime", "--time-slice", "10s", "--msizes", "8-1K",
                                            "--timeout", "30", "-o", "out"],
                                       "needs at least 80 s (8 experiments x time slice 10 s)"),
    "plan-window-exceeds-timeout": ({}, ["run", "--scheme", "window", "--window", "1s", "--nrep", "100", "--msizes", "8",
                                         "--timeout", "50", "-o", "out"], "needs at least 100 s (1 experiments x 100 windows"),
    "flag-timeout-zero": ({}, ["run", "--timeout", "0", "-o", "out"], "invalid timeout_s '0.0'"),
    "flag-timeout-inf": ({}, ["run", "--timeout", "inf", "-o", "out"], "invalid timeout_s 'inf'"),
    "core-sync-unknown": ({}, ["run", "--sync", "hca99", "-o", "out"], "unknown clock-sync algorithm 'hca99'"),
    "core-sync-malformed": ({}, ["run", "--sync", "hca3:fitpts=", "-o", "out"], "hca3:fitpts="),
    "core-sync-hier-levels": ({}, ["run", "--sync", "h2:hca3", "-o", "out"], "h2:hca3"),
    "core-barrier-skew-rank": ({}, ["run", "--barrier-skew", "5:20us", "-o", "out"], "rank 5 is not in the job"),
    "core-msize-too-large": ({}, ["run", "--msizes", "16G", "-o", "out"], "too large for an int count"),
    "core-msize-below-datatype": ({}, ["run", "--msizes", "2", "--datatype", "double", "-o", "out"],
                                  "smaller than one element of datatype 'double'"),
    "core-cache-unknown": ({}, ["run", "--cache", "tepid", "-o", "out"], "tepid"),
    "core-sim-offsets": ({}, ["run", "--sim-offsets", "x", "-o", "out"], "invalid simulated clock offsets 'x'"),
    "flag-op-unknown": ({}, ["run", "--ops", "allreduce,foo", "-o", "out"], "unknown op 'foo'"),
    "flag-op-twice": ({}, ["run", "--ops", "bcast,bcast", "-o", "out"], "listed twice"),
    "flag-scheme-unknown": ({}, ["run", "--scheme", "nosuch", "-o", "out"], "unknown scheme 'nosuch'"),
    "flag-timer-unknown": ({}, ["run", "--timer", "sundial", "-o", "out"], "unknown timer 'sundial'"),
    "flag-root-outside-job": ({}, ["run", "--ops", "bcast", "--root", "5", "-o", "out"], "invalid root 5"),
    "flag-np-zero": ({}, ["run", "-n", "0", "-o", "out"], "0"),
    "flag-mpiruns-zero": ({}, ["run", "--mpiruns", "0", "-o", "out"], "invalid mpiruns 0"),
    "flag-msizes-zero": ({}, ["run", "--msizes", "0,8,0", "-o", "out"], "0 B is listed twice"),
    "flag-op-needs-two-ranks": ({}, ["run", "--ops", "exscan", "-n", "1", "-o", "out"], "needs at least 2 ranks"),
    "launcher-no-cmd": ({}, ["run", "--launcher", "mpiexec -n {np}", "-o", "out"], "placeholder {cmd}"),
    "launcher-not-found": ({}, ["run", "--launcher", "nosuchprog {cmd}", "-o", "out"], "launcher 'nosuchprog' not found"),
    "launcher-unbalanced-quote": ({}, ["run", "--launcher", "mpiexec -n {np} 'x {cmd}", "-o", "out"],
                                  "No closing quotation"),
    "sbatch-args-unbalanced-quote": ({}, ["run", "--sbatch", "--sbatch-args", "'-t 1", "-o", "out"],
                                     "invalid --sbatch-args ''-t 1': No closing quotation"),
    "outdir-in-proc": ({}, ["run", "-o", "/proc/mpitempo-x"], "cannot create the campaign directory '/proc/mpitempo-x'"),
    "outdir-below-file": ({"file.txt": "x"}, ["run", "-o", "file.txt/sub"],
                          "cannot create the campaign directory 'file.txt/sub': Not a directory"),
    "outdir-exists": ({"out/keep": "x"}, ["run", "-o", "out"], "already exists"),
    "resume-and-outdir": ({}, ["run", "--resume", "a", "-o", "out"], "give either -o/--outdir or --resume"),
    "resume-not-campaign": ({"d/x": "x"}, ["run", "--resume", "d"], "no campaign.toml"),
    "run-option-of-other-kind": ({"c.toml": 'kind = "clocks"\n'}, ["run", "c.toml", "--nrep", "5", "-o", "out"],
                                 "does not apply to a campaign of kind 'clocks'"),
    # -- other commands that launch ----------------------------------------------------------------
    "imbalance-variants-typo": ({}, ["imbalance", "--variants", "atuo", "-o", "out"], "did you mean 'auto'?"),
    "imbalance-variants-bad-setting": ({}, ["imbalance", "--variants", "x:NOVALUE", "-o", "out"], "expected VAR=VALUE"),
    "clocks-plot-unwritable": ({}, ["clocks", "--plot", "/proc/mpitempo-x.png", "--algorithms", "skampi"],
                               "cannot write the plot '/proc/mpitempo-x.png'"),
    "clocks-algorithm-unknown": ({}, ["clocks", "--algorithms", "hca99"], "hca99"),
    "clocks-wait-inf": ({}, ["clocks", "--wait", "inf"], "invalid --wait 'inf'"),
    "pingpong-outdir-in-proc": ({}, ["pingpong", "-o", "/proc/mpitempo-x", "--msizes", "8"],
                                "cannot create the campaign directory '/proc/mpitempo-x'"),
    # -- reading campaigns -------------------------------------------------------------------------
    "summary-tukey-k-inf": ({}, ["summary", "--tukey-k", "inf", "{camp}"], "invalid --tukey-k inf"),
    "summary-tukey-k-zero": ({}, ["summary", "--tukey-k", "0", "{camp}"], "invalid --tukey-k 0"),
    "summary-cut-coef-one": ({}, ["summary", "--filter", "cutcoef", "--cut-coef", "1", "{camp}"], "invalid --cut-coef 1"),
    "summary-same-campaign-twice": ({}, ["summary", "{camp}", "{camp}"], "is given twice: its runs would be counted twice"),
    "summary-same-campaign-two-paths": ({}, ["summary", "{camp}", "{camp}/"], "is given twice"),
    "compare-same-campaign-twice": ({}, ["compare", "{camp}", "{camp}"], "is given twice"),
    "report-same-campaign-twice": ({}, ["report", "{camp}", "{camp}", "-o", "r.html"], "is given twice"),
    "summary-not-campaign": ({"d/x": "x"}, ["summary", "d"], "is not a campaign directory"),
    "summary-truncated-at-line": ({}, ["summary", "{camp}:truncate"], "measurements.csv has 11 lines, meta.json records"),
    "summary-header-only": ({}, ["summary", "{camp}:header_only"], "measurements.csv has 1 lines"),
    "summary-edited-value": ({}, ["summary", "{camp}:edit_value"], "has CRC-32"),
    "summary-unsealed-header-only": ({}, ["summary", "{camp}:unsealed_header_only"], "no measurement rows"),
    "summary-nprocs-mismatch": ({}, ["summary", "{camp}:nprocs"], "row(s) have nprocs 3, but its meta.json says 2"),
    "summary-nan-runtime": ({}, ["summary", "--json", "{camp}:nan"], "NaN or infinite runtime_s"),
    "summary-negative-runtime": ({}, ["summary", "{camp}:negative"], "negative runtime_s"),
    "report-nan-runtime": ({}, ["report", "{camp}:nan", "-o", "r.html"], "NaN or infinite runtime_s"),
    "summary-bad-csv-line": ({}, ["summary", "{camp}:bad_line"], "measurements.csv:5:"),
    "summary-meta-not-object": ({}, ["summary", "{camp}:meta_list"], "is not a JSON object"),
    "summary-meta-future-version": ({}, ["summary", "{camp}:meta_future"], "format_version 99"),
    "info-diff-meta-not-json": ({}, ["info", "--diff", "{camp}:meta_garbage"], "is not valid JSON"),
    "export-parquet-unwritable": ({}, ["export", "{camp}", "--parquet", "/proc/mpitempo-x"], "cannot write --parquet"),
    "export-osu-below-file": ({"file.txt": "x"}, ["export", "{camp}", "--osu", "file.txt/x"], "cannot write --osu"),
    "report-output-unwritable": ({}, ["report", "{camp}", "-o", "/proc/mpitempo-x.html"], "cannot write the report"),
    # -- hostile pass A (run/build/info/which) --
    "run-platform-ppn-without-platform": ({}, ["run", "--platform-ppn", "1", "-o", "out"],
                                          "--platform-ppn needs --platform FILE.xml"),
    "toml-platform-ppn-without-platform": ({"c.toml": "platform_ppn = 1\n"}, ["run", "c.toml", "-o", "out"],
                                           "platform_ppn needs platform"),
    "toml-timeout-bool": ({"c.toml": "timeout_s = true\n"}, ["run", "c.toml", "-o", "out"], "invalid timeout_s true: expected a number"),
    "toml-governor-empty": ({"c.toml": 'governor = ""\n'}, ["run", "c.toml", "-o", "out"], "invalid governor ''"),
    "flag-min-valid-above-nrep": ({}, ["run", "--nrep", "3", "--min-valid", "5", "-o", "out"],
                                  "invalid --min-valid 5: more than --nrep 3"),
    "flag-root-above-int": ({}, ["run", "--ops", "bcast", "--root", "2147483648", "-o", "out"],
                            "invalid --root 2147483648: must be an integer >= 0 and <= 2147483647"),
    "campaign-file-device": ({}, ["run", "/dev/null", "-o", "out"], "campaign file '/dev/null' is a device"),
    "info-all-without-diff": ({}, ["info", "--all"], "--all goes with --diff DIR"),
    "info-np-without-check": ({}, ["info", "-n", "4"], "-n/--np goes with --check"),
    "info-timer-reads-without-timers": ({}, ["info", "--timer-reads", "5"], "--timer-reads goes with --timers"),
    "info-check-and-timers": ({}, ["info", "--check", "--timers"], "--check and --timers are two runs of info"),
    "info-diff-and-check": ({}, ["info", "--diff", "{camp}", "--check"], "--check does not go with --diff DIR"),
    "info-timer-reads-above-core": ({}, ["info", "--timers", "--timer-reads", "17179869185"],
                                    "17179869185 is not in the range 1<=x<=17179869184"),
    "which-json-and-path": ({}, ["which", "--json", "--path"], "--json and --path are two forms of the output"),
    "toml-bad-value-under-flag": ({"c.toml": "nrep = true\n"}, ["run", "c.toml", "--nrep", "3", "-o", "out"],
                                  "invalid nrep true: expected an integer"),
    "sbatch-args-without-sbatch": ({}, ["run", "--sbatch-args", "-t 1", "-o", "out"], "--sbatch-args goes with --sbatch"),
    # -- hostile pass C (clocks/drift/pingpong/imbalance/barrier/tree/tune/trace) --
    "clocks-plot-no-suffix": ({}, ["clocks", "--plot", "/dev/null", "--algorithms", "skampi"],
                              "cannot write the plot '/dev/null': give a file name ending in .png, .pdf or .svg"),
    "clocks-plot-unknown-format": ({}, ["clocks", "--plot", "p.txt", "--algorithms", "skampi"],
                                   "cannot write the plot 'p.txt': give a file name ending in .png, .pdf or .svg"),
    "drift-plot-unwritable": ({}, ["drift", "--plot", "/proc/mpitempo-x.png", "--duration", "2s"],
                              "cannot write the plot '/proc/mpitempo-x.png'"),
    "pingpong-pairs-plot-unwritable": ({}, ["pingpong", "--pairs", "all", "--plot", "/proc/mpitempo-x.png"],
                                       "cannot write the plot '/proc/mpitempo-x.png'"),
    "trace-show-plot-unknown-format": ({}, ["trace", "show", "t", "--plot", "g.txt"],
                                       "cannot write the plot 'g.txt': give a file name ending in .png"),
    "trace-show-plot-directory": ({"d/x": "x"}, ["trace", "show", "t", "--plot", "d"],
                                  "cannot write the plot 'd': it is a directory"),
    "trace-run-outdir-in-proc": ({}, ["trace", "run", "-o", "/proc/mpitempo-x", "--", "true"],
                                 "cannot write the trace directory '/proc/mpitempo-x'"),
    "tune-algorithms-empty": ({}, ["tune", "--algorithms", "", "-o", "out"],
                              "invalid --algorithms '': expected OP:NAME[+NAME...][,OP:...]"),
    "tune-ops-empty-item": ({}, ["tune", "--ops", "allreduce,,bcast", "-o", "out"],
                            "invalid --ops 'allreduce,,bcast': an empty item"),
    "tune-predict-empty": ({}, ["tune", "--predict", "", "-o", "out"], "invalid size list ''"),
    "tune-outdir-device": ({}, ["tune", "-o", "/dev/null"],
                           "output directory '/dev/null' already exists and is not a directory"),
    "imbalance-sync-empty": ({}, ["imbalance", "--sync", "", "--variants", "none", "-o", "out"],
                             "invalid sync '': expected a non-empty string"),
    "imbalance-variants-var-twice": ({}, ["imbalance", "--variants", "a:X=1,X=2", "-o", "out"],
                                     "variable X is set twice in variant 'a' of --variants ('1' and '2')"),
    "tree-ncalls-zero": ({}, ["tree", "--ncalls", "0"], "invalid --ncalls 0: must be an integer >= 1"),
    "trace-run-sync-empty": ({}, ["trace", "run", "--sync", "", "-o", "t", "--", "true"], "invalid --sync ''"),
    "clocks-algorithm-twice": ({}, ["clocks", "--algorithms", "hca3,hca3:fitpts=40"],
                               "'hca3' and 'hca3:fitpts=40' are the same spec"),
    "clocks-sync-fitpts-above-limit": ({}, ["clocks", "--algorithms", "hca3:fitpts=1000001"],
                                       "fit points must be an integer >= 2 and <= 1000000"),
    "core-sync-pp-leading-space": ({}, ["run", "--sync", "hca3:pp= 5", "-o", "out"], "invalid pp ' 5'"),
    # -- hostile pass B (summary/compare/report/ingest/export) --
    "summary-meta-link": ({}, ["summary", "{camp}:meta_link"],
                          "refusing to read 'camp-meta_link/runs/A-001/meta.json': it is a symbolic link"),
    "summary-csv-link": ({}, ["summary", "{camp}:csv_link_elsewhere"],
                         "refusing to read 'camp-csv_link_elsewhere/runs/A-001/measurements.csv': it is a symbolic link"),
    "compare-run-dir-link": ({}, ["compare", "{camp}:run_dir_link"],
                             "refusing to read 'camp-run_dir_link/runs/A-001': it is a symbolic link"),
    "summary-meta-fifo": ({}, ["summary", "{camp}:meta_fifo"], "runs/A-001/meta.json': it is a FIFO"),
    "export-csv-fifo": ({}, ["export", "{camp}:csv_fifo", "--osu", "-"], "runs/A-001/measurements.csv': it is a FIFO"),
    "report-toml-dev-zero": ({}, ["report", "{camp}:toml_dev_zero", "-o", "r.html"],
                             "refusing to read 'camp-toml_dev_zero/campaign.toml': it is a symbolic link"),
    "export-op-empty-item": ({}, ["export", "{camp}", "--osu", "-", "--op", "allreduce,,"],
                             "invalid --op 'allreduce,,': an empty item (two commas in a row, or a comma at an end)"),
    "export-config-empty": ({}, ["export", "{camp}", "--imb", "-", "--config", ""],
                            "invalid --config '': give one or more comma-separated items"),
    "export-op-with-parquet-only": ({}, ["export", "{camp}", "--parquet", "pq", "--op", "allreduce"],
                                    "--op 'allreduce' applies to --osu and --imb only"),
    "summary-negative-msize": ({}, ["summary", "{camp}:negative_msize"], "1 row(s) have a negative msize"),
    # -- hostile pass D (damaged data, plot texts) --
    "summary-tukey-k-overflow": ({}, ["summary", "--tukey-k", "1e400", "{camp}"],
                                 "invalid --tukey-k 1e400: must be a finite number > 0"),
    "summary-cut-coef-overflow": ({}, ["summary", "--filter", "cutcoef", "--cut-coef", "1e400", "{camp}"],
                                  "invalid --cut-coef 1e400: must be a finite number > 1"),
    "compare-cut-coef-overflow": ({}, ["compare", "--filter", "cutcoef", "--cut-coef", "1E400", "{camp}"],
                                  "invalid --cut-coef 1E400"),
    "report-tukey-k-underflow": ({}, ["report", "--tukey-k", "1e-400", "{camp}", "-o", "r.html"],
                                 "invalid --tukey-k 1e-400"),
    "export-tukey-k-overflow": ({}, ["export", "{camp}", "--osu", "-", "--tukey-k", "1e999"], "invalid --tukey-k 1e999"),
    "summary-meta-nprocs-zero": ({}, ["summary", "{camp}:meta_nprocs_zero"],
                                 "runs/A-001/meta.json': key 'nprocs' is 0, expected an integer >= 1"),
    "compare-meta-nprocs-negative": ({}, ["compare", "{camp}:meta_nprocs_negative"],
                                     "runs/A-001/meta.json': key 'nprocs' is -2, expected an integer >= 1"),
    "summary-valid-two": ({}, ["summary", "{camp}:valid_two"],
                          "1 row(s) have a valid other than 0 or 1 (the first: camp-valid_two/runs/A-001/measurements.csv:4)"),
    "summary-local-max-nan": ({}, ["summary", "{camp}:local_max_nan"],
                              "1 row(s) have a missing, NaN or infinite local_max_s (the first: "
                              "camp-local_max_nan/runs/A-001/measurements.csv:4)"),
    "report-runtime-huge": ({}, ["report", "{camp}:runtime_huge", "-o", "r.html"],
                            "1 row(s) have a runtime_s above 1e9 s (longer than any mpirun may last) (the first: "
                            "camp-runtime_huge/runs/A-001/measurements.csv:4)"),
    "summary-msize-overflow": ({}, ["summary", "{camp}:msize_overflow"],
                               "runs/A-001/measurements.csv:2: column msize is '99999999999999999999999', outside "
                               "the range of a 64-bit integer"),
    "summary-extra-column": ({}, ["summary", "{camp}:extra_column"],
                             "runs/A-001/measurements.csv:1: header has column 'extra', which this format does not "
                             "have (the columns: op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s)"),
    "compare-columns-swapped": ({}, ["compare", "{camp}:columns_swapped"],
                                "runs/A-001/measurements.csv:1: header has the columns in another order"),
    "ingest-db-dir-missing": ({}, ["ingest", "{camp}", "--db", "nodir/x.duckdb"],
                              "mpitempo: error: cannot write the store --db 'nodir/x.duckdb': 'nodir' does not exist"),
    "ingest-db-not-duckdb": ({"g.duckdb": "garbage\n"}, ["ingest", "{camp}", "--db", "g.duckdb"],
                             "mpitempo: error: cannot open store 'g.duckdb': it is not a DuckDB database file"),
    # -- hostile pass E (barrier/drift/trace/tree inputs) --
    "barrier-procs-empty": ({}, ["barrier", "--procs", "", "-o", "out"],
                            "invalid --procs '': give one or more comma-separated items"),
    "barrier-procs-twice": ({}, ["barrier", "-n", "2", "--procs", "2,2", "-o", "out"],
                            "invalid --procs '2,2': 2 is listed twice"),
    "barrier-algorithms-empty": ({}, ["barrier", "--algorithms", "", "-o", "out"],
                                 "invalid --algorithms '': give one or more comma-separated items"),
    "barrier-logp-msizes-twice": ({}, ["barrier", "--logp-msizes", "1K,1024", "-o", "out"],
                                  "invalid --logp-msizes '1K,1024': 1024 B is listed twice (each size once; more measurements with --logp-nrep)"),
    "toml-logp-msizes-twice": ({"c.toml": 'kind = "logp"\nmsizes = "1K,1K"\n'}, ["run", "c.toml", "-o", "out"],
                               "invalid msizes '1K,1K': 1024 B is listed twice"),
    "drift-window-longer-than-duration": ({}, ["drift", "--windows", "100s", "-o", "out"],
                                          "invalid --windows item '100s': longer than --duration '60s'"),
    "drift-window-all-twice": ({}, ["drift", "--windows", "all,all", "-o", "out"],
                               "invalid --windows 'all,all': a window of 60 s is listed twice"),
    "drift-window-without-samples": ({}, ["drift", "--windows", "10s,0.05s", "-o", "out"],
                                     "invalid --windows item '0.05s': a window must hold at least 3 samples"),
    "drift-windows-empty-item": ({}, ["drift", "--windows", "1s,,all", "-o", "out"],
                                 "invalid --windows '1s,,all': an empty item"),
    "trace-run-outdir-not-empty": ({"t/notes.txt": "the user's notes\n"}, ["trace", "run", "-o", "t", "--", "true"],
                                   "output directory 't' already exists and is not empty; choose a new -o"),
    "core-sync-hier-env-name": ({}, ["run", "--sync", "h[env=A$(id)]:hca3/prop", "-o", "out"],
                                "env=A$(id) is not an environment variable name (allowed: a letter or _, then "
                                "letters, digits and _"),
}


def _seal(run: Path) -> None:
    """Record the digests of a run's data file in its meta.json, as the core does."""
    from mpitempo.io.integrity import digest

    meta = json.loads((run / "meta.json").read_text())
    n, lines, crc = digest(run / "measurements.csv")
    meta["files"] = {"measurements.csv": {"bytes": n, "lines": lines, "crc32": crc}}
    (run / "meta.json").write_text(json.dumps(meta))


def _rewrite_csv(run: Path, fn, seal: bool = True) -> None:
    p = run / "measurements.csv"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(fn(lines)))
    if seal:
        _seal(run)


def _same_length_edit(line: str) -> str:
    """One digit of the runtime changed: same bytes, same lines, another value."""
    parts = line.split(",")
    v = parts[6]
    i = next(k for k, ch in enumerate(v) if ch in "123456789")
    parts[6] = v[:i] + ("2" if v[i] != "2" else "3") + v[i + 1:]
    return ",".join(parts)


def _field(line: str, col: int, value: str) -> str:
    parts = line.rstrip("\n").split(",")
    parts[col] = value
    return ",".join(parts) + "\n"


MUTATIONS = {
    "truncate": lambda r: _rewrite_csv(r, lambda ls: ls[:11], seal=False),
    "header_only": lambda r: _rewrite_csv(r, lambda ls: ls[:1], seal=False),
    "edit_value": lambda r: _rewrite_csv(r, lambda ls: ls[:5] + [_same_length_edit(ls[5])] + ls[6:], seal=False),
    "unsealed_header_only": lambda r: (_rewrite_csv(r, lambda ls: ls[:1], seal=False), _unseal(r)),
    "nprocs": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 2, "3")] + ls[4:]),
    "nan": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 6, "nan")] + ls[4:]),
    "negative": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 6, "-1e-06")] + ls[4:]),
    "bad_line": lambda r: _rewrite_csv(r, lambda ls: ls[:4] + ["allreduce,8,2\n"] + ls[5:]),
    "meta_list": lambda r: (r / "meta.json").write_text("[1, 2]"),
    "meta_future": lambda r: (r / "meta.json").write_text('{"format_version": 99}'),
    "meta_garbage": lambda r: (r / "meta.json").write_bytes(b"{\xff\xfe not json"),
    "meta_link": lambda r: _replace_by_link(r / "meta.json", Path("/etc/passwd")),
    "csv_link_elsewhere": lambda r: _replace_by_link(r / "measurements.csv", _move_out(r / "measurements.csv")),
    "run_dir_link": lambda r: _replace_by_link(r, _move_out(r)),
    "meta_fifo": lambda r: ((r / "meta.json").unlink(), os.mkfifo(r / "meta.json")),
    "csv_fifo": lambda r: ((r / "measurements.csv").unlink(), os.mkfifo(r / "measurements.csv")),
    "toml_dev_zero": lambda r: _replace_by_link(r.parent.parent / "campaign.toml", Path("/dev/zero")),
    "config_alias": lambda r: _set_meta(r, config="A "),   # another configuration, the same file-safe name
    "negative_msize": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 1, "-8")] + ls[4:]),
    "meta_nprocs_zero": lambda r: _set_meta(r, nprocs=0),
    "meta_nprocs_negative": lambda r: _set_meta(r, nprocs=-2),
    "valid_two": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 7, "2")] + ls[4:]),
    "local_max_nan": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 8, "nan")] + ls[4:]),
    "runtime_huge": lambda r: _rewrite_csv(r, lambda ls: ls[:3] + [_field(ls[3], 6, "1e300")] + ls[4:]),
    "msize_overflow": lambda r: _rewrite_csv(r, lambda ls: ls[:1] + [_field(ls[1], 1, "99999999999999999999999")] + ls[2:]),
    "extra_column": lambda r: _rewrite_csv(r, lambda ls: [ls[0].rstrip("\n") + ",extra\n"]
                                           + [x.rstrip("\n") + ",7\n" for x in ls[1:]]),
    "columns_swapped": lambda r: _rewrite_csv(r, lambda ls: [ls[0].replace("op,msize,", "msize,op,", 1)] + ls[1:]),
    "zero_runtimes": lambda r: _rewrite_csv(r, lambda ls: ls[:1] + [_field(_field(x, 6, "0"), 8, "0") for x in ls[1:]]),
}


def _set_meta(run: Path, **keys) -> None:
    meta = json.loads((run / "meta.json").read_text())
    meta.update(keys)
    (run / "meta.json").write_text(json.dumps(meta))


def _move_out(p: Path) -> Path:
    """Move p (a run's file or directory) out of the campaign, next to it: a link can point there."""
    dest = p.parents[2].parent / f"outside-{p.name}"
    shutil.move(p, dest)
    return dest


def _replace_by_link(p: Path, target: Path) -> None:
    if p.exists() and not p.is_dir():
        p.unlink()
    p.symlink_to(target)


def _unseal(run: Path) -> None:
    meta = json.loads((run / "meta.json").read_text())
    meta.pop("files", None)
    (run / "meta.json").write_text(json.dumps(meta))


@pytest.fixture(scope="session")
def sealed_campaign(tmp_path_factory):
    from mpitempo.io.synthetic import make_campaign

    root = make_campaign(tmp_path_factory.mktemp("sealed") / "camp", configs={"A": 1.0}, runs=3,
                         ops=("allreduce",), msizes=(8,), nrep=20)
    for run in sorted((root / "runs").iterdir()):
        _seal(run)
    return root


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, cli, build, tmp_path, monkeypatch, sealed_campaign):
    files, argv, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    args = []
    for a in argv:
        m = re.match(r"^\{camp\}(?::(\w+))?(/?)$", a)
        if m:
            dest = tmp_path / f"camp-{m.group(1) or 'ok'}"
            if not dest.exists():
                shutil.copytree(sealed_campaign, dest)
                if m.group(1):
                    MUTATIONS[m.group(1)](dest / "runs" / "A-001")
            a = str(dest.name) + m.group(2)
        args.append(a)
    before = _listing(tmp_path)
    code, out, err = cli(*args)
    assert code != 0, (out, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("mpitempo"), err
    assert expected in err, err
    assert _listing(tmp_path) == before, "something was created before the error"


# -- the table in docs/reliability.md ------------------------------------------------------------------

def _doc_rows() -> list[list[str]]:
    rows = []
    for line in (ROOT / "docs" / "reliability.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| #") and not line.startswith("|--"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _test_exists(ref: str) -> bool:
    """ref: tests/DIR/FILE.py::NAME or tests/DIR/FILE.py::NAME[param]"""
    m = re.match(r"^`?(tests/[\w/]+\.py)::(\w+)(?:\[([^\]]+)\])?`?$", ref)
    if not m:
        return False
    path = ROOT / m.group(1)
    if not path.exists():
        return False
    text = path.read_text()
    if not re.search(rf"^(async )?def {m.group(2)}\(", text, re.M):
        return False
    if m.group(3) is None:
        return True
    if path.name == "test_reliability.py" and m.group(2) == "test_bad_input":
        return m.group(3) in CASES
    return m.group(3) in text   # a parametrize id or value of that module


def test_docs_table_matches_tests():
    rows = _doc_rows()
    assert len(rows) >= 80, len(rows)
    refs = [r[-1] for r in rows]
    missing = [r for r in refs if not _test_exists(r)]
    assert not missing, f"rows of docs/reliability.md name tests that do not exist: {missing}"
    for case in CASES:
        assert f"`tests/py/test_reliability.py::test_bad_input[{case}]`" in refs, f"no row for case {case}"
    assert len(set(refs)) == len(refs), "two rows name the same test"


def test_srun_launcher_without_slurm(cli, build, tmp_path, monkeypatch):
    """srun is installed but no Slurm controller answers (sinfo fails), outside an allocation: the
    campaign is refused before its directory exists, instead of failing every mpirun."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("srun", "sinfo"):
        (fake / name).write_text("#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("run", "--launcher", "srun", "-o", "out", "--quiet")
    assert code == 2 and err.count("\n") == 1
    assert "launcher 'srun' needs Slurm, but no Slurm controller answers here" in err
    assert not (tmp_path / "out").exists()


# -- hostile pass B: what is written is the output, never what a name or a link says ----------------

def test_report_shows_names_as_text(cli, tmp_path, monkeypatch, sealed_campaign):
    """A configuration name holding matplotlib mathtext ('$\\x$' that does not parse) and ESC: the
    report is written (it failed with a traceback from the plot), the plots show the name as text
    (no warning about glyphs on stderr), the HTML has it escaped."""
    camp = tmp_path / "camp"
    shutil.copytree(sealed_campaign, camp)
    _set_meta(camp / "runs" / "A-001", config="x$\\nosuchcmd{$y\x1b[2J")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("report", camp, "-o", "r.html")
    assert code == 0 and err == "", err
    doc = (tmp_path / "r.html").read_text()
    assert "x$\\nosuchcmd{$y\\x1b[2J" in doc and "\x1b" not in doc


def test_outputs_replace_links_and_keep_devices(cli, tmp_path, monkeypatch, sealed_campaign):
    """An output path that is a link (report -o, a file export writes) is replaced by the new file,
    never written through; a device is written to, never replaced (report -o /dev/full: disk full,
    one line, /dev/full still the device); nothing is left half-written."""
    import stat

    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    (tmp_path / "lnk.html").symlink_to(victim)
    for d, name in (("pq", "runs.parquet"), ("osu", "osu_allreduce.A.np2.txt")):
        (tmp_path / d).mkdir()
        (tmp_path / d / name).symlink_to(victim)
    for args in (["report", sealed_campaign, "-o", "lnk.html"], ["export", sealed_campaign, "--parquet", "pq"],
                 ["export", sealed_campaign, "--osu", "osu"]):
        code, out, err = cli(*args)
        assert code == 0, err
    assert victim.read_text() == "the user's own file\n"
    for p in ("lnk.html", "pq/runs.parquet", "osu/osu_allreduce.A.np2.txt"):
        assert not (tmp_path / p).is_symlink() and (tmp_path / p).stat().st_size > 0, p
    assert not [p for p in tmp_path.rglob("*.tmp")]
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    before = set(os.listdir("/dev"))
    code, out, err = cli("report", sealed_campaign, "-o", "/dev/full")
    assert code == 2 and err.count("\n") == 1, err
    assert "cannot write the report '/dev/full': No space left on device" in err
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)
    assert set(os.listdir("/dev")) == before


def test_export_refuses_two_configurations_in_one_file(cli, tmp_path, monkeypatch, sealed_campaign):
    """Configurations 'A' and 'A ' have the same file-safe name: the second file overwrote the first
    (both counted as written). Refused in one line before any file is written."""
    camp = tmp_path / "camp"
    shutil.copytree(sealed_campaign, camp)
    MUTATIONS["config_alias"](camp / "runs" / "A-001")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("export", camp, "--osu", "osu")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "configurations 'A' and 'A ' would both be written to 'osu_allreduce.A.np2.txt'" in err
    assert not (tmp_path / "osu").exists()


def test_a_store_is_read_past_the_link_checks(cli, tmp_path, monkeypatch, sealed_campaign):
    """The readers' link checks look into campaign directories only: a store (a file) is read as before."""
    monkeypatch.chdir(tmp_path)
    assert cli("ingest", sealed_campaign, "--db", "s.duckdb")[0] == 0
    for args in (["summary", "s.duckdb"], ["summary", "s.duckdb", "--per-run"], ["report", "s.duckdb", "-o", "r.html"]):
        code, out, err = cli(*args)
        assert code == 0 and err == "", (args, err)


# -- hostile pass D: data that may be measured but is no measurement of the op -------------------------

def test_all_zero_runtimes_are_flagged(cli, tmp_path, monkeypatch, sealed_campaign):
    """A run whose runtimes are all 0 (a timer coarser than the op, or an edited file) was summarised as a
    median of 0.000 µs without a word. It is flagged zero_time (ZERO-TIME, a warning naming the run, JSON
    zero_time_runs), not refused: a coarse timer can give it; the report is written without warnings."""
    camp = tmp_path / "camp"
    shutil.copytree(sealed_campaign, camp)
    MUTATIONS["zero_runtimes"](camp / "runs" / "A-001")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("summary", camp)
    assert code == 0, err
    assert "ZERO-TIME" in out and "the median runtime of run(s) 1 is 0 s" in out + err
    code, out, err = cli("summary", camp, "--json")
    row = json.loads(out)[0]
    assert row["flags"][0] == "zero_time" and row["zero_time_runs"] == [1]
    code, out, err = cli("summary", sealed_campaign, "--json")
    assert "zero_time" not in json.loads(out)[0]["flags"]
    code, out, err = cli("report", camp, "-o", "r.html")
    assert code == 0 and "Warning" not in err, err
    assert "ZERO-TIME" in (tmp_path / "r.html").read_text()
