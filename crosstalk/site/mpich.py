"""The MPICH the virtual cluster runs: MPICH 5 from PyPI, installed by scripts/bootstrap.sh into
the venv's ``mpich/`` prefix (its own bin/, lib/, include/; nothing on PATH, so Open MPI's mpirun
stays the default).

Not Debian 12's MPICH 4.0.2: its ch4:ucx ``MPI_Finalize`` disconnects every endpoint and then waits
in a blocking PMI barrier; over UCX's TCP transport a disconnect needs the peer's progress (a flush
acknowledgement), so a rank that finishes first stops answering and the others hang for good
(measured: 4-rank xt-impactb across four nodes hung in 4 of 4 runs). MPICH fixed the order in 4.2.0
(commit d6c7cd5, "ch4/ucx: add MPIR_pmi_barrier in finalize"). The wheel has both netmods; the
virtual cluster runs OFI (crosstalk/vcluster/system.py says why).
"""
import sys
from pathlib import Path

#: The pin scripts/bootstrap.sh installs (keep the two equal).
VERSION = "5.0.2"


def prefix():
    """The project's MPICH prefix, or None when it is not installed (run scripts/bootstrap.sh)."""
    root = Path(sys.prefix) / "mpich"
    return root if (root / "bin" / "mpiexec").exists() else None


def tool(name):
    """Absolute path of an MPICH tool (mpicc, mpicxx, mpiexec), or None."""
    root = prefix()
    return str(root / "bin" / name) if root else None
