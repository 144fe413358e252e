from spack.package import *
from spack_repo.builtin.build_systems.autotools import AutotoolsPackage


class Perftest(AutotoolsPackage):
    """InfiniBand/RoCE verbs micro-benchmarks (ib_write_bw, ib_read_lat, ...)."""

    homepage = "https://github.com/linux-rdma/perftest"
    git = "https://github.com/linux-rdma/perftest.git"

    license("GPL-2.0-only OR BSD-2-Clause")

    version("4.5-0.20", tag="v4.5-0.20", commit="9411e12bad57fb36754e6f77b9ce92a7af1eb22a")

    depends_on("c", type="build")
    depends_on("rdma-core")
    depends_on("pciutils")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()
