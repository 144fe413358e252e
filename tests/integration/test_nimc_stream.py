"""E1 NiMC STREAM for real: Triad under unpaced injection into its node is lower than alone.

Three ReFrame sessions (--repeat 3) interleave the alone and injected cases in time, and medians
are compared, so a burst of unrelated load on the machine cannot fake or hide the effect.
"""
import json
import statistics
import subprocess
from pathlib import Path

import pytest

from xt_testing import venv_tool
from crosstalk.ingest import load_run

pytestmark = pytest.mark.slow


def test_injection_costs_memory_bandwidth(tmp_path, run_env):
    env = dict(run_env, CROSSTALK_RESULTS_DIR=str(tmp_path))
    argv = [venv_tool("crosstalk"), "run", "--system", "local", "-e", "nimc-stream", "--",
            "-n", "NimcStream%injection=(off|100|max)%cores=all%", "--repeat", "3"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (run_dir,) = (Path(tmp_path) / "local" / "runs").iterdir()
    perf, cases = load_run(run_dir)
    assert {c["result"] for c in cases} == {"pass"} and len(cases) == 9

    def samples(metric, injection):
        return [r["value"] for r in perf
                if r["metric"] == metric and json.loads(r["params"])["injection"] == injection]

    assert len(samples("triad_bw", "off")) == 3
    # Physics: the injected writes (and, without RDMA offload, their processing) compete with STREAM
    # for the same memory and cores.
    assert statistics.median(samples("triad_bw", "max")) < statistics.median(samples("triad_bw", "off"))
    # Paced injection reaches the requested rate; unpaced goes beyond it.
    assert all(80 <= v <= 110 for v in samples("injected_bw", 100))
    assert statistics.median(samples("injected_bw", "max")) > 100
