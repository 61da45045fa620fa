#!/usr/bin/env python3
"""Measure: `mpitempo barrier` on the 4-fake-host cluster (network namespaces, TCP between
hosts, tests/netns/cluster.py), 2 ranks per host: LogP on 8 ranks, the algorithms on
--procs (default 2,4,8; Hydra's block mapping puts ranks 2k, 2k+1 on host k). Predicted vs
measured as `mpitempo barrier` prints it. 8 ranks on this 2-core machine are oversubscribed:
the numbers are flagged so and are not performance numbers of a real cluster.
usage: bench/barrier_netns.py [-o DIR] [--mpiruns N] [--procs 2,4,8] [extra mpitempo barrier flags]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE.parent / "tests" / "netns"))

import cluster as nc  # noqa: E402

from mpitempo.build import ensure_build  # noqa: E402

LAUNCH = """#!/usr/bin/env python3
# launcher template for mpitempo: {{np}} {{cmd}} -> MPICH Hydra over the fake hosts
import json, os, shlex, sys
argv = json.loads({argv!r})
np_, cmd = sys.argv[1], sys.argv[2:]
words = " ".join(shlex.quote(a) for a in cmd)
argv = [a.replace("@@NP@@", np_).replace("@@CMD@@", words) for a in argv]
env = dict(os.environ, UCX_TLS="tcp", FI_PROVIDER="tcp")
os.execvpe(argv[0], argv, env)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--outdir", default=None)
    ap.add_argument("--mpiruns", default="3")
    ap.add_argument("--procs", default="2,4,8")
    a, extra = ap.parse_known_args()
    why = nc.unavailable(time_namespaces=False)
    if why:
        print(f"cannot build the fake-host cluster here: {why}", file=sys.stderr)
        return 2
    b = ensure_build()
    if b.flavour != "mpich":
        print("the fake-host launcher is written for MPICH Hydra", file=sys.stderr)
        return 2
    out = a.outdir or tempfile.mkdtemp(prefix="mt-barrier-netns-") + "/bar"
    with nc.Cluster(4) as c:
        argv = c.mpiexec_argv(b.mpiexec, 2, ["@@CMD@@"])
        argv = [x.replace(" -n 8 ", " -n @@NP@@ ") for x in argv]
        script = Path(tempfile.mkdtemp(prefix="mt-launch-")) / "launch.py"
        script.write_text(LAUNCH.format(argv=json.dumps(argv)))
        script.chmod(0o755)
        cmd = ["mpitempo", "barrier", "-n", "8", "--procs", a.procs, "--mpiruns", a.mpiruns,
               "--launcher", f"{script} {{np}} {{cmd}}", "-o", out, *extra]
        print("+ " + " ".join(cmd), file=sys.stderr)
        r = subprocess.run(cmd)
    print(f"load average at the end: {os.getloadavg()}; campaign: {out}", file=sys.stderr)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
