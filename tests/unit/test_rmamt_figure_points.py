"""The RMA-MT figures' one-thread point: a series whose runs had no one-thread case (the quick
profile runs none) takes it from the one-thread baselines its cases of more threads measured in
turn in the same process; a series with its own one-thread case keeps only that."""
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
                                           "bandwidth_one_thread": 9.0, "message_rate_one_thread": 7.0})
                        + _perf("full", 1, {"latency": 21.0, "bandwidth": 8.0})
                        + _perf("full", 2, {"latency": 31.0, "latency_one_thread": 19.0}))
    cases = rmamt_cases(perf, ["s"])
    latency = {(r.partition, r.threads): r.latency for r in cases.itertuples()}
    assert len(cases) == 4 and latency == {("quick", 2): 30.0, ("quick", 1): 20.0,   # derived: quick's
                                           ("full", 1): 21.0, ("full", 2): 31.0}     # full's own only
    one = cases[(cases.partition == "quick") & (cases.threads == 1)]
    assert one["bandwidth"].item() == 9.0 and one["message_rate"].item() == 7.0
