"""The report's per-case table, computed on whole columns, equals the plain per-group reading of
the tidy table (the way it was computed before, kept here as the oracle)."""
import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from crosstalk import examples_root
from crosstalk.ingest import collect
from crosstalk.report import experiment_table, format_number


def per_group_table(perf):
    rows, seen = [], set()
    perf = perf.assign(environ=perf["environ"].fillna("-"))
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
