"""Helpers of the bench/ kernel tests: CMake builds, the MPI environment, JSON-lines parsing.

A uniquely named module (not conftest) so test modules can import it unambiguously.
"""
import fcntl
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH_SRC = REPO / "bench"
BUILD_ROOT = REPO / "build"

# Open MPI on one host as root: shared memory + TCP, yield when idle (2 cores, oversubscribed).
# osc/pt2pt: one-sided over the pt2pt layer; works on this host for MPI_Win_allocate + passive
# target (see bench/README.md "MPI environment").
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,vader,tcp",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMPI_MCA_osc": "pt2pt",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}
# xt-rmamt's MPI_THREAD_MULTIPLE RMA under Open MPI: osc/pt2pt refuses it, so osc/ucx (and pml/ucx),
# over UCX's tcp transport on lo on this one host (across nodes: UCX_TLS=tcp,self on the link).
RMA_UCX_ENV = {
    "OMPI_MCA_osc": "ucx",
    "OMPI_MCA_pml": "ucx",
    "OMPI_MCA_opal_common_ucx_tls": "any",
    "OMPI_MCA_opal_common_ucx_devices": "any",
    "UCX_TLS": "self,tcp",
    "UCX_NET_DEVICES": "lo",
}
# ASan's leak checker reports Open MPI's own allocations; real errors still abort.
ASAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=99",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
    # hwloc's PCI discovery parses pci.ids through ASan's allocator: ~1.6 s of CPU per rank (a
    # 4-rank job 3.2 s, without it 0.5 s). No kernel reads the topology; one host has no NIC to place.
    "HWLOC_COMPONENTS": "-pci",
}


def build_bench(name, *cmake_args):
    build = BUILD_ROOT / name
    BUILD_ROOT.mkdir(exist_ok=True)
    with open(BUILD_ROOT / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        gen = ["-G", "Ninja"] if shutil.which("ninja") and not (build / "Makefile").exists() else []
        subprocess.run(["cmake", "-S", str(BENCH_SRC), "-B", str(build), *gen, *cmake_args],
                       check=True, capture_output=True, text=True)
        res = subprocess.run(["cmake", "--build", str(build), "-j2"], capture_output=True, text=True)
        if res.returncode != 0:
            pytest.fail(f"building bench/ in {build} failed:\n{res.stdout}\n{res.stderr}")
    return build


def mpirun_cmd(np, exe, *args):
    return ["mpirun", "--oversubscribe", "-np", str(np), str(exe), *map(str, args)]


def json_lines(stdout):
    """Parse JSON lines; every non-empty stdout line must be one JSON object."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def results(records, **match):
    return [r for r in records
            if r.get("type") == "result" and all(r.get(k) == v for k, v in match.items())]
