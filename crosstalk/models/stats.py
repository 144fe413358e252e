"""Run-to-run statistics and the regression gate of ``crosstalk compare``.

Not from one paper: GPCNeT (Chunduri et al. SC19 §3) and Groves 2017 §2.2 both report medians or
tails over repeats because HPC network timings are skewed, so we use rank statistics: median,
percentile-bootstrap CI of the median, coefficient of variation, and a one-sided Mann-Whitney U
test plus a minimum relative effect for comparing two sets of repeats.
"""
from math import comb

import numpy as np
from scipy import stats


def _values(x, what="values"):
    a = np.asarray(x, dtype=float).ravel()
    if a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: need >= 1 finite value, got {a.size}")
    return a


def median(x):
    return float(np.median(_values(x)))


def cv(x):
    """Coefficient of variation: sample standard deviation / mean (nan for one value)."""
    a = _values(x)
    if a.size < 2:
        return float("nan")
    return float(a.std(ddof=1) / a.mean())


def bootstrap_ci(x, stat=np.median, confidence=0.95, n_boot=2000, seed=0):
    """Percentile bootstrap CI (low, high) of ``stat``; seeded, so reruns give the same interval."""
    a = _values(x)
    rng = np.random.default_rng(seed)
    boots = stat(rng.choice(a, size=(n_boot, a.size), replace=True), axis=1)
    tail = 100 * (1 - confidence) / 2
    return float(np.percentile(boots, tail)), float(np.percentile(boots, 100 - tail))


#: Samples a mean's bootstrap interval needs (:func:`mean_interval`).
MEAN_INTERVAL_LEAST = 5


def mean_interval(x, confidence):
    """``(mean, low, high)``: the BCa bootstrap interval of the mean (seeded; the queue-model
    claim's, crosstalk.claims.fits); None bounds with fewer than MEAN_INTERVAL_LEAST samples."""
    a = np.asarray(x, dtype=float)
    if a.size < MEAN_INTERVAL_LEAST:
        return float(a.mean()), None, None
    if np.ptp(a) == 0:             # every sample the same: the bootstrap has nothing to vary
        return float(a[0]), float(a[0]), float(a[0])
    ci = stats.bootstrap((a,), np.mean, confidence_level=confidence, n_resamples=2000,
                         method="BCa", random_state=0).confidence_interval
    return float(a.mean()), float(ci.low), float(ci.high)


def summarise(x, confidence=0.95, seed=0):
    a = _values(x)
    low, high = bootstrap_ci(a, confidence=confidence, seed=seed)
    return {"n": int(a.size), "median": float(np.median(a)), "ci_low": low, "ci_high": high,
            "confidence": confidence, "cv": cv(a), "min": float(a.min()), "max": float(a.max())}


def min_p_value(n1, n2):
    """Smallest one-sided p an exact Mann-Whitney test can give: 1 / C(n1+n2, n1)."""
    return 1.0 / comb(n1 + n2, n1)


def compare(baseline, candidate, better="higher", alpha=0.05, min_effect=0.05):
    """Is ``candidate`` a regression (or improvement) against ``baseline``?

    ``effect`` = relative change of the median in the "worse" direction: (base - cand)/|base| when
    higher is better, (cand - base)/|base| when lower is better. Verdict ``regression`` needs a
    one-sided Mann-Whitney p < alpha towards worse AND effect >= min_effect; ``improvement`` the
    mirror; else ``no change``. If the samples are too small for any p < alpha (exact test:
    1/C(n1+n2, n1), e.g. 2 vs 2 -> 0.167) the verdict is ``insufficient data``.
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    b, c = _values(baseline, "baseline"), _values(candidate, "candidate")
    mb, mc = float(np.median(b)), float(np.median(c))
    sign = 1.0 if better == "higher" else -1.0
    scale = abs(mb) or abs(mc) or 1.0      # a zero baseline median: relative to the candidate
    effect = sign * (mb - mc) / scale
    result = {"test": "mann-whitney-u (one-sided)", "better": better, "alpha": alpha,
              "min_effect": min_effect, "n_baseline": int(b.size), "n_candidate": int(c.size),
              "median_baseline": mb, "median_candidate": mc, "effect": effect,
              "p_worse": float("nan"), "p_better": float("nan"), "p_value": float("nan")}
    if min_p_value(b.size, c.size) >= alpha:
        return {**result, "verdict": "insufficient data",
                "reason": f"{b.size} vs {c.size} values cannot reach p < {alpha}"}
    worse = "less" if better == "higher" else "greater"
    improve = "greater" if better == "higher" else "less"
    p_worse = stats.mannwhitneyu(c, b, alternative=worse).pvalue
    p_better = stats.mannwhitneyu(c, b, alternative=improve).pvalue
    if p_worse < alpha and effect >= min_effect:
        verdict, p = "regression", p_worse
    elif p_better < alpha and -effect >= min_effect:
        verdict, p = "improvement", p_better
    else:
        verdict, p = "no change", min(p_worse, p_better)
    return {**result, "p_worse": float(p_worse), "p_better": float(p_better), "p_value": float(p),
            "verdict": verdict}


def histogram_quantile(values, counts, q):
    """Smallest bin value whose cumulative count reaches q x total (q in (0, 1]), e.g. a tail
    latency (99 %) from a GPCNeT verbose histogram."""
    v, c = _values(values), np.asarray(counts, dtype=float).ravel()
    if v.shape != c.shape or c.sum() <= 0 or (c < 0).any():
        raise ValueError("need one non-negative count per value and a positive total")
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], got {q}")
    order = np.argsort(v)
    cum = np.cumsum(c[order])
    return float(v[order][np.searchsorted(cum, q * cum[-1] * (1 - 1e-12))])
