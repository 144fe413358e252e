"""Figures whose baseline condition is measured inside the compared job (the quick profile runs no
case of its own for it). RMA-MT's one-thread point: a series whose runs had no one-thread case
takes it from the one-thread baselines its cases of more threads measured in turn in the same
process; a series with its own one-thread case keeps only that. NiMC apps' slowdown: each round's
time over the same job's run alone."""
import json

import pandas as pd

from crosstalk.figures.rmamt import rmamt_cases


def _perf(partition, threads, metrics):
    return [{"system": "s", "host_class": "h", "host_label": "l", "origin": "user", "platform": "s@h",
             "partition": partition, "environ": "ompi", "experiment": "rma-mt", "test": "RmaMt",
             "case": f"RmaMt t={threads}", "params": json.dumps({"op": "put", "sync": "lock", "threads": threads}),
             "metric": metric, "value": value, "unit": "u", "sample": 0, "round": 0, "run_id": "r"}
            for metric, value in metrics.items()]


def test_a_series_without_a_one_thread_case_takes_the_in_job_baseline():
    perf = pd.DataFrame(_perf("quick", 2, {"latency": 30.0, "latency_one_thread": 20.0, "bandwidth": 5.0,
                                           "bandwidth_one_thread": 9.0, "op_rate_one_thread": 7.0})
                        + _perf("full", 1, {"latency": 21.0, "bandwidth": 8.0})
                        + _perf("full", 2, {"latency": 31.0, "latency_one_thread": 19.0}))
    cases = rmamt_cases(perf, ["s"])
    latency = {(r.partition, r.threads): r.latency for r in cases.itertuples()}
    assert len(cases) == 4 and latency == {("quick", 2): 30.0, ("quick", 1): 20.0,   # derived: quick's
                                           ("full", 1): 21.0, ("full", 2): 31.0}     # full's own only
    one = cases[(cases.partition == "quick") & (cases.threads == 1)]
    assert one["bandwidth"].item() == 9.0 and one["op_rate"].item() == 7.0


def test_an_application_slowdown_is_the_median_of_each_rounds_ratio_in_its_job():
    from crosstalk.figures.nimc import app_slowdown
    # rounds alone 10, 20, 30 s; under injection 15, 22, 60 s: ratios 1.5, 1.1, 2.0 (median 1.5);
    # the ratio of the medians would be 22 / 20 = 1.1
    paired = pd.DataFrame({"injection": ["max"] * 3, "time_s": [15.0, 22.0, 60.0], "time_s_alone": [10.0, 20.0, 30.0]})
    assert app_slowdown(paired) == (1.5, 20.0, 22.0)
    # a run recorded before the in-job baseline: the off case's median is the baseline
    old = pd.DataFrame({"injection": ["off", "off", "max"], "time_s": [10.0, 12.0, 13.2]})
    assert app_slowdown(old) == (1.2, 11.0, 13.2)


def test_a_victims_impact_is_the_median_of_each_rounds_ci_in_its_job():
    from crosstalk.figures.gpcnet import victim_impact
    paired = pd.DataFrame({"victim_load": ["incast"] * 3, "victim_time_s": [15.0, 22.0, 60.0],
                           "victim_time_s_alone": [10.0, 20.0, 30.0]})
    impact = victim_impact(paired)
    assert impact["paired"] and (impact["median"], impact["low"], impact["high"], impact["n"]) == (1.5, 1.1, 2.0, 3)
    old = pd.DataFrame({"victim_load": ["off", "off", "incast"], "victim_time_s": [10.0, 12.0, 13.2]})
    impact = victim_impact(old)
    assert not impact["paired"] and impact["median"] == 13.2 / 11.0 and impact["n"] == 1
