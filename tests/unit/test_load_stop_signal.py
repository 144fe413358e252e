"""How a job stops its background load: crosstalk's own loads (xt-inject here) with SIGUSR1, which
mpirun forwards to every rank (on SIGTERM Open MPI tears the job down, 4 s per load, while the
ranks went on injecting) and srun's step gets through scancel; anything else (an application as the
load) with SIGTERM. Written by ReFrame's dry run on the virtual cluster's two partitions."""
import re

import pytest
from xt_testing import REPO, dry_run_job_script

INVENTORY = REPO / "inventories" / "vcluster"


@pytest.mark.parametrize("partition, stop", [("mpi", r"kill -USR1 \$inject_pid"),
                                             ("slurm", r"scancel --signal=USR1 \$\(squeue .*xtload-inject")])
def test_crosstalks_load_is_stopped_with_sigusr1(tmp_path, partition, stop):
    script = dry_run_job_script(tmp_path, INVENTORY, "nimc_stream.py", "NimcStream%injection=max%cores=all%",
                                f"vcluster:{partition}")
    stops = [line for line in script.splitlines() if "inject_pid" in line and ("kill -" in line or "scancel" in line)
             and "kill -0" not in line]
    assert stops and all(re.search(stop, line) for line in stops), stops


def test_an_application_load_is_stopped_with_sigterm(tmp_path):
    script = dry_run_job_script(tmp_path, INVENTORY, "active_probing.py", "ActiveProbing%load=app:lammps%",
                                "vcluster:mpi")
    assert "kill -TERM $lammps_pid" in script and "USR1" not in script, script
