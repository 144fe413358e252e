"""An inventory's ``launcher_options`` reach every step of a job: ReFrame's dry run on the example
site's Slurm partition (its kernels from the image), given ``--mpi=pmix``, writes it on the
measured step's srun line (the last round's, and each earlier round's, of a job that alternates
with a load) and on the load's."""
import os
import shutil
import subprocess

from xt_testing import REPO, venv_tool

from crosstalk.site.configrender import render


def test_the_partitions_launcher_options_are_on_every_step(tmp_path):
    inventory = tmp_path / "example-slurm"
    shutil.copytree(REPO / "inventories" / "example-slurm", inventory)
    system = inventory / "group_vars" / "all" / "crosstalk.yml"
    text = system.read_text()
    debug = '      access: ["--partition=debug"]\n'
    assert text.count(debug) == 1
    system.write_text(text.replace(debug, debug + '      launcher_options: ["--mpi=pmix"]\n'))
    config = render(inventory, tmp_path / "config")[0]
    (tmp_path / "run").mkdir()
    env = {**os.environ, "CROSSTALK_RUN_DIR": str(tmp_path / "run"), "CROSSTALK_STAGE_DIR": str(tmp_path / "stage")}
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", "example-slurm:debug",
                           "-c", str(REPO / "reframe-tests" / "nimc_stream.py"), "-p", "^gnu-openmpi$",
                           "-n", "NimcStream%injection=max%cores=all%", "--dry-run"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (script,) = [p.read_text() for p in (tmp_path / "stage").rglob("NimcStream_*/rfm_job.sh")]
    steps = [line for line in script.splitlines() if line.lstrip().startswith("srun ")]
    loads = [line for line in steps if "--job-name=xtload-" in line]      # the RDMA writer and its server
    measured = [line for line in steps if "xt-stream" in line]
    assert loads and len(measured) >= 2, script      # alone and under the load, in every round
    assert all(line.split().count("--mpi=pmix") == 1 for line in steps), steps
