"""ReFrame on the login node n1: the STREAM slice as a Slurm job (vcluster:slurm) and via mpirun."""
import json
import os
import sys
from pathlib import Path

import pytest

from vcluster_fixtures import INVENTORY, REPO, vcluster  # noqa: F401

pytestmark = [pytest.mark.root, pytest.mark.vcluster, pytest.mark.slow]
VENV_BIN = Path(sys.executable).parent


@pytest.mark.parametrize("partition", ["slurm", "mpi"])
def test_reframe_stream_on_partition(vcluster, partition):
    from crosstalk.configrender import render
    work = vcluster.shared_dir / f"rfm-{partition}"      # visible from every node
    config = render(INVENTORY, work / "config")[0]
    run_dir = work / "run"
    run_dir.mkdir(parents=True, exist_ok=True)     # ReFrame does not create its log dir
    out = vcluster.exec("n1", [str(VENV_BIN / "reframe"), "-C", str(config),
                               "-c", str(REPO / "reframe-tests" / "stream.py"),
                               "--system", f"vcluster:{partition}", "-r"],
                        cwd=str(REPO), capture_output=True, text=True, timeout=600,
                        env={**os.environ, "CROSSTALK_RUN_DIR": str(run_dir),
                             "CROSSTALK_PROFILE": "quick"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    report = json.loads((run_dir / "report.json").read_text())
    cases = [tc for run in report["runs"] for tc in run["testcases"]
             if tc["name"].startswith("StreamTriad")]
    assert cases and all(tc["result"] == "pass" for tc in cases)
    assert {tc["partition"] for tc in cases} == {partition}
    if partition == "slurm":     # really went through the scheduler
        jobs = vcluster.exec("n1", ["scontrol", "show", "job"], capture_output=True,
                             text=True).stdout
        assert "JobName=rfm_StreamTriad" in jobs
