"""A claim's verdict on one platform: the effect per sample, its median with an exact confidence
interval, and where that interval lies against the claim's threshold.

The interval is the distribution-free one of the median (order statistics, from the sign test's
binomial): it assumes nothing about the shape of HPC timings, which are skewed, and it is exact for
small samples, where a bootstrap interval is too narrow. At 90 % it needs 5 samples; with fewer the
verdict is *inconclusive* and says how many more would be needed. A platform whose runs looked at
the data twice (a run's second stage, crosstalk.claims.plan) is judged at 95 % (Bonferroni over
the two looks; 6 samples at least).
"""
import math
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from crosstalk.claims.operands import CONFIDENCE, Missing, paired, values


def confidence_for(looks):
    """The confidence of each look when a claim may be decided at any of ``looks`` looks, so that
    the chance of a wrong verdict over all of them stays at most 1 - CONFIDENCE (Bonferroni)."""
    return 1 - (1 - CONFIDENCE) / max(1, int(looks))


@lru_cache(maxsize=None)
def _rank(n, confidence):
    """``(k, coverage)`` of the narrowest interval [x_(k), x_(n+1-k)] covering the median of n
    samples with at least ``confidence`` (sign test: coverage = 1 - 2 P(Bin(n, 1/2) < k)); None
    if even [min, max] covers less."""
    best = None
    for k in range(1, n // 2 + 1):
        coverage = 1 - 2 * binom.cdf(k - 1, n, 0.5)
        if coverage < confidence:
            break
        best = (k, float(coverage))
    return best


def median_interval(x, confidence=CONFIDENCE):
    """``(low, high, coverage)``: the exact order-statistic interval of the median; None when the
    sample is too small for ``confidence``."""
    x = np.sort(np.asarray(x, dtype=float))
    rank = _rank(x.size, confidence)
    if rank is None:
        return None
    k, coverage = rank
    return float(x[k - 1]), float(x[x.size - k]), coverage


def min_samples(confidence=CONFIDENCE):
    n = 1
    while median_interval(np.arange(n), confidence) is None:
        n += 1
    return n


def effects(test, table, experiment, select, units=None):
    """The per-sample effect of a test (a direction's a/b, a ratio's num[/den]) and the band it
    must fall in: ``(effects, low, high)`` (either bound may be None)."""
    def of(key):
        return values(test[key], table, experiment, select, units)
    if test["kind"] == "direction":
        a, b = paired(of("a"), of("b"))
        x = a / b
        margin = float(test.get("min_effect", 0))
        band = (1 + margin, None) if test["expect"] == "greater" else (None, 1 - margin)
    else:
        x = of("num")
        if "den" in test:
            x, den = paired(x, of("den"))
            x = x / den
        band = tuple(test["band"])
    x = x.dropna() if hasattr(x, "dropna") else x
    if not hasattr(x, "size") or x.size == 0:
        raise Missing(experiment, select, "paired")
    return x.to_numpy(dtype=float), band[0], band[1]


def _inside(v, low, high):
    return (low is None or v > low) and (high is None or v < high)


def _samples_needed(n, est, half, low, high, least):
    """Samples to add before an interval of half-width ``half`` around ``est`` clears the nearest
    bound, if the spread stays as it is (the interval narrows as 1/sqrt(n)); None when the
    estimate sits on the bound."""
    distance = min(abs(est - b) for b in (low, high) if b is not None)
    if distance == 0:
        return None
    need = least
    if half > 0:
        need = max(need, math.ceil(n * (half / distance) ** 2))
    return max(1, need - n)


def more_samples(x, low, high, confidence=CONFIDENCE):
    """Samples to add before the median's interval decides (see :func:`_samples_needed`)."""
    interval = median_interval(x, confidence)
    half = (interval[1] - interval[0]) / 2 if interval else (float(x.max() - x.min()) / 2)
    return _samples_needed(x.size, float(np.median(x)), half, low, high, min_samples(confidence))


def decide(est, lo, hi, n, low, high, more):
    """``{verdict, estimate, ci_low, ci_high, n, more}`` of an estimate and its interval (None:
    too few samples) against the band (low, high); ``more()`` counts the samples that would
    decide an inconclusive one."""
    out = {"estimate": float(est), "n": int(n), "ci_low": lo, "ci_high": hi, "more": None}
    if lo is not None and _inside(lo, low, high) and _inside(hi, low, high):
        out["verdict"] = "reproduced"
    elif lo is not None and ((low is not None and hi <= low) or (high is not None and lo >= high)):
        out["verdict"] = "contradicted"
    else:
        out.update(verdict="inconclusive", more=more())
    return out


def verdict(x, low, high, confidence=CONFIDENCE):
    """The verdict of per-sample effects ``x``: their median and its exact interval (see
    :func:`decide`; also ``coverage``, the interval's exact confidence)."""
    interval = median_interval(x, confidence)
    lo, hi, coverage = interval if interval else (None, None, None)
    return {**decide(np.median(x), lo, hi, x.size, low, high, lambda: more_samples(x, low, high, confidence)),
            "coverage": coverage}


def fit_verdict(est, lo, hi, n, low, high, least=4, confidence=CONFIDENCE):
    """The verdict of a fitted estimate and its interval (see :mod:`crosstalk.claims.fits`)."""
    half = (hi - lo) / 2 if lo is not None else 0.0
    return {**decide(est, lo, hi, n, low, high, lambda: _samples_needed(n, est, half, low, high, least)),
            "coverage": confidence if lo is not None else None}
