import os

from spack.package import *
from spack_repo.builtin.build_systems.cmake import CMakePackage

#: The crosstalk checkout this recipe lives in (spack-envs/repo/packages/crosstalk-bench/).
_CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


class CrosstalkBench(CMakePackage):
    """crosstalk benchmark kernels (bench/): xt-stream (STREAM, OpenMP), xt-inject (RDMA-write-
    style MPI_Put injector), xt-impactb and xt-compressionb (Casas & Bronevetsky), xt-rmamt and
    xt-congestion. Each writes JSON lines on stdout.

    Version "develop" builds the committed branch "main" of the checkout holding this recipe.
    To build the working tree instead (uncommitted edits included):
    ``spack develop --path <checkout> crosstalk-bench@develop``.
    """

    git = "file://" + _CHECKOUT

    license("BSD-3-Clause")

    version("develop", branch="main")

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
