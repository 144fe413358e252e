"""A hung kernel fails its own case as timed out and the run goes on, on both partitions.

The hang is made by arguments: a site spec (``crosstalk run --specs DIR``) asks xt-stream for a
million STREAM iterations over 64 MiB arrays (hours) within a 20 s time limit. ReFrame's local
scheduler (``mpi`` partition) kills the job at the limit; on the ``slurm`` partition Slurm does,
and the test's pre-sanity hook names it. RMA-MT cases of the same run still pass. Once the Slurm
job's kernel runs, the test stops it (SIGSTOP): hung either way, but not spinning a core for the
60-90 s of Slurm's whole-minute limit (Slurm's kill continues and ends stopped processes).
"""
import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest
from vcluster_fixtures import REPO, kernels_under, skip_unless_root
from xt_testing import OPEN_MPI_ONLY, site_spec, venv_tool

from crosstalk.analysis.ingest import load_run
from crosstalk.run import leftovers

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]
#: The cases run at once (ReFrame's async policy, not the inventory's serial one): this run
#: measures nothing, and Slurm's hang alone lasts its whole-minute limit plus a check period.
ALL_AT_ONCE = ("--exec-policy=async",)


def test_a_hung_kernel_times_out_alone(spare_cluster, run_env_module):
    """On the spare cluster (tests/vcluster_fixtures.py): the run is changed, not only read."""
    skip_unless_root()
    vc, system = spare_cluster.vc, spare_cluster.name
    work = REPO / "build" / "test-time-limits" / uuid.uuid4().hex[:8]   # nodes have a private /tmp
    # hours of STREAM (a million iterations over 64 MiB arrays) within 20 s
    spec = site_spec(work / "specs", "stream", parameters={"threads": [1]},
                     settings={"ntimes": 1000000, "array_bytes": "64M"}, time_limit="20s", repeats=1)
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(work / "results"))
    log = work / "run.log"
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [venv_tool("crosstalk"), "run", "--system", str(spare_cluster.inventory),
                 "--specs", str(work / "specs"), "-e", "stream,rma-mt", "--", *OPEN_MPI_ONLY, "-n", "StreamTriad",
                 "-n", "RmaMt%op=put%sync=lock%threads=2", *ALL_AT_ONCE],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                _stop_the_slurm_kernel(proc, work / "results" / system / "runs", system)
                proc.wait(timeout=900)
            finally:
                proc.kill()
        assert proc.returncode == 1, log.read_text()[-5000:]
        (run_dir,) = (work / "results" / system / "runs").iterdir()
        prov = json.loads((run_dir / "provenance.json").read_text())
        assert prov["specs"]["stream"]["path"] == str(spec.relative_to(REPO))   # the site spec

        _, cases = load_run(run_dir)
        by_test = {(c["test"], c["partition"]): c for c in cases}
        for partition in ("mpi", "slurm"):
            stream = by_test[("StreamTriad", partition)]
            assert stream["result"] == "fail" and "timed out" in stream["reason"], stream
            assert by_test[("RmaMt", partition)]["result"] == "pass"
        stage = REPO / "build" / "reframe" / system / "stage" / run_dir.name
        assert leftovers.run_processes(stage) == []
        queue = vc.exec(vc.nodes[0], ["squeue", "-h"], capture_output=True, text=True, timeout=30)
        assert queue.stdout.strip() == ""
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stop_the_slurm_kernel(proc, runs, system, limit=300):
    """SIGSTOP the Slurm job's hung STREAM once it runs (or give up when the run ends first: the
    assertions then judge the run as it went)."""
    deadline = time.monotonic() + limit
    while proc.poll() is None and time.monotonic() < deadline:
        started = list(runs.glob("*")) if runs.is_dir() else []
        if started:
            stage = REPO / "build" / "reframe" / system / "stage" / started[0].name / system / "slurm"
            pids = kernels_under(stage, prefix="xt-stream")
            if pids:
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                return
        time.sleep(0.5)
