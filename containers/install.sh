#!/bin/sh
# The one install script of the crosstalk image: containers/crosstalk.def's %post runs only this,
# and tests/integration/test_container_recipe.py runs it in an mmdebstrap rootfs, so the recipe
# body CI proves is the one Apptainer builds.
# Usage: install.sh [SRC]   SRC holds bench/ (default /opt/crosstalk/src); installs /opt/crosstalk.
set -eu
src=${1:-/opt/crosstalk/src}
prefix=/opt/crosstalk
# Debian bookworm names. The MPI stack is Debian's Open MPI 4.1.4 (+UCX), the ABI hybrid mode binds.
packages="build-essential cmake openmpi-bin libopenmpi-dev libucx-dev ucx-utils libibverbs1
ibverbs-providers librdmacm1 lammps hpcc perftest hwloc numactl procps ca-certificates"

export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086  # word splitting of the package list is intended
apt-get install -y --no-install-recommends $packages

build=$(mktemp -d)
cmake -S "$src/bench" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix"
cmake --build "$build" --parallel 2
cmake --install "$build"
rm -rf "$build"

# What is inside, for provenance: a manifest in the image and, in an Apptainer build, labels.
{
    echo "org.crosstalk.installed.debian $(cat /etc/debian_version)"
    for pkg in openmpi-bin libucx0 lammps hpcc perftest gcc cmake; do
        echo "org.crosstalk.installed.$pkg $(dpkg-query -W -f '${Version}' "$pkg")"
    done
} > "$prefix/versions.txt"
if [ -n "${APPTAINER_LABELS:-}" ]; then
    cat "$prefix/versions.txt" >> "$APPTAINER_LABELS"
fi

apt-get clean
rm -rf /var/lib/apt/lists/*
