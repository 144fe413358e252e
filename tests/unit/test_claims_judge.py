"""The statistics behind a claim's verdict: the exact interval of the median covers it as often
as it says (checked by simulation on skewed data), and the verdict follows where the interval
lies against the claimed band."""
import numpy as np
import pytest

from crosstalk.claims.judge import Separate, median_interval, min_samples, separate_verdict, verdict


def test_too_few_samples_give_no_interval():
    assert median_interval([1, 2, 3, 4]) is None          # [min, max] of 4 covers 87.5 % < 90 %
    assert min_samples() == 5
    low, high, coverage = median_interval([5, 1, 4, 2, 3])
    assert (low, high) == (1, 5) and coverage == pytest.approx(1 - 2 / 32)


@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.975])
def test_the_interval_ranks_are_the_sign_tests_binomial_ones(confidence):
    """The ranks and coverage come from P(Bin(n, 1/2) < k), summed in logs (2^-n underflows past
    n = 1074): the same k and coverage as scipy's binomial, small n and large."""
    from scipy.stats import binom
    for n in [*range(1, 200), 1074, 1075, 5000]:
        x = np.arange(n, dtype=float)
        ks = [k for k in range(1, n // 2 + 1) if 1 - 2 * binom.cdf(k - 1, n, 0.5) >= confidence]
        got = median_interval(x, confidence)
        if not ks:
            assert got is None, n
            continue
        k = max(ks)
        assert got[:2] == (x[k - 1], x[n - k]), n
        assert got[2] == pytest.approx(1 - 2 * binom.cdf(k - 1, n, 0.5), abs=1e-9), n


@pytest.mark.parametrize("n", [5, 8, 12, 30])
def test_the_interval_covers_the_true_median_as_often_as_it_says(n):
    """Log-normal samples (skewed, like HPC timings), 4000 draws per n: the share of intervals
    holding the true median is at least the stated coverage, less 3 standard errors of the
    simulation (about 1.5 points at 4000 draws): a wrong rank would miss by far more."""
    rng = np.random.default_rng(n)
    true_median = 1.0                                    # lognormal(0, s) has median e^0
    hits, coverage = 0, None
    for _ in range(4000):
        low, high, coverage = median_interval(rng.lognormal(0, 0.6, n))
        hits += low <= true_median <= high
    se = (coverage * (1 - coverage) / 4000) ** 0.5
    assert hits / 4000 >= coverage - 3 * se
    assert coverage >= 0.90


def test_verdicts_follow_the_interval_against_the_band():
    above = np.linspace(1.3, 1.6, 10)
    assert verdict(above, 1.0, None)["verdict"] == "reproduced"
    assert verdict(above, None, 1.0)["verdict"] == "contradicted"
    assert verdict(above, 1.0, 1.5)["verdict"] == "inconclusive"     # spans the upper bound
    assert verdict(above, 1.0, 2.0)["verdict"] == "reproduced"
    assert verdict(above, 2.0, 3.0)["verdict"] == "contradicted"


def test_an_inconclusive_verdict_says_how_many_samples_would_decide_it():
    few = np.array([1.2, 1.3, 1.4])
    out = verdict(few, 1.0, None)
    assert out["verdict"] == "inconclusive" and out["ci_low"] is None and out["more"] >= 2
    # Median 1.05 against a threshold of 1.0; 9 samples give the interval [0.9, 1.2] (2nd and 8th):
    # its half-width (0.15) must shrink to the distance (0.05), which takes 9x the samples (81).
    straddling = np.array([0.8, 0.9, 1.0, 1.05, 1.05, 1.05, 1.1, 1.2, 1.3])
    out = verdict(straddling, 1.0, None)
    assert out["verdict"] == "inconclusive"
    assert out["more"] == 81 - 9
    assert verdict(np.array([0.8, 0.9, 1.0, 1.1, 1.2]), 1.0, None)["more"] is None   # on the threshold


def test_the_quotient_of_two_separate_medians_covers_as_often_as_it_says():
    """Two sides measured apart (log-normal, true medians 1 and 4, 6 samples each, 4000 draws):
    the quotient's interval holds the true 1/4 at least as often as its stated coverage (the
    Bonferroni sum of the sides' exact coverages), less 3 standard errors of the simulation."""
    rng = np.random.default_rng(6)
    hits, coverage = 0, None
    for _ in range(4000):
        out = separate_verdict(Separate(rng.lognormal(0, 0.6, 6), 4 * rng.lognormal(0, 0.3, 6)), None, 1.0)
        coverage = out["coverage"]
        hits += out["ci_low"] <= 0.25 <= out["ci_high"]
    se = (coverage * (1 - coverage) / 4000) ** 0.5
    assert coverage >= 0.90 and hits / 4000 >= coverage - 3 * se


def test_separate_sides_need_their_own_samples_and_decide_by_the_quotients_interval():
    slowdown = np.array([1.21, 1.21, 1.32, 1.42, 1.52, 1.54])         # the victim's, per round
    impact = np.array([57.0, 57.3, 86.6, 109.0, 189.0, 383.0])        # the canary's, per round
    out = separate_verdict(Separate(slowdown, impact), None, 1.0)
    # each side at 95 % (half the 10 % error): [min, max] of 6 covers 1 - 2/64
    assert out["verdict"] == "reproduced" and out["n"] == 6
    assert out["estimate"] == pytest.approx(np.median(slowdown) / np.median(impact))
    assert (out["ci_low"], out["ci_high"]) == (pytest.approx(1.21 / 383.0), pytest.approx(1.54 / 57.0))
    assert out["coverage"] == pytest.approx(1 - 2 * 2 / 64)
    assert separate_verdict(Separate(impact, slowdown), None, 1.0)["verdict"] == "contradicted"
    # five per side give no interval at 95 %: inconclusive, one more sample each decides it
    few = separate_verdict(Separate(slowdown[:5], impact[:5]), None, 1.0)
    assert few["verdict"] == "inconclusive" and few["ci_low"] is None and few["more"] == 1
    # overlapping sides: the quotient's interval spans 1
    close = separate_verdict(Separate(slowdown, slowdown * 1.1), None, 1.0)
    assert close["verdict"] == "inconclusive" and close["more"] > 1
