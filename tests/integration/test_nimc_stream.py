"""E1 NiMC STREAM for real: Triad under unpaced injection into its node is not above Triad alone.

Physics guarantees only the direction (the injected writes compete with STREAM for memory and, here,
for cores); its size depends on how close the cores come to saturating memory. On a 2-vCPU guest
they do not, and the host's memory bandwidth drifts by tens of percent from second to second, so a
single alone/injected pair can come out either way (CI once saw 31 vs 45 GB/s). The test therefore
interleaves seven pairs in time (--reruns 6) and applies a one-sided sign test to the per-pair
ratio of iteration medians: it fails when injection makes STREAM significantly faster (p < 0.01).
"""
import json
import subprocess
from pathlib import Path

import pytest
from scipy.stats import binomtest
from xt_testing import venv_tool

from crosstalk.analysis.ingest import load_run
from crosstalk.specs import load_spec

pytestmark = [pytest.mark.slow, pytest.mark.machine("local")]

SESSIONS = 7


def test_injection_does_not_raise_memory_bandwidth(tmp_path, run_env):
    env = dict(run_env, CROSSTALK_RESULTS_DIR=str(tmp_path))
    argv = [venv_tool("crosstalk"), "run", "--system", "local", "-e", "nimc-stream", "--",
            "-n", "NimcStream%injection=(off|max)%cores=all%", "--reruns", str(SESSIONS - 1)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (run_dir,) = (Path(tmp_path) / "local" / "runs").iterdir()
    perf, cases = load_run(run_dir)
    assert {c["result"] for c in cases} == {"pass"} and len(cases) == 2 * SESSIONS

    def by_session(metric, injection):
        return {r["session"]: r["value"] for r in perf
                if r["metric"] == metric and json.loads(r["params"])["injection"] == injection}

    alone, injected = by_session("triad_bw_median", "off"), by_session("triad_bw_median", "max")
    assert sorted(alone) == sorted(injected) == list(range(SESSIONS))
    faster = sum(injected[s] > alone[s] for s in alone)
    verdict = binomtest(faster, SESSIONS, 0.5, alternative="greater")
    assert verdict.pvalue >= 0.01, f"injected faster in {faster}/{SESSIONS}: alone {alone}, injected {injected}"
    # Groves' Triad (average time) is what the claims read: in every job, never above the best rate
    for injection in ("off", "max"):
        best, avg = by_session("triad_bw", injection), by_session("triad_bw_avg", injection)
        assert sorted(avg) == list(range(SESSIONS)) and all(0 < avg[s] <= best[s] for s in avg)
    assert sorted(by_session("triad_bw_avg_alone", "max")) == list(range(SESSIONS))
    # The injector really ran beside STREAM (a paced rate is met: tests/bench, xt-inject).
    assert all(v > 0 for v in by_session("injected_bw", "max").values())   # how fast is the host's
    # Each injected job measured Triad alone, then under injection, in each of its rounds.
    rounds = int(load_spec("nimc-stream").setting("rounds", "quick"))
    for injection in ("max",):
        alone = [r for r in perf
                 if r["metric"] == "triad_bw_alone" and json.loads(r["params"])["injection"] == injection]
        assert sorted((r["session"], r["round"]) for r in alone) == \
            [(s, k) for s in range(SESSIONS) for k in range(rounds)]
