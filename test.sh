#!/usr/bin/env bash
# The test suite: provision what the tests need, then run pytest (real MPI, Slurm, ReFrame,
# Snakemake). Extra arguments go to pytest (e.g. tests/unit, -k stream).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh
exec pytest "$@"
