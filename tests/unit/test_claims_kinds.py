"""The claim kinds beyond a direction and a ratio, on small tidy tables built the way the collection
builds them (one row per case, metric and sample): a spread over a parameter, a ranking judged
pair by pair, a least-squares fit, and `where:` (a claim about other platforms is not applicable).
The numbers are exact so each verdict is decided by construction, not by chance."""
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from crosstalk.claims import judge_claim
from crosstalk.claims.operands import Table
from crosstalk.site.systemfacts import capabilities_of, nic_kind, unmet

SPEC = SimpleNamespace(name="stream", data={})     # a real spec: a not-run reason reads its profiles


def table(rows):
    """rows: (params dict, metric, sample, value) -> a platform's Table and its cases."""
    perf = pd.DataFrame([{"experiment": "stream", "metric": metric, "params": json.dumps(params, sort_keys=True),
                          "value": float(value), "unit": "u", "run_id": "r", "partition": "p",
                          "environ": "e", "repeat": 0, "sample": sample, "round": 0, "case": "c"}
                         for params, metric, sample, value in rows])
    cases = perf[["experiment", "params", "environ"]].drop_duplicates().assign(result="pass", reason=None)
    return Table(perf), cases


def claim(test, where=None):
    return {"id": "c", "test": test, **({"where": where} if where else {})}


def test_a_spread_is_the_best_over_the_worst_value_of_a_parameter_per_sample():
    # core 1 is 1.5x core 0 in every sample (with a little spread): the paper's 1.2x is cleared
    rows = [({"core": c}, "bandwidth", s, (3.0 if c == 1 else 2.0) * (1 + 0.01 * s)) for c in (0, 1) for s in range(6)]
    t, cases = table(rows)
    test = {"kind": "ratio", "num": {"spread": {"metric": "bandwidth"}, "over": "core"}, "band": [1.2, None]}
    out = judge_claim(SPEC, claim(test), t, cases)
    assert out["verdict"] == "reproduced" and out["groups"][0]["estimate"] == pytest.approx(1.5)
    flat = [({"core": c}, "bandwidth", s, 2.0 + 0.01 * s) for c in (0, 1) for s in range(6)]
    t, cases = table(flat)
    assert judge_claim(SPEC, claim(test), t, cases)["verdict"] == "contradicted"


def test_a_spread_over_listed_values_ignores_the_others_and_needs_all_of_them():
    rows = [({"mapping": m}, "comm_s", s, v) for s in range(6)
            for m, v in (("compact", 1.0), ("compact_swapped", 2.5), ("scatter", 9.0))]
    t, cases = table(rows)
    test = {"kind": "ratio", "band": [2.0, None],
            "num": {"spread": {"metric": "comm_s"}, "over": "mapping", "values": ["compact", "compact_swapped"]}}
    assert judge_claim(SPEC, claim(test), t, cases)["groups"][0]["estimate"] == pytest.approx(2.5)
    test["num"]["values"] = ["compact", "scatter_swapped"]          # one of them never measured
    assert judge_claim(SPEC, claim(test), t, cases)["verdict"] == "not run"


def ranking(order_values, tolerance=0.0):
    rows = [({"link": link}, "time_s", s, v * (1 + 0.001 * s)) for s in range(6)
            for link, v in zip(["4X", "2X", "1X"], order_values)]
    t, cases = table(rows)
    test = {"kind": "ranking", "value": {"metric": "time_s"}, "over": "link", "order": ["4X", "2X", "1X"],
            "expect": "ascending", "tolerance": tolerance}
    return judge_claim(SPEC, claim(test), t, cases)


def test_a_ranking_is_judged_pair_by_pair_and_fails_on_the_pair_out_of_order():
    ok = ranking([1.0, 2.0, 4.0])
    assert ok["verdict"] == "reproduced"
    assert [g["group"] for g in ok["groups"]] == ["link=4X <= link=2X", "link=2X <= link=1X"]
    bad = ranking([1.0, 2.0, 1.5])
    assert bad["verdict"] == "contradicted"
    assert [g["verdict"] for g in bad["groups"]] == ["reproduced", "contradicted"]


def test_a_ranking_tolerance_lets_neighbours_tie():
    assert ranking([1.0, 0.99, 2.0])["verdict"] == "contradicted"       # 1 % faster at half bandwidth
    assert ranking([1.0, 0.99, 2.0], tolerance=0.02)["verdict"] == "reproduced"


def test_group_by_makes_groups_only_of_cases_that_measure_the_compared_metrics():
    # Each narrower link's job also measures at the next wider one (time_s_wider); 4X has no wider
    # link, so it is no group of the claim rather than a "not run" one.
    rows = [({"link": link}, metric, s, v * (1 + 0.001 * s)) for s in range(6)
            for link, pairs in (("4X", {"time_s": 1.0}), ("2X", {"time_s": 2.0, "time_s_wider": 1.0}),
                                ("1X", {"time_s": 3.95, "time_s_wider": 4.0}))
            for metric, v in pairs.items()]
    t, cases = table(rows)
    test = {"kind": "ratio", "group_by": ["link"], "num": {"metric": "time_s"}, "den": {"metric": "time_s_wider"},
            "band": [0.98, None]}
    out = judge_claim(SPEC, claim(test), t, cases)
    assert [g["group"] for g in out["groups"]] == ["link=1X", "link=2X"]
    assert out["verdict"] == "reproduced"           # 1X at 0.9875 of 2X: inside the 2 % tolerance
    rows = [r if r[0]["link"] != "1X" or r[1] != "time_s" else (r[0], r[1], r[2], 3.0) for r in rows]
    t, cases = table(rows)
    assert judge_claim(SPEC, claim(test), t, cases)["verdict"] == "contradicted"    # 1X faster than 2X


def test_a_linear_loss_fit_recovers_the_slope_with_its_interval():
    """y = 1000 - 14 x with +-1 % noise, x = 0 (injection off: no x rows at all), 100, 200, 300,
    4 samples each: the fitted loss is 14 B/B within 10 %, inside a narrow interval."""
    rng = np.random.default_rng(0)
    rows = []
    for s in range(4):
        rows.append(({"injection": "off"}, "triad_bw", s, 1000 * (1 + 0.01 * rng.standard_normal())))
        for x in (100, 200, 300):
            rows.append(({"injection": x}, "triad_bw", s, (1000 - 14 * x / 10) * (1 + 0.01 * rng.standard_normal())))
            rows.append(({"injection": x}, "injected_bw", s, x / 10))
    t, cases = table(rows)
    test = {"kind": "fit", "model": "linear-loss", "x": {"metric": "injected_bw"}, "y": {"metric": "triad_bw"},
            "x_zero": {"injection": "off"}, "band": [0, None]}
    group = judge_claim(SPEC, claim(test), t, cases)["groups"][0]
    assert group["verdict"] == "reproduced" and group["n"] == 16
    assert group["estimate"] == pytest.approx(14, rel=0.1)
    assert group["ci_low"] < group["estimate"] < group["ci_high"] and group["ci_high"] - group["ci_low"] < 4
    test["band"] = [20, None]                                       # the paper's LLC figure: not here
    assert judge_claim(SPEC, claim(test), t, cases)["verdict"] == "contradicted"


def test_a_fit_without_two_levels_of_x_is_not_run():
    rows = [({"injection": "off"}, "triad_bw", s, 1000.0 + s) for s in range(6)]
    t, cases = table(rows)
    test = {"kind": "fit", "model": "linear-loss", "x": {"metric": "injected_bw"}, "y": {"metric": "triad_bw"},
            "x_zero": {"injection": "off"}, "band": [0, None]}
    assert judge_claim(SPEC, claim(test), t, cases)["verdict"] == "not run"


def test_where_leaves_other_platforms_out_with_the_reason():
    t, cases = table([({"core": 0}, "bandwidth", s, 1.0) for s in range(6)])
    test = {"kind": "ratio", "num": {"metric": "bandwidth"}, "band": [0, None]}
    out = judge_claim(SPEC, claim(test, {"kind": ["cluster"]}), t, cases, {"kind": "vcluster"})
    assert out["verdict"] == "not applicable"
    assert out["groups"][0]["reason"] == "needs kind cluster; this platform's is vcluster"
    judged = judge_claim(SPEC, claim(test, {"kind": ["cluster"]}), t, cases, {"kind": "cluster"})
    assert judged["verdict"] == "reproduced"
    # a fact the run did not record keeps the claim: judged, not silently dropped
    assert judge_claim(SPEC, claim(test, {"kind": ["cluster"]}), t, cases, {})["verdict"] == "reproduced"
    assert unmet({"sockets": {"min": 2}}, {"sockets": 1}) == "needs sockets min 2; this platform has 1"


def test_a_claim_needing_a_capability_no_partition_has_is_not_applicable():
    """The frequency claims need a partition that can set the CPU frequency: a platform whose
    inventory says none can is outside them (as a 2-core platform is outside an 8-core claim)."""
    prov = {"capabilities": {"mpi": {"cpufreq": False, "link_control": True}, "slurm": {"rapl": True}}}
    assert capabilities_of(prov) == ["link_control", "rapl"]
    assert capabilities_of({}) is None          # recorded before runs kept them: the claim is judged
    t, cases = table([({"core": 0}, "bandwidth", s, 1.0) for s in range(6)])
    test = {"kind": "ratio", "num": {"metric": "bandwidth"}, "band": [0, None]}
    where = {"capabilities": ["cpufreq"]}
    out = judge_claim(SPEC, claim(test, where), t, cases, {"capabilities": capabilities_of(prov)})
    assert out["verdict"] == "not applicable"
    assert out["groups"][0]["reason"].startswith("needs capabilities.cpufreq; no partition of this platform")
    assert judge_claim(SPEC, claim(test, where), t, cases, {"capabilities": ["cpufreq"]})["verdict"] == "reproduced"
    assert judge_claim(SPEC, claim(test, where), t, cases, {"capabilities": None})["verdict"] == "reproduced"


@pytest.mark.parametrize("ports, kind", [
    (["mlx5_0/1 100 Gb/sec (4X EDR)"], "offload"),
    (["hfi1_0/1 100 Gb/sec (4X EDR)"], "onload"),
    (["rxe0/1 10 Gb/sec (1X QDR)"], "onload"),
    ([], "tcp"),
    (["weird0/1 1 Gb/sec"], None),
])
def test_the_nic_kind_follows_the_verbs_device(ports, kind):
    assert nic_kind(ports) == kind


def test_the_balance_note_is_computed_from_the_link_and_the_measured_triad():
    """A 1 Gbit/s link (125 MB/s) against 25 000 MB/s of Triad: 0.005 B of network per B of memory,
    and at Groves' 14 B/B the link could take at most 14 x 125 / 25 000 = 7.0 % of Triad."""
    from crosstalk.claims.balance import note
    t, _ = table([({"threads": th}, "triad_bw", s, 25000.0 if th == 2 else 14000.0) for th in (1, 2) for s in range(3)])
    text = note({"balance": "network_to_memory"}, t, {"link_gbit": 1.0, "nic": "tcp"})
    assert "0.005 B of network per B of memory" in text and "at most 7.0% of Triad" in text
    assert "Groves' machines 0.017-0.31" in text and "nic: tcp" in text
    assert note({"balance": "network_to_memory"}, t, {"nic": "tcp"}) is None       # link rate not recorded
    assert note({}, t, {"link_gbit": 1.0}) is None


def test_the_communication_share_note_splits_run_time_by_the_quarter_bandwidth_case():
    """t = compute + bytes / bandwidth: 4X 10 s and 1X 13 s add 3 s for 3x the link time, so 1 s
    (10 %) of the 4X run is link time. Table 6.2 at 1/4: up to CTH's +30.2 %, i.e. 10 %."""
    from crosstalk.claims.balance import note
    perf = pd.DataFrame([{"experiment": "energy", "metric": "time_s", "value": value, "unit": "s",
                          "params": json.dumps({"link": link, "cpu_freq": "default"}, sort_keys=True),
                          "run_id": "r", "partition": "p", "environ": "e", "repeat": 0, "sample": s, "round": 0,
                          "case": f"c {link}"}
                         for link, value in (("4X", 10.0), ("1X", 13.0)) for s in range(3)])
    shaped = note({"balance": "communication_share"}, Table(perf),
                  {"like": "sand2012-red-storm-dual-core-node", "network_to_memory": 0.23})
    assert shaped.startswith("balance: 10% of the full-bandwidth run time is link time here (10 s at 4X, 13 s at 1X")
    assert "the paper's applications 0%-10% (Table 6.2 at 1/4 bandwidth)" in shaped
    assert shaped.endswith("shaped like sand2012-red-storm-dual-core-node, 0.23 B of network per B of memory reached")
    link_bound = perf.assign(value=np.where(perf["params"].str.contains('"1X"'), 40.0, 10.0))
    assert "the link, not compute, sets the time here" in note({"balance": "communication_share"},
                                                              Table(link_bound), {})
    # The experiment needs Red Storm's balance (energy.yaml's like): a platform shaped otherwise
    # says so and names the shipped inventory shaped like it; one shaped like it does not.
    machine = "sand2012-red-storm-dual-core-node"
    unshaped = note({"balance": "communication_share"}, Table(link_bound), {}, like=machine, experiment="energy")
    assert unshaped.endswith(f"this experiment needs a system shaped like {machine} and this one is not shaped: "
                             "`crosstalk run --system vcluster-sand -e energy` runs it on one that is")
    assert "needs a system" not in shaped and "needs a system" not in note(
        {"balance": "communication_share"}, Table(perf), {"like": machine}, like=machine, experiment="energy")


def test_environ_groups_a_claim_per_mpi_implementation():
    """group_by: [environ] judges each programming environment on its own samples: one MPI whose
    bandwidth drops with threads and one whose does not give one reproduced and one contradicted
    group (pooled, the drop would hide in the other's flat values)."""
    drop = {"mpich": 0.7, "ompi": 1.0}
    perf = pd.DataFrame([{"experiment": "stream", "metric": "bandwidth",
                          "params": json.dumps({"threads": t}), "value": 100.0 * (drop[env] if t == 2 else 1) + 0.1 * s,
                          "unit": "u", "run_id": "r", "partition": "p", "environ": env, "repeat": 0, "sample": s,
                          "round": 0, "case": f"c {t}"}
                         for env in drop for t in (1, 2) for s in range(6)])
    from crosstalk.claims.operands import with_environ
    cases = with_environ(perf[["experiment", "params", "environ"]].drop_duplicates()).assign(result="pass", reason=None)
    test = {"kind": "ratio", "group_by": ["environ"], "band": [None, 0.95],
            "num": {"metric": "bandwidth", "select": {"threads": "@max"}},
            "den": {"metric": "bandwidth", "select": {"threads": 1}}}
    out = judge_claim(SPEC, claim(test), Table(perf), cases)
    assert {g["group"]: g["verdict"] for g in out["groups"]} == {"environ=mpich": "reproduced",
                                                                 "environ=ompi": "contradicted"}


def test_a_claim_selecting_max_threads_is_still_judged_per_group():
    """``select: {threads: '@max'}`` beside group_by: each MPI is its own group (the selection is
    resolved per operand, it narrows no group away), and the @max-thread job's one-thread baseline
    (measured in the same job) pairs round by round."""
    grows = {"mpich": 1.5, "ompi": 0.8}
    perf = pd.DataFrame([{"experiment": "stream", "metric": metric, "params": json.dumps({"threads": 2}),
                          "value": (grows[env] if metric == "latency" else 1.0) * (10 + r), "unit": "us",
                          "run_id": "r", "partition": "p", "environ": env, "repeat": 0, "sample": 0,
                          "round": r, "case": "c 2"}
                         for env in grows for metric in ("latency", "latency_one_thread") for r in range(6)])
    from crosstalk.claims.operands import with_environ
    cases = with_environ(perf[["experiment", "params", "environ"]].drop_duplicates()).assign(result="pass", reason=None)
    test = {"kind": "direction", "group_by": ["environ"], "select": {"threads": "@max"}, "expect": "greater",
            "a": {"metric": "latency"}, "b": {"metric": "latency_one_thread"}}
    out = judge_claim(SPEC, claim(test), Table(perf), cases)
    assert {g["group"]: (g["verdict"], g["n"]) for g in out["groups"]} == {
        "environ=mpich": ("reproduced", 6), "environ=ompi": ("contradicted", 6)}


def test_a_not_run_reason_comes_from_an_environment_the_experiment_ran_in():
    """The frequency cases were skipped for want of cpufreq under Open MPI, and the whole
    experiment under MPICH (first environment only): the claim says the first."""
    from crosstalk.claims import judge_claim
    from crosstalk.specs import load_spec
    spec = load_spec("energy")
    claim_ = next(c for c in spec.data["claims"] if c["id"] == "sand-lower-freq-slows")
    cases = pd.DataFrame([
        {"experiment": "energy", "environ": env, "params": json.dumps({"link": "4X", "cpu_freq": freq}),
         "result": result, "reason": reason}
        for env, freq, result, reason in (
            ("ompi", "default", "pass", None), ("ompi", "low", "skip", "no cpufreq on this node"),
            ("mpich", "default", "skip", "runs under ompi only"), ("mpich", "low", "skip", "runs under ompi only"),
            ("mpich", "low", "skip", "runs under ompi only"))])
    perf = pd.DataFrame([{"experiment": "energy", "metric": "time_s", "value": 1.0, "unit": "s", "case": "c",
                          "params": json.dumps({"link": "4X", "cpu_freq": "default"}), "run_id": "r",
                          "partition": "p", "environ": "ompi", "repeat": 0, "sample": 0, "round": 0}])
    out = judge_claim(spec, claim_, Table(perf), cases)
    assert out["verdict"] == "not run"
    assert out["groups"][0]["reason"] == "energy {link=4X, cpu_freq=low} skipped: no cpufreq on this node"


def _gpcnet_claim_on_a_small_star(skip_reason):
    """gpcnet-ci-grows-with-pport (congestors=all at pport N against 1) where the quick profile ran
    p2p_incast and skipped congestors=all at pport 1 for ``skip_reason``; pport N was not swept."""
    from crosstalk.claims import judge_claim
    from crosstalk.specs import load_spec
    spec = load_spec("congestion")
    claim_ = next(c for c in spec.data["claims"] if c["id"] == "gpcnet-ci-grows-with-pport")
    cases = pd.DataFrame([
        {"experiment": "congestion", "environ": "ompi", "params": json.dumps({"congestors": kind, "pport": "1"}),
         "result": result, "reason": reason}
        for kind, result, reason in (("p2p_incast", "pass", None), ("all", "skip", skip_reason))])
    perf = pd.DataFrame([{"experiment": "congestion", "metric": "ci_lat_avg", "value": 2.0, "unit": "x", "case": "c",
                          "params": json.dumps({"congestors": "p2p_incast", "pport": "1"}), "run_id": "r",
                          "partition": "p", "environ": "ompi", "repeat": 0, "sample": 0, "round": 0}])
    return judge_claim(spec, claim_, Table(perf), cases)


def test_a_claim_whose_cases_the_platform_cannot_hold_is_not_applicable():
    """All four congestors at once need more GPCNeT nodes than a 4-node star has: the test skipped
    them as a case the platform cannot hold, so no profile would run them here (the pport the
    claim also needs was not swept either: the skip of the rest of its selection decides)."""
    from crosstalk.skips import platform_reason
    out = _gpcnet_claim_on_a_small_star(platform_reason("congestors=all needs 10 GPCNeT nodes; layout gives 8"))
    assert out["verdict"] == "not applicable", out
    assert out["groups"][0]["reason"] == ("congestion {congestors=all} does not fit this platform: "
                                          "congestors=all needs 10 GPCNeT nodes; layout gives 8")


def test_a_claim_whose_cases_were_skipped_for_another_reason_is_not_run():
    """A program not installed could be installed: the claim is not run, as before."""
    out = _gpcnet_claim_on_a_small_star("GPCNeT: network_load_test is not installed here")
    assert out["verdict"] == "not run", out
