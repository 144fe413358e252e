"""The hybrid MPI bind model, from the inventory to the job script: ReFrame's dry run on the example
site's container partition writes, per environment, an ``apptainer exec`` that binds that MPI
family's host library over the image's build of the same ABI and runs that build's kernel."""
import os
import subprocess

import pytest
from xt_testing import REPO, venv_tool

from crosstalk.site.configrender import render

INVENTORY = REPO / "inventories" / "example-slurm"


@pytest.fixture(scope="module")
def job_scripts(tmp_path_factory):
    work = tmp_path_factory.mktemp("hybrid")
    config = render(INVENTORY, work / "config")[0]
    (work / "run").mkdir()
    env = {**os.environ, "CROSSTALK_RUN_DIR": str(work / "run"), "CROSSTALK_STAGE_DIR": str(work / "stage")}
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", "example-slurm:debug",
                           "-c", str(REPO / "reframe-tests" / "rma_mt.py"),
                           "-n", "RmaMt%op=put%sync=fence%threads=2", "--dry-run"],
                          capture_output=True, text=True, env=env, cwd=work, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return {p.parent.parent.name: p.read_text() for p in (work / "stage").rglob("RmaMt_*/rfm_job.sh")}


@pytest.mark.parametrize("environ, host_mpi, kernel", [
    ("gnu-openmpi", "/opt/site/openmpi-4.1:/opt/hostmpi", "/opt/crosstalk/bin/xt-rmamt"),
    ("gnu-mpich", "/opt/site/mpich-4.1:/opt/hostmpi", "/opt/crosstalk/mpich/bin/xt-rmamt")])
def test_each_mpi_binds_its_host_library_over_the_image_build_of_its_abi(job_scripts, environ, host_mpi, kernel):
    script = job_scripts[environ]
    (line,) = [ln for ln in script.splitlines() if "apptainer exec" in ln]
    assert f'-B"{host_mpi}"' in line and '-B"/etc/libibverbs.d:/etc/libibverbs.d"' in line
    assert f"crosstalk.sif {kernel} " in line
    assert "export APPTAINERENV_LD_LIBRARY_PATH=/opt/hostmpi/lib" in script
