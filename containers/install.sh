#!/bin/sh
# The one install script of the crosstalk image: containers/crosstalk.def's %post runs only this,
# and tests/integration/test_container_recipe.py runs it in an mmdebstrap rootfs, so the recipe
# body CI proves is the one Apptainer builds.
# Usage: install.sh [SRC]   SRC holds bench/ (default /opt/crosstalk/src); installs /opt/crosstalk:
#   bin/        the kernels built with Open MPI (the image's own MPI)
#   mpich/bin/  the same kernels built with MPICH, for hybrid runs that bind a host MPI of the
#               MPICH ABI (MPICH, Cray MPICH, Intel MPI, MVAPICH) over the image's libmpich
set -eu
src=${1:-/opt/crosstalk/src}
prefix=/opt/crosstalk
# Debian bookworm names. Two MPI stacks: Open MPI 4.1.4 (+UCX) and MPICH 4.0 (its ABI, libmpich.so.12).
packages="build-essential cmake openmpi-bin libopenmpi-dev mpich libmpich-dev libucx-dev ucx-utils
libibverbs1 ibverbs-providers librdmacm1 lammps hpcc perftest hwloc numactl procps ca-certificates"

export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086  # word splitting of the package list is intended
apt-get install -y --no-install-recommends $packages

# build_kernels MPICC PREFIX: bench/ compiled with that MPI's wrapper, installed under PREFIX.
build_kernels() {
    build=$(mktemp -d)
    cmake -S "$src/bench" -B "$build" -DCMAKE_C_COMPILER="$1" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$2"
    cmake --build "$build" --parallel 2
    cmake --install "$build"
    rm -rf "$build"
}
build_kernels mpicc.openmpi "$prefix"
build_kernels mpicc.mpich "$prefix/mpich"

# What is inside, for provenance: a manifest in the image and, in an Apptainer build, labels.
{
    echo "org.crosstalk.installed.debian $(cat /etc/debian_version)"
    for pkg in openmpi-bin mpich libucx0 lammps hpcc perftest gcc cmake; do
        echo "org.crosstalk.installed.$pkg $(dpkg-query -W -f '${Version}' "$pkg")"
    done
} > "$prefix/versions.txt"
if [ -n "${APPTAINER_LABELS:-}" ]; then
    cat "$prefix/versions.txt" >> "$APPTAINER_LABELS"
fi

apt-get clean
rm -rf /var/lib/apt/lists/*
