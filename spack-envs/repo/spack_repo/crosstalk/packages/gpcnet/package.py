# The builtin recipe only knows the moving "master" branch; pin the commit that builds with
# GCC >= 10 (upstream 476e0c3 fixed the -fno-common duplicate definitions; c56fd95 is its
# successor).
from spack.package import *
from spack_repo.builtin.packages.gpcnet.package import Gpcnet as BuiltinGpcnet


class Gpcnet(BuiltinGpcnet):
    """GPCNeT network and congestion tests, pinned for reproducible builds."""

    version("2021.07.30", commit="c56fd950ae6552ffce7a55cfa6d5617454e983e3", preferred=True)
