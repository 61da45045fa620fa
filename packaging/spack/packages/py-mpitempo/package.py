# Copyright the mpitempo developers. SPDX-License-Identifier: BSD-3-Clause
#
# Spack recipe for the mpitempo command line (campaigns, statistics, reports). It uses the C core
# of the `mpitempo` package (MPITEMPO_CORE, set when that package is loaded) instead of compiling
# one, so the MPI is chosen once, on the core:
#
#   spack install py-mpitempo ^mpitempo ^mpich
#   spack load py-mpitempo                    # loads mpitempo too (run dependency)
#   mpitempo build                            # "installed core in <prefix>/bin (found via MPITEMPO_CORE)"
#
# Release versions and their sha256 are written by packaging/spack/release.py.
from spack.package import *


class PyMpitempo(PythonPackage):
    """Precise, reproducible MPI benchmarking: the Python command line (many mpiruns, shuffled
    experiments, Tukey filter, Wilcoxon comparisons, HTML reports, OSU/IMB export)."""

    homepage = "https://example.org/mpitempo"
    url = "https://example.org/mpitempo/releases/mpitempo-0.1.0.tar.gz"
    git = "https://example.org/mpitempo.git"

    maintainers("mpitempo-developers")

    license("BSD-3-Clause")

    version("main", branch="main")
    # release versions (packaging/spack/release.py) go below this line

    depends_on("python@3.9:", type=("build", "run"))
    depends_on("py-setuptools@64:", type="build")
    depends_on("py-click@8:", type=("build", "run"))
    depends_on("py-rich@12:", type=("build", "run"))
    depends_on("py-numpy@1.22:", type=("build", "run"))
    depends_on("py-scipy@1.8:", type=("build", "run"))
    depends_on("py-duckdb@0.9:", type=("build", "run"))
    depends_on("py-matplotlib@3.5:", type=("build", "run"))
    depends_on("py-tomli@2:", type=("build", "run"), when="^python@:3.10")
    # the measurement core, built against the MPI of the spec
    depends_on("mpitempo", type="run")

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_core(self):
        # the installed command finds the installed core (no compilation)
        mpitempo = which(join_path(self.prefix.bin, "mpitempo"))
        out = mpitempo("build", "--json", output=str,
                       extra_env={"MPITEMPO_CORE": self.spec["mpitempo"].prefix.bin})
        assert '"installed"' in out, out
