# Spack recipe for the mpitempo C measurement core (mpitempo-bench).
# Copy this directory into a Spack repository: spack repo add <repo>; spack install mpitempo ^mpich
from spack.package import *


class Mpitempo(CMakePackage):
    """Precise, reproducible MPI benchmarking: the C measurement core."""

    homepage = "https://example.org/mpitempo"
    git = "https://example.org/mpitempo.git"

    version("main", branch="main")

    depends_on("mpi")
    depends_on("cmake@3.13:", type="build")

    def cmake_args(self):
        return [self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc), self.define("MPITEMPO_TESTS", False)]
