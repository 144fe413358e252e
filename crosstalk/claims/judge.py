"""A claim's verdict on one platform: the effect per sample, its median with an exact confidence
interval, and where that interval lies against the claim's threshold.

The interval is the distribution-free one of the median (order statistics, from the sign test's
binomial): it assumes nothing about the shape of HPC timings, which are skewed, and it is exact for
small samples, where a bootstrap interval is too narrow. At 90 % it needs 5 samples; with fewer the
verdict is *inconclusive* and says how many more would be needed. A platform whose runs looked at
the data twice (a run's second stage, crosstalk.claims.plan) is judged at 95 % (Bonferroni over
the two looks; 6 samples at least).

Where a claim compares two effects that were each paired inside their own jobs but measured in
separate jobs (the victim's slowdown against a canary's impact), the two are judged apart: each
median gets its own interval at half the error rate, and the interval of their quotient follows
(:func:`separate_verdict`).
"""
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from crosstalk.claims.operands import CONFIDENCE, Missing, describe, paired, same_jobs, values, within_job


def confidence_for(looks):
    """The confidence of each look when a claim may be decided at any of ``looks`` looks, so that
    the chance of a wrong verdict over all of them stays at most 1 - CONFIDENCE (Bonferroni)."""
    return 1 - (1 - CONFIDENCE) / max(1, int(looks))


@lru_cache(maxsize=None)
def _rank(n, confidence):
    """``(k, coverage)`` of the narrowest interval [x_(k), x_(n+1-k)] covering the median of n
    samples with at least ``confidence`` (sign test: coverage = 1 - 2 P(Bin(n, 1/2) < k)); None
    if even [min, max] covers less."""
    best, below = None, 0.0          # below: P(Bin(n, 1/2) < k)
    log_half_n = n * math.log(0.5)
    for k in range(1, n // 2 + 1):
        # P(Bin(n, 1/2) = k - 1), in logs: 2^-n underflows beyond n = 1074
        below += math.exp(math.lgamma(n + 1) - math.lgamma(k) - math.lgamma(n - k + 2) + log_half_n)
        coverage = 1 - 2 * below
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


@dataclass
class Separate:
    """The two sides of a quotient, each a ratio paired inside its own jobs, measured in separate
    jobs: their samples do not pair, so each side keeps its own (see :func:`separate_verdict`)."""
    a: np.ndarray
    b: np.ndarray

    @property
    def size(self):
        return min(self.a.size, self.b.size)


def _separate(a, b):
    """Whether ``a`` and ``b`` are within-job ratios of different jobs (judged apart)."""
    return within_job(a) and within_job(b) and not same_jobs(a, b)


#: What the two sides of a :class:`Separate` must share: each side is read only where the other
#: was measured too (a run, partition and environment), so a case that failed on one partition, or
#: a later run of one side alone, cannot shift one median and not the other.
_SHARED = ["run_id", "partition", "environ"]


def _apart(a, b, experiment, select):
    """A :class:`Separate` of the two sides' values where both were measured (see ``_SHARED``);
    a value that is not a positive finite ratio (a zero denominator) is no sample."""
    def where(series):
        return set(zip(*(series.index.get_level_values(k) for k in _SHARED)))
    both = where(a) & where(b)

    def kept(series):
        keys = list(zip(*(series.index.get_level_values(k) for k in _SHARED)))
        x = series.to_numpy(dtype=float)[[k in both for k in keys]]
        return x[np.isfinite(x) & (x > 0)]
    a, b = kept(a), kept(b)
    if not (a.size and b.size):
        raise Missing(experiment, select, "paired", f"no run, partition and environment measured both sides "
                                                    f"in {experiment} cases {describe(select)}")
    return Separate(a, b)


def effects(test, table, experiment, select, units=None):
    """The per-sample effect of a test (a direction's a/b, a ratio's num[/den]) and the band it
    must fall in: ``(effects, low, high)`` (either bound may be None); ``effects`` is a
    :class:`Separate` where the two sides are within-job ratios of separate jobs."""
    def of(key):
        return values(test[key], table, experiment, select, units)
    if test["kind"] == "direction":
        margin = float(test.get("min_effect", 0))
        band = (1 + margin, None) if test["expect"] == "greater" else (None, 1 - margin)
        a, b = of("a"), of("b")
        if _separate(a, b):
            return _apart(a, b, experiment, select), band[0], band[1]
        a, b = paired(a, b)
        x = a / b
    else:
        band = tuple(test["band"])
        x = of("num")
        if "den" in test:
            den = of("den")
            if _separate(x, den):
                return _apart(x, den, experiment, select), band[0], band[1]
            x, den = paired(x, den)
            x = x / den
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


def quotient_interval(a, b, confidence=CONFIDENCE):
    """``(low, high, coverage)`` of median(a) / median(b), ``a`` and ``b`` positive samples measured
    apart: each median's exact interval at 1 - (1 - ``confidence``) / 2, and [a_low / b_high,
    a_high / b_low], which holds when both do (Bonferroni); None when either sample is too small."""
    each = 1 - (1 - confidence) / 2
    ia, ib = median_interval(a, each), median_interval(b, each)
    if not (ia and ib):
        return None
    return ia[0] / ib[1], ia[1] / ib[0], 1 - (1 - ia[2]) - (1 - ib[2])


def separate_verdict(s, low, high, confidence=CONFIDENCE):
    """The verdict of the quotient of two medians measured apart (a :class:`Separate`): each
    side's exact interval at confidence 1 - (1 - ``confidence``) / 2, and the quotient's interval
    [a_low / b_high, a_high / b_low], which holds when both do: with probability at least
    ``confidence`` (Bonferroni). Each side needs its own samples (6 at 90 %); ``n`` is the fewer."""
    each = 1 - (1 - confidence) / 2
    est = float(np.median(s.a) / np.median(s.b))
    lo, hi, coverage = quotient_interval(s.a, s.b, confidence) or (None, None, None)

    def more():
        half = (hi - lo) / 2 if lo is not None else float(s.a.max() / s.b.min() - s.a.min() / s.b.max()) / 2
        return _samples_needed(s.size, est, half, low, high, min_samples(each))
    return {**decide(est, lo, hi, s.size, low, high, more), "coverage": coverage}


def fit_verdict(est, lo, hi, n, low, high, least=4, confidence=CONFIDENCE):
    """The verdict of a fitted estimate and its interval (see :mod:`crosstalk.claims.fits`)."""
    half = (hi - lo) / 2 if lo is not None else 0.0
    return {**decide(est, lo, hi, n, low, high, lambda: _samples_needed(n, est, half, low, high, least)),
            "coverage": confidence if lo is not None else None}
