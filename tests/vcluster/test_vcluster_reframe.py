"""ReFrame on the login node n1: the STREAM slice as a Slurm job (vcluster:slurm) and via mpirun."""
import pytest

from vcluster_fixtures import reframe_on_login, vcluster  # noqa: F401

pytestmark = [pytest.mark.root, pytest.mark.cluster, pytest.mark.slow]


@pytest.mark.parametrize("partition", ["slurm", "mpi"])
def test_reframe_stream_on_partition(vcluster, partition):
    # visible from every node
    report = reframe_on_login(vcluster, vcluster.shared_dir / f"rfm-{partition}", "stream.py",
                              ["--system", f"vcluster:{partition}"])
    cases = [tc for run in report["runs"] for tc in run["testcases"]
             if tc["name"].startswith("StreamTriad")]
    ran = [tc for tc in cases if tc["result"] != "skip"]
    assert ran and all(tc["result"] == "pass" for tc in ran)
    assert {tc["partition"] for tc in cases} == {partition}
    # STREAM makes no MPI call: its spec keeps it to the partition's first environment
    assert {tc["environ"] for tc in ran} == {"gnu-openmpi"}
    if partition == "slurm":     # really went through the scheduler
        jobs = vcluster.exec("n1", ["scontrol", "show", "job"], capture_output=True,
                             text=True).stdout
        assert "JobName=rfm_StreamTriad" in jobs
