"""An inventory's ``launcher_options`` reach every step of a job: ReFrame's dry run on the example
site's Slurm partition (its kernels from the image), given ``--mpi=pmix``, writes it on the
measured step's srun line (the last round's, and each earlier round's, of a job that alternates
with a load) and on the load's."""
import shutil

from xt_testing import REPO, dry_run_job_script


def test_the_partitions_launcher_options_are_on_every_step(tmp_path):
    inventory = tmp_path / "example-slurm"
    shutil.copytree(REPO / "inventories" / "example-slurm", inventory)
    system = inventory / "group_vars" / "all" / "crosstalk.yml"
    text = system.read_text()
    debug = '      access: ["--partition=debug"]\n'
    assert text.count(debug) == 1
    system.write_text(text.replace(debug, debug + '      launcher_options: ["--mpi=pmix"]\n'))
    script = dry_run_job_script(tmp_path, inventory, "nimc_stream.py", "NimcStream%injection=max%cores=all%",
                                "example-slurm:debug")
    steps = [line for line in script.splitlines() if line.lstrip().startswith("srun ")]
    loads = [line for line in steps if "--job-name=xtload-" in line]      # the RDMA writer and its server
    measured = [line for line in steps if "xt-stream" in line]
    assert loads and len(measured) >= 2, script      # alone and under the load, in every round
    assert all(line.split().count("--mpi=pmix") == 1 for line in steps), steps
