#!/usr/bin/env python3
"""Benchmark: what `ensure_build()` costs when the core is already built (it runs before every
campaign and every command that starts MPI jobs).

  in-process   median over --calls calls in one process (after a first call)
  first call   the first call in a fresh Python process (as in `mpitempo run`), median over --procs
  parts        the steps of the full fingerprint path, for reference: `mpicc -show`,
               `mpiexec --version`, hashing the source tree

Hold the CPU lock: flock "${TMPDIR:-/tmp}/mpitempo-cpu.lock" python bench/ensure_build.py
Results: bench/results/ensure_build.json (with --out).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIRST = ("import time, mpitempo.build as b; t = time.perf_counter(); b.ensure_build(); "
         "print(time.perf_counter() - t)")


def med_ms(f, n: int) -> dict:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return {"median_ms": round(1e3 * statistics.median(ts), 2), "min_ms": round(1e3 * min(ts), 2),
            "max_ms": round(1e3 * max(ts), 2), "n": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import mpitempo.build as b
    first = b.ensure_build()  # builds if needed; the rest measures the cached path
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "module": b.__file__,
           "mpicc": first.mpicc, "origin": getattr(first, "origin", "built")}
    res["in_process"] = med_ms(b.ensure_build, a.calls)
    fresh = [float(subprocess.run([sys.executable, "-c", FIRST], check=True, capture_output=True,
                                  text=True).stdout) for _ in range(a.procs)]
    res["first_call"] = {"median_ms": round(1e3 * statistics.median(fresh), 2),
                         "min_ms": round(1e3 * min(fresh), 2), "max_ms": round(1e3 * max(fresh), 2),
                         "n": a.procs}
    mpicc = b.find_mpicc()
    root = b.source_root()
    res["parts"] = {"mpicc -show": med_ms(lambda: b.wrapper_show(mpicc), 20),
                    "mpiexec --version": med_ms(lambda: b.detect_flavour(b.find_mpiexec(mpicc)), 20),
                    "hash sources": med_ms(lambda: b._sources_hash(root), 20)}
    print(json.dumps(res, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
