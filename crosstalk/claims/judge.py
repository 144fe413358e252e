"""A claim's verdict on one platform: the effect per sample, its median with an exact confidence
interval, and where that interval lies against the claim's threshold.

The interval is the distribution-free one of the median (order statistics, from the sign test's
binomial): it assumes nothing about the shape of HPC timings, which are skewed, and it is exact for
small samples, where a bootstrap interval is too narrow. At 90 % it needs 5 samples; with fewer the
verdict is *inconclusive* and says how many more would be needed.
"""
import math
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from crosstalk.claims.operands import Missing, values

CONFIDENCE = 0.90


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
        a, b = of("a"), of("b")
        x = a / b
        margin = float(test.get("min_effect", 0))
        band = (1 + margin, None) if test["expect"] == "greater" else (None, 1 - margin)
    else:
        x = of("num")
        if "den" in test:
            x = x / of("den")
        band = tuple(test["band"])
    x = x.dropna() if hasattr(x, "dropna") else x
    if not hasattr(x, "size") or x.size == 0:
        raise Missing(experiment, select, "paired")
    return x.to_numpy(dtype=float), band[0], band[1]


def _inside(v, low, high):
    return (low is None or v > low) and (high is None or v < high)


def more_samples(x, low, high):
    """Samples to add before the interval clears the nearest bound, if the spread stays as it is
    (the interval narrows as 1/sqrt(n)); None when the median sits on the bound."""
    n, est = x.size, float(np.median(x))
    need = min_samples()
    interval = median_interval(x)
    half = (interval[1] - interval[0]) / 2 if interval else (float(x.max() - x.min()) / 2)
    bounds = [b for b in (low, high) if b is not None]
    distance = min(abs(est - b) for b in bounds)
    if distance == 0:
        return None
    if half > 0:
        need = max(need, math.ceil(n * (half / distance) ** 2))
    return max(1, need - n)


def verdict(x, low, high):
    """``{verdict, estimate, ci_low, ci_high, coverage, n, more}`` of per-sample effects ``x``
    against the band (low, high)."""
    est = float(np.median(x))
    interval = median_interval(x)
    out = {"estimate": est, "n": int(x.size), "ci_low": None, "ci_high": None, "coverage": None,
           "more": None}
    if interval is None:
        out.update(verdict="inconclusive", more=more_samples(x, low, high))
        return out
    lo, hi, coverage = interval
    out.update(ci_low=lo, ci_high=hi, coverage=coverage)
    if _inside(lo, low, high) and _inside(hi, low, high):
        out["verdict"] = "reproduced"
    elif (low is not None and hi <= low) or (high is not None and lo >= high):
        out["verdict"] = "contradicted"
    else:
        out.update(verdict="inconclusive", more=more_samples(x, low, high))
    return out
