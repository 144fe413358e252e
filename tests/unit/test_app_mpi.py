"""Which MPI an installed application was linked with, read from its shared libraries
(reframe-tests/xtlib/apps.py): a case whose environment runs the other MPI is skipped with why."""
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from xtlib.apps import installed_app, linked_mpi  # noqa: E402

SOURCE = REPO / "tests" / "vcluster" / "rank_hosts.c"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    out = tmp_path_factory.mktemp("apps")
    exes = {}
    for family, mpicc in (("openmpi", "mpicc.openmpi"), ("mpich", "mpicc.mpich")):
        if not shutil.which(mpicc):
            pytest.skip(f"{mpicc} is not installed (playbooks/roles/packages installs both MPIs)")
        exes[family] = out / f"rank-hosts-{family}"
        subprocess.run([mpicc, "-o", str(exes[family]), str(SOURCE)], check=True, timeout=120)
    return exes


def test_the_library_names_the_mpi(builds):
    assert linked_mpi(str(builds["openmpi"])) == "openmpi"
    assert linked_mpi(str(builds["mpich"])) == "mpich"
    assert linked_mpi(shutil.which("sh")) is None


def test_an_app_of_the_other_mpi_is_refused_with_the_reason(builds, monkeypatch):
    monkeypatch.setenv("PATH", f"{builds['openmpi'].parent}:/usr/bin:/bin")
    test = SimpleNamespace(current_environ=SimpleNamespace(name="gnu-mpich", extras={"mpi": "mpich"}))
    path, why = installed_app(test, builds["openmpi"].name)
    assert path is None and "linked with Open MPI" in why and "gnu-mpich runs MPICH" in why
    assert installed_app(test, builds["mpich"].name) == (str(builds["mpich"]), None)
    assert installed_app(test, "no-such-app")[1] == "no-such-app is not installed here"
