"""Fixtures for the bench/ kernels: CMake builds (Release and sanitizer) and an MPI launcher.

Part A and part B tests share these. The builds are made once per session and guarded by a file
lock, because several pytest sessions may run on this machine at the same time.
"""
import os

import pytest
from xt_bench import ASAN_ENV, MPI_ENV, build_bench


@pytest.fixture(scope="session")
def bench_bin():
    """Directory of the Release build (XT_WERROR=ON) holding the xt-* executables."""
    return build_bench("bench", "-DCMAKE_BUILD_TYPE=Release", "-DXT_WERROR=ON", "-DXT_SANITIZE=OFF")


@pytest.fixture(scope="session")
def bench_asan_bin():
    """Directory of the AddressSanitizer/UBSan build holding the xt-* executables."""
    return build_bench("bench-asan", "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DXT_WERROR=ON",
                       "-DXT_SANITIZE=ON")


@pytest.fixture(scope="session", params=["release", "asan"])
def xt_bin(request):
    """Both builds in turn: tests using this run once per build."""
    return request.getfixturevalue("bench_bin" if request.param == "release" else "bench_asan_bin")


@pytest.fixture(scope="session")
def mpi_env():
    """Environment for mpirun on this host (and for the sanitizer build)."""
    return dict(os.environ, **MPI_ENV, **ASAN_ENV)


