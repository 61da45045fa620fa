#!/usr/bin/env bash
# The wheel as a user gets it (make test-wheel; CI runs it after `make test`):
#   1. build the wheel from this checkout and check it carries the C sources
#      (mpitempo/_csrc: CMakeLists.txt, src/, params/) and no tests or benchmarks;
#   2. install it with the mpich wheel into a fresh venv;
#   3. from a directory outside the checkout, with a fresh build cache and PATH
#      cleared of the checkout: `mpitempo build` must compile the core from the
#      wheel's _csrc and say so on first use (and print nothing once cached),
#      then a short real campaign and its summary.
# Fails on the first thing that goes wrong. KEEP=1 keeps the work directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/mpitempo-wheel.XXXXXX")
cleanup() { if [ -n "${KEEP:-}" ]; then echo "test-wheel: kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
say() { echo "test-wheel: $*"; }

say "building the wheel"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
"$work/venv/bin/pip" wheel -q --no-deps -w "$work/dist" "$here"
whl=$(ls "$work"/dist/mpitempo-*.whl)
"$work/venv/bin/python" - "$whl" "$here" <<'PY'
import sys, zipfile
from pathlib import Path
names = zipfile.ZipFile(sys.argv[1]).namelist()
root = Path(sys.argv[2])
csrc = [n for n in names if n.startswith("mpitempo/_csrc/")]
want = ["mpitempo/_csrc/CMakeLists.txt"] + [
    "mpitempo/_csrc/" + str(p.relative_to(root)) for d in ("src", "params") if (root / d).is_dir()
    for p in sorted((root / d).rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
missing = sorted(set(want) - set(names))
stray = [n for n in names if n.split("/")[0] in ("tests", "bench") or "/_csrc/tests/" in n or "/_csrc/bench/" in n]
print(f"test-wheel: {Path(sys.argv[1]).name}: {len(names)} files, {len(csrc)} of them C sources in mpitempo/_csrc")
if missing or stray:
    sys.exit(f"test-wheel: wheel is wrong: missing {missing[:10]}, should not contain {stray[:10]}")
PY

say "installing it into a fresh venv with the mpich wheel"
"$work/venv/bin/pip" install -q "$whl" mpich

# Nothing from the checkout: its directories off PATH, no mpitempo variables.
clean_path="$work/venv/bin"
IFS=: read -ra parts <<< "$PATH"
for p in "${parts[@]}"; do
  case "$p" in "$here"|"$here"/*|"") ;; *) clean_path="$clean_path:$p" ;; esac
done
run() { env -u MPITEMPO_SOURCE -u MPITEMPO_MPICC -u MPITEMPO_CORE -u PYTHONPATH -u VIRTUAL_ENV \
          MPITEMPO_CACHE="$work/cache" PATH="$clean_path" "$@"; }
mkdir -p "$work/run"
cd "$work/run"

say "mpitempo build (first use)"
run mpitempo build --json > build.json 2> build.err || { cat build.err; exit 1; }
cat build.err
run python - "$work" <<'PY'
import json, sys
b = json.load(open("build.json"))
work = sys.argv[1]
print(f"test-wheel: core {b['origin']} from {b['source']} (fingerprint {b['fingerprint']}, {b['flavour']})")
assert b["origin"] == "built", b
assert b["source"].startswith(work + "/venv/") and b["source"].endswith("/mpitempo/_csrc"), \
    f"core not built from the wheel's _csrc: {b['source']}"
assert b["bindir"].startswith(work + "/cache/"), b["bindir"]
assert "building the core for" in open("build.err").read() and "(first use)" in open("build.err").read()
PY
run mpitempo build > build2.out 2> build2.err
cat build2.out
if [ -s build2.err ]; then echo "test-wheel: a cached build printed on stderr:"; cat build2.err; exit 1; fi

say "a short campaign"
run mpitempo run --ops allreduce --msizes 8 --nrep 20 --mpiruns 2 -n 2 -o camp
run mpitempo summary camp
say "passed"
