from pathlib import Path

from spack.package import *
from spack_repo.builtin.build_systems.cmake import CMakePackage


def _checkout():
    """The crosstalk checkout holding this recipe: the nearest directory above it with bench/ and
    spack-envs/, wherever the recipe sits in the repository (no counting of parent directories).
    A copy outside a checkout (Spack's provenance of an installation) gets its own directory."""
    here = Path(__file__).resolve().parent
    for parent in here.parents:
        if (parent / "bench" / "CMakeLists.txt").is_file() and (parent / "spack-envs").is_dir():
            return str(parent)
    return str(here)


_CHECKOUT = _checkout()


class CrosstalkBench(CMakePackage):
    """crosstalk benchmark kernels (bench/): xt-stream (STREAM, OpenMP), xt-inject (RDMA-write-
    style MPI_Put injector), xt-impactb and xt-compressionb (Casas & Bronevetsky), xt-rmamt and
    xt-congestion. Each writes JSON lines on stdout.

    Version "develop" builds the commit checked out (HEAD) in the checkout holding this recipe:
    on a login node, the crosstalk version playbooks/site.yml put there. It names no branch, so
    concretising records no commit and the committed locks (spack-envs/locks/) do not change with
    every commit. To build the working tree instead (uncommitted edits included):
    ``spack develop --path <checkout> crosstalk-bench@develop``.
    """

    homepage = "file://" + _CHECKOUT + "/bench/README.md"
    git = "file://" + _CHECKOUT

    license("BSD-3-Clause")

    version("develop")

    variant("openmp", default=True, description="Build xt-stream with OpenMP threads")

    # The CMake project is bench/, not the repository root.
    root_cmakelists_dir = "bench"

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")

    def cmake_args(self):
        return [
            self.define_from_variant("XT_OPENMP", "openmp"),
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
            # Warnings must not break a site's build; sanitizers are for our tests only.
            self.define("XT_WERROR", False),
            self.define("XT_SANITIZE", False),
        ]
