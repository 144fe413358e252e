"""A case measured in paired rounds (reframe-tests/xtlib/rounds.py) becomes one row per round, and
the claims pair two conditions round by round: k rounds of one job are k samples."""
import json
import shutil

import pandas as pd
import pytest
from xt_testing import REPO

from crosstalk.analysis.ingest import PERF_COLUMNS, load_run
from crosstalk.claims import judge_claim
from crosstalk.claims.operands import SAMPLE_KEY, Table, values
from crosstalk.errors import InputError
from crosstalk.specs import load_spec

(RUN,) = sorted((REPO / "tests" / "fixtures" / "runs" / "local" / "runs").iterdir())
CASE = "StreamTriad %threads=1 %repeat=0"


def with_rounds(tmp_path, rounds):
    """A copy of the fixture run whose CASE reports ``rounds`` (ReFrame's report field)."""
    dest = tmp_path / "local" / "runs" / RUN.name
    shutil.copytree(RUN, dest)
    report = json.loads((dest / "report.json").read_text())
    for case in report["runs"][0]["testcases"]:
        if case["name"] == CASE:
            case["round_values"] = rounds
    (dest / "report.json").write_text(json.dumps(report))
    return dest


def test_every_round_is_a_row_and_other_cases_keep_one(tmp_path):
    perf, _ = load_run(with_rounds(tmp_path, {"triad_bw": [3.0, 1.0, 2.0]}))
    df = pd.DataFrame(perf, columns=PERF_COLUMNS)
    triad = df[(df.case == CASE) & (df.metric == "triad_bw")]
    assert list(triad["round"]) == [0, 1, 2] and list(triad["value"]) == [3.0, 1.0, 2.0]
    assert triad["sample"].nunique() == 1 and set(triad["result"]) == {"pass"}
    # the case's other metric and the other cases: one row each, round 0, the reported value
    copy = df[(df.case == CASE) & (df.metric == "copy_bw")]
    assert list(copy["round"]) == [0] and copy["value"].iloc[0] == pytest.approx(24739.2178360612)
    before = pd.DataFrame(load_run(RUN)[0], columns=PERF_COLUMNS)
    assert len(df) == len(before) + 2 and (before["round"] == 0).all()


@pytest.mark.parametrize("rounds, field", [
    ([1.0, 2.0], "round_values"),                     # not a mapping
    ({"triad_bw": []}, "round_values.triad_bw"),       # no round
    ({"triad_bw": [1.0, "x"]}, "round_values.triad_bw"),
])
def test_malformed_rounds_are_refused_naming_the_field(tmp_path, rounds, field):
    with pytest.raises(InputError, match=rf"report\.json: {CASE}: {field}: "):
        load_run(with_rounds(tmp_path, rounds))


def rounds_table(isolated, congested):
    """Two congestion cases of one job (isolated and congested bandwidth), one row per round."""
    rows = [{"experiment": "congestion", "metric": metric, "params": json.dumps({"congestors": "p2p_incast"}),
             "value": v, "unit": "MiB/s/rank", "run_id": "r", "partition": "p", "environ": "e",
             "repeat": 0, "sample": 0, "round": r, "case": "CongestionCanary %congestors=p2p_incast"}
            for metric, series in (("bw_isolated_avg", isolated), ("bw_congested_avg", congested))
            for r, v in enumerate(series)]
    perf = pd.DataFrame(rows)
    cases = perf[["experiment", "params", "environ"]].drop_duplicates().assign(result="pass", reason=None)
    return Table(perf), cases


def test_conditions_pair_round_by_round():
    # The host drifts 10x between rounds; within each round congestion halves the bandwidth.
    isolated = [100.0, 1000.0, 10.0, 500.0, 50.0]
    table, _ = rounds_table(isolated, [v / 2 for v in isolated])
    ratio = values({"ratio": [{"metric": "bw_congested_avg"}, {"metric": "bw_isolated_avg"}]}, table, "congestion")
    assert list(ratio.index.names) == SAMPLE_KEY
    assert list(ratio) == [0.5] * 5


def test_one_job_of_five_rounds_decides_a_claim():
    """gpcnet-incast-slows-bw (the shipped claim): five rounds of one job are five paired samples,
    enough for the judge's 90 % interval; with one round per job it stays inconclusive."""
    spec = load_spec("congestion")
    claim = next(c for c in spec.data["claims"] if c["id"] == "gpcnet-incast-slows-bw")
    isolated = [100.0, 1000.0, 10.0, 500.0, 50.0]
    table, cases = rounds_table(isolated, [v * 0.6 for v in isolated])
    out = judge_claim(spec, claim, table, cases)
    assert out["verdict"] == "reproduced" and out["groups"][0]["n"] == 5
    table, cases = rounds_table(isolated[:1], [isolated[0] * 0.6])
    assert judge_claim(spec, claim, table, cases)["verdict"] == "inconclusive"


def test_a_reference_is_calibrated_from_the_reported_values_not_the_rounds(tmp_path):
    """ReFrame checks a case's reported value (the median over its rounds) against the reference,
    so calibration reads that median: one value per case sample, whatever its rounds."""
    import statistics

    import yaml

    from crosstalk.analysis.references import calibrate
    run = with_rounds(tmp_path, {"triad_bw": [3.0, 1.0, 2.0]})
    (path,) = calibrate("local", [run], out_dir=tmp_path / "refs")
    refs = yaml.safe_load(path.read_text())
    perf = pd.DataFrame(load_run(RUN)[0], columns=PERF_COLUMNS)
    triad = perf[(perf.metric == "triad_bw") & perf.case.str.startswith("StreamTriad %threads=1 ")]
    values = [2.0 if case == CASE else v for case, v in zip(triad["case"], triad["value"])]
    (node,) = [v for v in refs["StreamTriad"].values() if isinstance(v, dict)]
    (by_environ,) = node.values()
    assert by_environ[1]["triad_bw"][0] == pytest.approx(float(f"{statistics.median(values):.6g}"))
    assert refs["crosstalk_calibration"]["StreamTriad"]["values_per_reference"] == 5


def test_a_metric_without_rounds_pairs_with_the_median_of_anothers_rounds():
    """gpcnet-app-ci-below-canary-ci divides the victim's time (one per job) by the canary's impact
    (one per round): each copy pairs with the median of the other copy's rounds, not its round 0."""
    rows = [{"experiment": "congestion", "metric": "ci", "params": "{}", "value": v, "unit": "x",
             "run_id": "r", "partition": p, "environ": "e", "repeat": 0, "sample": 0, "round": r, "case": "C"}
            for p in ("mpi", "slurm") for r, v in enumerate([1.0, 100.0, 3.0])]
    rows += [{"experiment": "congestion", "metric": "victim", "params": "{}", "value": 6.0, "unit": "s",
              "run_id": "r", "partition": p, "environ": "e", "repeat": 0, "sample": 0, "round": 0, "case": "V"}
             for p in ("mpi", "slurm")]
    ratio = values({"ratio": [{"metric": "victim"}, {"metric": "ci"}]}, Table(pd.DataFrame(rows)), "congestion")
    assert list(ratio) == [2.0, 2.0]                 # 6 / median(1, 100, 3)


def test_compare_reads_one_reported_value_per_case_sample(tmp_path):
    """crosstalk compare tests medians of runs' reported values: a case's rounds count once."""
    from crosstalk.analysis.ingest import reported
    df = pd.DataFrame(load_run(with_rounds(tmp_path, {"triad_bw": [3.0, 1.0, 2.0]}))[0], columns=PERF_COLUMNS)
    out = reported(df)
    plain = pd.DataFrame(load_run(RUN)[0], columns=PERF_COLUMNS)
    assert len(out) == len(plain)
    mine = out[(out.case == CASE) & (out.metric == "triad_bw")]
    assert list(mine["value"]) == [2.0]
    others = out[out.case != CASE].sort_values(["case", "metric"])["value"].to_numpy()
    assert list(others) == list(plain[plain.case != CASE].sort_values(["case", "metric"])["value"])


def test_rounds_of_separate_jobs_are_one_sample_each():
    """Rounds pair round by round only within a job that measured both conditions; where the two
    conditions are separate jobs (injection off and on), each job is one sample, its rounds' median,
    so three rounds of two jobs are one paired sample, not three (they share each job's moment)."""
    rows = [{"experiment": "nimc-apps", "metric": "time_s", "params": json.dumps({"injection": inj}),
             "value": v, "unit": "s", "run_id": "r", "partition": "p", "environ": "e", "repeat": 0,
             "sample": 0, "round": r, "case": f"NimcApps %injection={inj}"}
            for inj, series in (("off", [1.0, 1.1, 5.0]), ("max", [2.0, 2.4, 2.2])) for r, v in enumerate(series)]
    table = Table(pd.DataFrame(rows))
    ratio = values({"ratio": [{"metric": "time_s", "select": {"injection": "max"}},
                              {"metric": "time_s", "select": {"injection": "off"}}]}, table, "nimc-apps")
    assert list(ratio) == [pytest.approx(2.2 / 1.1)]
    # the same job's two metrics (a probe under the load and the idle probe before it) pair by round
    table, _ = rounds_table([10.0, 20.0, 40.0], [5.0, 10.0, 20.0])
    same = values({"ratio": [{"metric": "bw_congested_avg"}, {"metric": "bw_isolated_avg"}]}, table, "congestion")
    assert list(same) == [0.5, 0.5, 0.5]


def test_impacts_paired_in_their_own_jobs_are_judged_apart():
    """gpcnet-app-ci-below-canary-ci (the shipped claim): the victim's slowdown (alone and under
    the incast in turn, one job) against the canary's impact (isolated and congested in turn,
    another job). Each side is paired inside its job, so its rounds are its samples; the sides do
    not pair with each other, so each keeps its own (crosstalk.claims.judge.separate_verdict).
    Three rounds on each of two partitions: 6 per side, decided; pairing the two jobs' medians
    would have left 2 samples (inconclusive)."""
    spec = load_spec("congestion")
    claim = next(c for c in spec.data["claims"] if c["id"] == "gpcnet-app-ci-below-canary-ci")
    rows = []
    for p, scale in (("mpi", 1.0), ("slurm", 3.0)):            # the partitions differ: no matter
        for r in range(3):
            for case, params, metrics in (
                    ("V", {"victim_load": "incast"}, {"victim_time_s": 2.4 + 0.1 * r, "victim_time_s_alone": 2.0}),
                    ("C", {"congestors": "p2p_incast", "pport": 1},
                     {"allreduce_congested_avg": scale * (900 + 100 * r), "allreduce_isolated_avg": scale * 10})):
                rows += [{"experiment": "congestion", "metric": m, "params": json.dumps(params), "value": v,
                          "unit": "u", "run_id": "r", "partition": p, "environ": "e", "repeat": 0, "sample": 0,
                          "round": r, "case": case} for m, v in metrics.items()]
    perf = pd.DataFrame(rows)
    cases = perf[["experiment", "params", "environ"]].drop_duplicates().assign(result="pass", reason=None)
    (group,) = judge_claim(spec, claim, Table(perf), cases)["groups"]
    assert group["verdict"] == "reproduced" and group["n"] == 6
    assert group["estimate"] == pytest.approx(1.25 / 100)       # median slowdown / median impact
    assert group["ci_low"] == pytest.approx(1.2 / 110) and group["ci_high"] == pytest.approx(1.3 / 90)
    # a plain metric of two jobs still pairs per job: one sample per partition
    plain = {**claim["test"], "b": {"metric": "allreduce_congested_avg",
                                    "select": {"congestors": "p2p_incast", "pport": 1}}}
    (group,) = judge_claim(spec, {**claim, "test": plain}, Table(perf), cases)["groups"]
    assert group["n"] == 2 and group["verdict"] == "inconclusive"


def test_sides_judged_apart_are_read_where_both_were_measured():
    """A side measured on a partition where the other was not (its case failed there) is left out
    there, and a ratio with a zero denominator is no sample: neither shifts one side's median."""
    spec = load_spec("congestion")
    claim = next(c for c in spec.data["claims"] if c["id"] == "gpcnet-app-ci-below-canary-ci")
    rows = []
    for p, victim_ok in (("mpi", True), ("slurm", False), ("extra", True)):
        for r in range(3):
            cases = [("C", {"congestors": "p2p_incast", "pport": 1},
                      {"allreduce_congested_avg": 1000.0, "allreduce_isolated_avg": 10.0 if r else 0.0})]
            if victim_ok:
                cases.append(("V", {"victim_load": "incast"},
                              {"victim_time_s": 3.0 if p == "extra" else 2.4, "victim_time_s_alone": 2.0}))
            rows += [{"experiment": "congestion", "metric": m, "params": json.dumps(params), "value": v,
                      "unit": "u", "run_id": "r", "partition": p, "environ": "e", "repeat": 0, "sample": 0,
                      "round": r, "case": case} for case, params, metrics in cases for m, v in metrics.items()]
    perf = pd.DataFrame(rows)
    cases = perf[["experiment", "params", "environ"]].drop_duplicates().assign(result="pass", reason=None)
    (group,) = judge_claim(spec, claim, Table(perf), cases)["groups"]
    # canary: rounds 1-2 of mpi and extra (round 0's zero isolated time is no sample, slurm has no
    # victim): 4 values of 100; victim: 1.2 x 3 and 1.5 x 3
    assert group["n"] == 4 and group["estimate"] == pytest.approx(1.35 / 100)


def test_a_reference_is_calibrated_from_every_run_given(tmp_path):
    """Runs given together are pooled: each contributes its values, and each is recorded."""
    import yaml

    from crosstalk.analysis.references import calibrate
    first = with_rounds(tmp_path / "a", {"triad_bw": [3.0, 1.0, 2.0]})
    second = tmp_path / "b" / "local" / "runs" / f"{RUN.name}-again"
    shutil.copytree(first, second)
    (path,) = calibrate("local", [first, second], out_dir=tmp_path / "refs")
    calibration = yaml.safe_load(path.read_text())["crosstalk_calibration"]["StreamTriad"]
    assert calibration["values_per_reference"] == 2 * 5
    assert sorted(calibration["runs"]) == sorted([str(first), str(second)])
