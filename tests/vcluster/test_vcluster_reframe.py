"""ReFrame on the login node n1: the STREAM slice as a Slurm job (vcluster:slurm) and via mpirun."""
import pytest

pytestmark = [pytest.mark.root, pytest.mark.cluster, pytest.mark.slow]


@pytest.mark.parametrize("partition", ["slurm", "mpi"])
def test_reframe_stream_on_partition(vcluster, login_report, partition):
    cases = [tc for run in login_report["runs"] for tc in run["testcases"]
             if tc["name"].startswith("StreamTriad") and tc["partition"] == partition]
    ran = [tc for tc in cases if tc["result"] != "skip"]
    assert ran and all(tc["result"] == "pass" for tc in ran)
    # STREAM makes no MPI call: its spec keeps it to the partition's first environment
    assert {tc["environ"] for tc in ran} == {"gnu-openmpi"}
    if partition == "slurm":     # really went through the scheduler: sbatch gave each job its id
        # (ReFrame's record, not ``scontrol show job``: Slurm forgets a job MinJobAge after it ends,
        # and the shared cluster's other tests can run longer than that in between)
        assert all(tc["scheduler"] in ("slurm", "squeue") and str(tc["jobid"]).isdigit() for tc in ran), \
            [(tc["scheduler"], tc["jobid"]) for tc in ran]
