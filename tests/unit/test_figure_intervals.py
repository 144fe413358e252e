"""The figures' error bars are the claims' intervals (crosstalk.claims.judge), not a statistic of
their own: the median's exact interval where the samples allow it, the range (marked) where not;
a ratio paired round by round inside its jobs as the claims pair it, else a quotient of medians of
separate jobs with the claims' interval of that quotient."""
import numpy as np
import pandas as pd
import pytest

from crosstalk.claims.judge import Separate, median_interval, quotient_interval, separate_verdict
from crosstalk.figures import (
    as_pct,
    median_with_interval,
    per_job,
    quotient_with_interval,
    ratio_with_interval,
    summarise,
)
from crosstalk.figures.sandia import changes


def test_the_median_gets_the_claims_interval_where_the_samples_allow_it():
    x = np.arange(1.0, 12.0)
    out = median_with_interval(x)
    assert out["exact"] and (out["low"], out["high"]) == median_interval(x)[:2] and out["n"] == 11
    few = median_with_interval([3.0, 1.0, 2.0])
    assert not few["exact"] and (few["low"], few["median"], few["high"]) == (1.0, 2.0, 3.0)


def test_summarise_keeps_the_range_unless_asked_for_the_claims_interval():
    df = pd.DataFrame({"k": [1] * 9, "value": np.arange(9.0)})
    assert summarise(df, ["k"]).loc[0, ["low", "high"]].tolist() == [0.0, 8.0]
    claims = summarise(df, ["k"], interval="claims").iloc[0]
    assert claims["exact"] and [claims["low"], claims["high"]] == list(median_interval(np.arange(9.0))[:2])


def test_a_quotient_of_separate_jobs_gets_the_interval_the_claims_judge_it_with():
    rng = np.random.default_rng(0)
    a, b = 2 * rng.lognormal(0, 0.1, 8), rng.lognormal(0, 0.1, 8)
    out = quotient_with_interval(a, b)
    judged = separate_verdict(Separate(a, b), None, None)
    assert out["exact"] and (out["low"], out["high"]) == quotient_interval(a, b)[:2] == (judged["ci_low"],
                                                                                         judged["ci_high"])
    assert out["median"] == pytest.approx(judged["estimate"])
    few = quotient_with_interval(a[:3], b[:3])
    assert not few["exact"] and few["low"] == pytest.approx(a[:3].min() / b[:3].max())


def test_a_ratio_pairs_round_by_round_where_its_jobs_measured_the_baseline():
    loaded = pd.DataFrame({"t": [2.0, 4.0, 6.0, 8.0, 10.0, 12.0], "t_alone": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    paired = ratio_with_interval(loaded, "t", "t_alone", pd.Series([100.0]))
    assert paired["paired"] and paired["median"] == 2.0 and paired["exact"] and paired["low"] == paired["high"] == 2.0
    apart = ratio_with_interval(loaded.drop(columns="t_alone"), "t", "t_alone", pd.Series([1.0, 2.0]))
    assert not apart["paired"] and apart["median"] == pytest.approx(7.0 / 1.5)


def test_rounds_of_one_job_are_one_sample_against_another_job():
    rows = pd.DataFrame({"run_id": ["r"] * 4, "sample": [0, 0, 1, 1], "round": [0, 1, 0, 1], "case": ["c"] * 4,
                         "t": [1.0, 3.0, 10.0, 20.0]})
    assert sorted(per_job(rows, "t")) == [2.0, 15.0]


def test_sand_changes_are_the_claims_quotients_as_percent():
    rng = np.random.default_rng(1)
    rows = [{"target": "p:q", "run_id": f"r{i}", "link": link, "time_s": base * rng.lognormal(0, 0.05),
             "energy_j": 10 * base} for i in range(8) for link, base in (("4X", 1.0), ("1X", 3.0))]
    cases = pd.DataFrame(rows)
    out = changes(cases, lambda p: p["link"] == "4X", "link", ["1X"], ["time_s"])["p:q"]["1X"]["time_s"]
    four, one = cases[cases.link == "4X"]["time_s"], cases[cases.link == "1X"]["time_s"]
    assert out["exact"] and (out["low"], out["high"]) == quotient_interval(one, four)[:2]
    pct = as_pct(out)
    assert pct["low"] < pct["median"] < pct["high"] and pct["median"] == pytest.approx(100 * (out["median"] - 1))
