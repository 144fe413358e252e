"""Run-to-run statistics and the compare gate (crosstalk.models.stats)."""
import numpy as np
import pytest

from crosstalk.models import stats


def test_median_cv_by_hand():
    # [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, sample sd sqrt(32/7) = 2.13809 -> CV 0.427618; median 4.5
    x = [2, 4, 4, 4, 5, 5, 7, 9]
    assert stats.median(x) == 4.5
    assert stats.cv(x) == pytest.approx(0.427618, abs=1e-6)
    assert np.isnan(stats.cv([3.0]))
    with pytest.raises(ValueError):
        stats.median([])


def test_bootstrap_is_seeded_and_covers():
    x = [10.0, 10.5, 9.8, 10.2, 10.1, 9.9, 30.0]
    assert stats.bootstrap_ci(x, seed=3) == stats.bootstrap_ci(x, seed=3)
    low, high = stats.bootstrap_ci(x)
    assert low <= stats.median(x) <= high and high < 30     # the median's CI ignores the outlier
    assert stats.bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)
    s = stats.summarise(x)
    assert s["n"] == 7 and s["median"] == 10.1 and s["max"] == 30.0


def test_min_p_value():
    # exact one-sided Mann-Whitney: 1/C(4,2) = 1/6, 1/C(6,3) = 1/20, 1/C(8,4) = 1/70
    assert stats.min_p_value(2, 2) == pytest.approx(1 / 6)
    assert stats.min_p_value(3, 3) == pytest.approx(0.05)
    assert stats.min_p_value(4, 4) == pytest.approx(1 / 70)


def test_regression_higher_is_better():
    # bandwidth drops: all 5 candidate values below all 5 baseline values -> exact p = 1/C(10,5) = 1/252;
    # medians 10.5 -> 9.1: effect (10.5 - 9.1) / 10.5 = 0.1333 >= 0.05 -> regression
    r = stats.compare([10, 11, 10.5, 10.2, 10.8], [9, 9.2, 9.1, 8.9, 9.3], better="higher")
    assert r["verdict"] == "regression" and r["p_value"] == pytest.approx(1 / 252)
    assert r["effect"] == pytest.approx(0.13333, abs=1e-5) and r["test"].startswith("mann-whitney")
    # the same numbers as latencies (lower is better) are an improvement
    r = stats.compare([10, 11, 10.5, 10.2, 10.8], [9, 9.2, 9.1, 8.9, 9.3], better="lower")
    assert r["verdict"] == "improvement" and r["effect"] == pytest.approx(-0.13333, abs=1e-5)


def test_small_effect_is_no_change():
    # separated but only 1 % apart: significant, below min_effect 5 % -> no change
    r = stats.compare([100, 100.2, 100.4, 100.6, 100.8], [99, 99.2, 99.4, 99.6, 99.8])
    assert r["p_worse"] < 0.05 and r["effect"] == pytest.approx(0.01, abs=1e-3)
    assert r["verdict"] == "no change"


def test_tiny_samples():
    r = stats.compare([10, 11], [5, 6])
    assert r["verdict"] == "insufficient data" and "2 vs 2" in r["reason"]
    r = stats.compare([1.0, 1.1, 1.05, 1.02], [2.0, 2.1, 2.2, 2.05], better="lower")   # p = 1/70
    assert r["verdict"] == "regression" and r["p_value"] == pytest.approx(1 / 70)
    with pytest.raises(ValueError):
        stats.compare([1, 2, 3], [1, 2, 3], better="more")


def test_histogram_quantile_by_hand():
    # counts 10, 60, 29, 1 at 1..4 us (total 100): cumulative 10, 70, 99, 100 -> the median is the
    # first bin reaching 50 (2 us), p99 the first reaching 99 (3 us), p99.9 the first reaching 99.9 (4 us)
    v, c = [1.0, 2.0, 3.0, 4.0], [10, 60, 29, 1]
    assert [stats.histogram_quantile(v, c, q) for q in (0.5, 0.99, 0.999, 1.0)] == [2.0, 3.0, 4.0, 4.0]
    assert stats.histogram_quantile([4.0, 1.0], [1, 3], 0.5) == 1.0       # unsorted bins
    with pytest.raises(ValueError):
        stats.histogram_quantile(v, [0, 0, 0, 0], 0.5)


def test_identical_samples_and_zero_baseline():
    r = stats.compare([1, 1, 1, 1], [1, 1, 1, 1])
    assert r["verdict"] == "no change" and r["effect"] == 0
    # a zero baseline median: the effect is relative to the candidate, (1 - 0) / 1 = 1 (lower is better)
    r = stats.compare([0, 0, 0, 0, 0], [1, 1, 1, 1, 1], better="lower")
    assert r["verdict"] == "regression" and r["effect"] == 1.0
