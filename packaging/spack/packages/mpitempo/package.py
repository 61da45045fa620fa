# Copyright the mpitempo developers. SPDX-License-Identifier: BSD-3-Clause
#
# Spack recipe for the mpitempo C measurement core (mpitempo-bench, mpitempo-clocks,
# mpitempo-pingpong, mpitempo-tree, mpitempo-logp, and mpitempo-watchdog, which the command line puts in
# front of every mpirun), built with CMake against the MPI of the spec;
# also the tracer libmpitempo-trace.so and the global clock as a library, libmpitempo-clock
# (include/mpitempo/clock.h, lib/pkgconfig/mpitempo-clock.pc: `pkg-config --cflags --libs mpitempo-clock`).
#
#   spack repo add packaging/spack            (this directory is a Spack package repository)
#   spack install mpitempo ^mpich             (or ^openmpi, ^intel-oneapi-mpi, ...)
#   spack install --test=root mpitempo        (also builds and runs the C unit tests)
#   spack load mpitempo                       # binaries on PATH, MPITEMPO_CORE set
#
# Release versions and their sha256 are written by packaging/spack/release.py from the release
# tarball (`make dist`); `main` builds the development branch.
from spack.package import *


class Mpitempo(CMakePackage):
    """Precise, reproducible MPI benchmarking: the C measurement core (timers, global clocks,
    measurement schemes, MPI collectives, ping-pong) that writes meta.json and measurements.csv."""

    homepage = "https://example.org/mpitempo"
    url = "https://example.org/mpitempo/releases/mpitempo-0.1.0.tar.gz"
    git = "https://example.org/mpitempo.git"

    maintainers("mpitempo-developers")

    license("BSD-3-Clause")

    version("main", branch="main")
    # release versions (packaging/spack/release.py) go below this line

    variant("hwloc", default=True, description="Find the socket of each rank with hwloc (hierarchical clock sync)")
    variant("otf2", default=True, description="The tracer libmpitempo-trace.so writes OTF2 archives")

    depends_on("c", type="build")
    depends_on("cmake@3.13:", type="build")
    depends_on("mpi")
    depends_on("pkgconfig", type="build", when="+hwloc")
    depends_on("hwloc", when="+hwloc")
    depends_on("otf2", when="+otf2")
    depends_on("python@3:", type="test")   # the executables' smoke test reads their JSON output

    def cmake_args(self):
        return [
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPITEMPO_TESTS", self.run_tests),
            self.define_from_variant("MPITEMPO_HWLOC", "hwloc"),
            self.define_from_variant("MPITEMPO_OTF2", "otf2"),
        ]

    def check(self):
        # the C unit tests and the layering check (ctest), only with `spack install --test`
        with working_dir(self.build_directory):
            ctest("--output-on-failure")

    def setup_run_environment(self, env):
        # the directory mpitempo (the Python package) takes its core from
        env.set("MPITEMPO_CORE", self.prefix.bin)
