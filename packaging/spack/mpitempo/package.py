# Spack recipe for the mpitempo C measurement core (mpitempo-bench, mpitempo-clocks,
# mpitempo-pingpong, mpitempo-tree, mpitempo-logp), built with CMake against the MPI of the spec.
#
#   spack repo add <repo containing this directory>
#   spack install mpitempo ^mpich          (or ^openmpi, ^intel-oneapi-mpi, ...)
#   spack load mpitempo                    # puts the binaries on PATH and sets MPITEMPO_CORE
#
# The Python package (`pip install mpitempo`, or a wheel) then uses this core instead of
# compiling its own: `mpitempo build` prints "installed core in <prefix>/bin (found via
# MPITEMPO_CORE)", and every run records the fingerprint of these binaries. `mpitempo build
# --mpicc PATH` still compiles a core for another MPI.
from spack.package import *


class Mpitempo(CMakePackage):
    """Precise, reproducible MPI benchmarking: the C measurement core."""

    homepage = "https://example.org/mpitempo"
    git = "https://example.org/mpitempo.git"

    version("main", branch="main")

    variant("hwloc", default=True, description="Find the socket of each rank with hwloc (hierarchical clock sync)")
    variant("otf2", default=True, description="The tracer libmpitempo-trace.so writes OTF2 archives")

    depends_on("c", type="build")
    depends_on("mpi")
    depends_on("cmake@3.13:", type="build")
    depends_on("pkgconfig", type="build", when="+hwloc")
    depends_on("hwloc", when="+hwloc")
    depends_on("otf2", when="+otf2")

    def cmake_args(self):
        return [
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPITEMPO_TESTS", False),
            self.define_from_variant("MPITEMPO_HWLOC", "hwloc"),
            self.define_from_variant("MPITEMPO_OTF2", "otf2"),
        ]

    def setup_run_environment(self, env):
        # the directory mpitempo (the Python package) takes its core from
        env.set("MPITEMPO_CORE", self.prefix.bin)
