"""E1 NiMC STREAM for real: Triad under unpaced injection into its node is lower than alone."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import venv_tool
from crosstalk.ingest import load_run

pytestmark = pytest.mark.slow


def test_injection_costs_memory_bandwidth(tmp_path, run_env):
    env = dict(run_env, CROSSTALK_RESULTS_DIR=str(tmp_path))
    proc = subprocess.run([venv_tool("crosstalk"), "run", "--system", "local", "-e", "nimc-stream"],
                          capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (run_dir,) = (Path(tmp_path) / "local" / "runs").iterdir()
    perf, cases = load_run(run_dir)
    assert {c["result"] for c in cases} == {"pass"}
    triad = {(json.loads(r["params"])["injection"], json.loads(r["params"])["cores"]): r["value"]
             for r in perf if r["metric"] == "triad_bw"}
    injected = {json.loads(r["params"])["injection"]: r["value"]
                for r in perf if r["metric"] == "injected_bw" and json.loads(r["params"])["cores"] == "all"}
    # Physics: the injected writes (and, without RDMA offload, their processing) compete with STREAM
    # for the same memory and cores.
    assert triad[("max", "all")] < triad[("off", "all")]
    # Paced injection reaches roughly the requested rate; unpaced exceeds the lowest paced rate.
    assert 0.8 * 100 <= injected[100] <= 1.1 * 100
    assert injected["max"] > injected[100]
