"""The report's per-case table, computed on whole columns, equals the plain per-group reading of
the tidy table (a loop over groups, kept here as the oracle), and a hand-written case with repeats
(written from the raw rows, not from either computation)."""
import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from crosstalk import examples_root
from crosstalk.analysis.collect import collect
from crosstalk.analysis.report import experiment_table, format_number


def per_group_table(perf):
    rows, seen = [], set()
    perf = perf.assign(environ=perf["environ"].fillna("-"), case=perf["case"].str.split(" %repeat=").str[0])
    for (platform, origin, partition, environ, case, metric), group in perf.groupby(
            ["platform", "origin", "partition", "environ", "case", "metric"], sort=True):
        ref = group["ref_value"].dropna()
        lo, hi = group["ref_lower"].iloc[0], group["ref_upper"].iloc[0]
        bounds = f" [{lo:+.0%}, {hi:+.0%}]" if pd.notna(lo) and pd.notna(hi) else ""
        row = {"target": f"{platform}:{partition}+{environ}", "origin": origin, "case": case.split(" %repeat=")[0],
               "metric": metric, "median": group["value"].median(), "min": group["value"].min(),
               "max": group["value"].max(), "n": len(group), "unit": group["unit"].iloc[0],
               "reference": f"{format_number(ref.iloc[0])}{bounds}" if not ref.empty else "none (explore)",
               "result": "fail" if "fail" in set(group["result"]) else "pass"}
        if (row["target"], row["case"], row["metric"]) not in seen:
            seen.add((row["target"], row["case"], row["metric"]))
            rows.append(row)
    return sorted(rows, key=lambda r: r["origin"] != "user")


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for key in w:
            both_nan = isinstance(w[key], float) and math.isnan(w[key]) and math.isnan(g[key])
            assert both_nan or g[key] == w[key], (key, g, w)


@pytest.fixture(scope="module")
def perf():
    with tempfile.TemporaryDirectory() as empty:
        table = collect(Path(empty), None, examples_root())[0]
    assert not table.empty
    return table


def test_the_shipped_examples_give_the_per_group_table(perf):
    assert_same(experiment_table(perf), per_group_table(perf))


def test_missing_references_failures_and_a_users_platform(perf):
    """What the examples may lack: a group whose first row has no reference but a later one has,
    bounds missing, failed repeats, NaN values, and a user's platform listed before the examples."""
    edited = perf.copy()
    edited.loc[edited.index[::3], "ref_value"] = float("nan")
    edited.loc[edited.index[::5], "ref_lower"] = float("nan")
    edited.loc[edited.index[::7], "result"] = "fail"
    edited.loc[edited.index[::11], "value"] = float("nan")
    user = edited.iloc[::2].assign(origin="user", platform=lambda df: df["platform"] + "-mine")
    edited = pd.concat([edited, user], ignore_index=True)
    want = per_group_table(edited)
    assert {r["result"] for r in want} == {"pass", "fail"} and want[0]["origin"] == "user"
    assert any(r["reference"] != "none (explore)" for r in want)
    assert_same(experiment_table(edited), want)


def test_no_rows_no_table():
    assert experiment_table(pd.DataFrame(columns=["platform", "origin", "partition", "case", "metric",
                                                  "value", "unit", "result", "ref_value", "ref_lower",
                                                  "ref_upper"])) == []


def test_every_repeat_of_a_case_counts():
    """Two repeats of one case, 1 and 999, the second failed: one row over both (median 500, n 2,
    failed). The table once kept the first repeat's row only (median 1, n 1, pass)."""
    base = {"platform": "p", "origin": "user", "partition": "mpi", "environ": "gnu-openmpi",
            "metric": "bandwidth", "unit": "MiB/s", "ref_value": float("nan"),
            "ref_lower": float("nan"), "ref_upper": float("nan")}
    perf = pd.DataFrame([{**base, "case": "RmaMt %op=put %repeat=0", "value": 1.0, "result": "pass"},
                         {**base, "case": "RmaMt %op=put %repeat=1", "value": 999.0, "result": "fail"},
                         {**base, "case": "RmaMt %op=get %repeat=0", "value": 7.0, "result": "pass"}])
    rows = {r["case"]: r for r in experiment_table(perf)}
    assert set(rows) == {"RmaMt %op=put", "RmaMt %op=get"}
    put = rows["RmaMt %op=put"]
    assert (put["median"], put["min"], put["max"], put["n"], put["result"]) == (500.0, 1.0, 999.0, 2, "fail")
    get = rows["RmaMt %op=get"]
    assert (get["median"], get["n"], get["result"]) == (7.0, 1, "pass")
