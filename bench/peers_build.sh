#!/bin/sh
# Build the peers mpitempo is compared with, from their public sources, OUTSIDE the repository:
# OSU Micro-Benchmarks 7.4 (configure + make) and Intel MPI Benchmarks 2021.11 (IMB-MPI1, IMB-NBC,
# IMB-RMA, IMB-MPI4 with its Makefile), with the MPI compilers given (default: the mpich wheel's mpicc/mpicxx
# of this worktree's .venv). Their code is never copied into mpitempo.
#
#   sh bench/peers_build.sh DIR            -> DIR/osu-7.4/..., DIR/imb/IMB-MPI1 ...
#
# Sources (first that is set):
#   OSU_TARBALL  a local osu-micro-benchmarks-7.4.tar.gz
#   OSU_GIT      a git URL or local repository holding a pristine 7.4 tree, with OSU_REF (commit/tag)
#   (default)    https://mvapich.cse.ohio-state.edu/download/mvapich/osu-micro-benchmarks-7.4.tar.gz
#   IMB_GIT      git URL or local repository of intel/mpi-benchmarks (default: GitHub), IMB_REF
#                (default IMB-v2021.11)
# Compilers: MPICC, MPICXX (default: .venv/bin/mpicc, .venv/bin/mpicxx next to this script's repo).
# Prints the paths of the binaries at the end; bench/peers_run.sh records their output.
set -eu
DIR=${1:?usage: sh bench/peers_build.sh DIR}
HERE=$(cd "$(dirname "$0")/.." && pwd)
MPICC=${MPICC:-$HERE/.venv/bin/mpicc}
MPICXX=${MPICXX:-$HERE/.venv/bin/mpicxx}
OSU_URL=https://mvapich.cse.ohio-state.edu/download/mvapich/osu-micro-benchmarks-7.4.tar.gz
IMB_GIT=${IMB_GIT:-https://github.com/intel/mpi-benchmarks.git}
IMB_REF=${IMB_REF:-IMB-v2021.11}
JOBS=${JOBS:-2}
for c in "$MPICC" "$MPICXX"; do
    [ -x "$c" ] || { echo "peers_build.sh: no MPI compiler at '$c' (set MPICC/MPICXX, or run make build MPI=wheel)" >&2; exit 2; }
done
case "$DIR" in "$HERE"|"$HERE"/*) echo "peers_build.sh: '$DIR' is inside the repository: build the peers outside it" >&2; exit 2;; esac
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# ---- OSU Micro-Benchmarks 7.4
OSU=$DIR/osu-7.4
if [ ! -d "$OSU/src" ]; then
    rm -rf "$OSU" && mkdir -p "$OSU/src"
    if [ -n "${OSU_TARBALL:-}" ]; then
        tar -xzf "$OSU_TARBALL" -C "$OSU/src" --strip-components=1
    elif [ -n "${OSU_GIT:-}" ]; then
        git clone -q "$OSU_GIT" "$OSU/git"
        git -C "$OSU/git" archive "${OSU_REF:-HEAD}" | tar -x -C "$OSU/src"
        rm -rf "$OSU/git"
    else
        curl -fsSL "$OSU_URL" -o "$OSU/osu.tar.gz"
        tar -xzf "$OSU/osu.tar.gz" -C "$OSU/src" --strip-components=1
    fi
fi
grep -q "PACKAGE_VERSION='7.4'" "$OSU/src/configure" || { echo "peers_build.sh: $OSU/src is not OSU 7.4" >&2; exit 2; }
if [ ! -x "$OSU/src/c/mpi/pt2pt/standard/osu_latency" ]; then
    # sources from git have no usable timestamps: keep automake from re-running itself
    find "$OSU/src" -exec touch -r "$OSU/src/configure" {} +
    (cd "$OSU/src" && ./configure -q CC="$MPICC" CXX="$MPICXX" --prefix="$OSU/install" >"$OSU/configure.log" 2>&1 \
        && make -j"$JOBS" >"$OSU/make.log" 2>&1) \
        || { echo "peers_build.sh: OSU build failed, see $OSU/configure.log, $OSU/make.log" >&2; exit 1; }
fi

# ---- Intel MPI Benchmarks
IMB=$DIR/imb
if [ ! -d "$IMB/src_cpp" ]; then
    rm -rf "$IMB"
    git clone -q "$IMB_GIT" "$IMB"
    git -C "$IMB" checkout -q "$IMB_REF"
fi
for t in MPI1 NBC RMA MPI4; do
    if [ ! -x "$IMB/IMB-$t" ]; then
        # IMB's Makefile adds -Werror; the MPI-4 deprecations of MPICH 5 headers are warnings only
        make -C "$IMB" IMB-$t CC="$MPICC" CXX="$MPICXX" \
            CFLAGS="-Wno-error=deprecated-declarations" CXXFLAGS="-Wno-error=deprecated-declarations" \
            >"$IMB/make-$t.log" 2>&1 || { echo "peers_build.sh: IMB-$t failed, see $IMB/make-$t.log" >&2; exit 1; }
    fi
done

echo "OSU 7.4: $OSU/src/c/mpi (pt2pt/standard, collective/blocking, collective/non_blocking, one-sided)"
echo "IMB $IMB_REF: $IMB/IMB-MPI1 $IMB/IMB-NBC $IMB/IMB-RMA $IMB/IMB-MPI4"
