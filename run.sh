#!/usr/bin/env bash
# The main job: provision this machine, build the kernels, run the quick suite with ReFrame
# (on the virtual cluster when root, else on this machine) and write the report.
# Extra arguments go to `crosstalk run` (e.g. --profile full, --system local).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh
crosstalk doctor
status=0
crosstalk run "$@" || status=$?
crosstalk report
[ "$status" -eq 0 ] || echo "crosstalk: some tests failed (exit $status); see the report" >&2
exit "$status"
