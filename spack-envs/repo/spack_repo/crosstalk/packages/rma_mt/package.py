from spack.package import *
from spack_repo.builtin.build_systems.autotools import AutotoolsPackage


class RmaMt(AutotoolsPackage):
    """RMA-MT: multithreaded MPI one-sided (RMA) bandwidth and latency benchmarks (LANL)."""

    homepage = "https://github.com/hpc/rma-mt"
    git = "https://github.com/hpc/rma-mt.git"

    license("BSD-3-Clause")

    version("2020.11.10", commit="d09c4d06730b25c06ca91cf2070e857a6be9e87a")

    depends_on("c", type="build")
    depends_on("mpi")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")

    # The git tree has no configure script.
    force_autoreconf = True

    def configure_args(self):
        return [f"CC={self.spec['mpi'].mpicc}"]

    def install(self, spec, prefix):
        # Upstream declares the programs noinst_PROGRAMS: copy them.
        mkdirp(prefix.bin)
        for program in ("rmamt_bw", "rmamt_lat", "rmamt_bibw"):
            install(join_path("src", program), prefix.bin)
