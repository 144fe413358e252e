"""E1 NiMC STREAM for real: Triad under unpaced injection into its node is not above Triad alone.

Physics guarantees only the direction (the injected writes compete with STREAM for memory and, on
the virtual cluster, for the node's CPU quota); its size depends on how close the cores come to
saturating memory. On a 2-vCPU guest the host's memory bandwidth drifts by tens of percent from
second to second, so a single alone/injected pair can come out either way (CI once saw 31 vs
45 GB/s on one host). The test therefore reads the shared run's sessions (tests/shared_run.py)
and pairs the alone and injected jobs of a session round by round (4 pairs a session, interleaved in
time), then applies a one-sided sign test to the pairs: it fails when injection makes STREAM
significantly faster (p < 0.01: in all 8 pairs of two sessions).
"""
import pytest
from scipy.stats import binomtest
from shared_run import SESSIONS, params

from crosstalk.specs import load_spec

pytestmark = pytest.mark.slow

ROUNDS = int(load_spec("nimc-stream").setting("rounds", "quick"))


def test_injection_does_not_raise_memory_bandwidth(shared_run):
    cases = shared_run.cases_of("NimcStream")
    perf = shared_run.perf_of("NimcStream")
    assert {c["result"] for c in cases} == {"pass"} and len(cases) == 2 * SESSIONS, shared_run.failure()

    def by_round(metric, injection):
        return {(r["session"], r["round"]): r["value"] for r in perf
                if r["metric"] == metric and params(r)["injection"] == injection}

    every_round = [(s, k) for s in range(SESSIONS) for k in range(ROUNDS)]
    alone, injected = by_round("triad_bw_median", "off"), by_round("triad_bw_median", "max")
    assert sorted(alone) == sorted(injected) == every_round
    faster = sum(injected[key] > alone[key] for key in alone)
    verdict = binomtest(faster, len(alone), 0.5, alternative="greater")
    assert verdict.pvalue >= 0.01, f"injected faster in {faster}/{len(alone)}: alone {alone}, injected {injected}"
    # Groves' Triad (average time) is what the claims read: in every round, never above the best rate
    for injection in ("off", "max"):
        best, avg = by_round("triad_bw", injection), by_round("triad_bw_avg", injection)
        assert sorted(avg) == every_round and all(0 < avg[key] <= best[key] for key in avg)
    assert sorted(by_round("triad_bw_avg_alone", "max")) == every_round
    # The injector really ran beside STREAM (a paced rate is met: tests/bench, xt-inject).
    injected_bw = [r["value"] for r in perf if r["metric"] == "injected_bw"]
    assert len(injected_bw) == SESSIONS and all(v > 0 for v in injected_bw)
    # Each injected job measured Triad alone, then under injection, in each of its rounds.
    assert sorted(by_round("triad_bw_alone", "max")) == every_round
