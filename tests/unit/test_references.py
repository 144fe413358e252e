"""Reference tolerances and ReFrame thresholds (crosstalk.analysis.references)."""
import pytest
import reframe.utility.sanity as sn

from crosstalk.analysis.references import DEFAULT_MIN_MARGIN, SINGLE_VALUE_MARGIN, thresholds, tolerance


def test_tolerance_is_k_robust_cvs_with_a_floor():
    values = [100, 102, 98, 100, 101, 99, 100]   # median 100, MAD 1 -> robust CV 0.0148
    assert tolerance(values, k=10) == pytest.approx(10 * 1.4826 * 1 / 100)


def test_tolerance_covers_the_worst_deviation_seen():
    # One stalled run at a quarter of the rest: MAD alone would give 3 x 0.022 = 0.067.
    values = [100, 101, 99, 100, 25]
    assert tolerance(values, k=3) == pytest.approx(1.5 * 0.75)
    assert tolerance([100, 100, 100]) == DEFAULT_MIN_MARGIN
    assert tolerance([42.0]) == SINGLE_VALUE_MARGIN


@pytest.mark.parametrize("reference, tol, better, expected", [
    (100.0, 0.2, "higher", (-0.2, None)),
    (100.0, 2.5, "higher", (-1.0, None)),      # ReFrame refuses < -1 for a positive reference
    (100.0, 2.5, "lower", (None, 2.5)),
    (-5.0, 2.5, "higher", (-2.5, None)),
    (-5.0, 2.5, "lower", (None, 1.0)),
])
def test_thresholds_are_one_sided_and_valid_for_reframe(reference, tol, better, expected):
    lower, upper = thresholds(reference, tol, better)
    assert (lower, upper) == expected
    # ReFrame itself accepts them: a value at the reference passes, one far on the worse side fails.
    assert sn.evaluate(sn.assert_reference(reference, reference, lower, upper))
    worse = reference - 10 * abs(reference) - 1 if better == "higher" else reference + 10 * abs(reference) + 1
    if (better == "higher" and lower != -1.0) or better == "lower":
        with pytest.raises(sn.SanityError):
            sn.evaluate(sn.assert_reference(worse, reference, lower, upper))
