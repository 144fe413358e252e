"""Applications crosstalk does not build (LAMMPS, GPCNeT, HPCCG) and the MPI each was linked with.

An application linked with one MPI cannot run under another's launcher (its ranks would each start
as a singleton), so a case whose environment runs another MPI is skipped with the reason. The MPI is
read from the binary's shared libraries, not from its name or path.
"""
import functools
import re
import shutil
import subprocess

from xtlib.placement import mpi_family

#: Shared-library sonames by MPI family (MPICH's ABI covers MVAPICH, Intel MPI and Cray MPICH).
LIBRARIES = (("openmpi", re.compile(r"^libmpi\.so\.4\d")),
             ("mpich", re.compile(r"^lib(mpich|mpi)\.so\.12")))
LABELS = {"openmpi": "Open MPI", "mpich": "MPICH"}
LDD_TIMEOUT_S = 30


@functools.lru_cache(maxsize=None)
def linked_mpi(path):
    """``openmpi``, ``mpich`` or None (static, not MPI, or ldd cannot tell) for a binary."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=LDD_TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        soname = line.strip().split(" ", 1)[0]
        for family, pattern in LIBRARIES:
            if pattern.match(soname):
                return family
    return None


def installed_app(test, name):
    """(path, None) when ``name`` is on PATH and can run under the test's MPI, else (None, reason)."""
    path = shutil.which(name)
    if path is None:
        return None, f"{name} is not installed here"
    linked, wanted = linked_mpi(path), mpi_family(test)
    if linked and linked != wanted:
        return None, (f"{name} ({path}) is linked with {LABELS.get(linked, linked)}; environment "
                      f"{test.current_environ.name} runs {LABELS.get(wanted, wanted)}")
    return path, None
