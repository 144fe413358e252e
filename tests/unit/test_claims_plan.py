"""The second stage's plan (crosstalk.claims.plan): samples that would decide each inconclusive
claim, from the first stage's known spread; repeats per case; the budget; and the confidence of a
platform judged at two looks."""
import json

import pandas as pd
import pytest

from crosstalk.claims import judge
from crosstalk.claims.judge import confidence_for, min_samples
from crosstalk.claims.plan import CASE_MARGIN, SESSION_S, plan
from crosstalk.specs import load_spec

SPEC = load_spec("congestion")
CLAIM = next(c for c in SPEC.data["claims"] if c["id"] == "gpcnet-incast-slows-bw")      # congested < isolated
CASE = "CongestionCanary %congestors=p2p_incast %pport=1 %repeat=0"


def tables(ratios, looks=1, partitions=("mpi", "slurm")):
    """One run's perf and case rows: bandwidth isolated 100, congested 100 x ratio, one sample per
    ratio, spread over the partitions in turn."""
    rows, cases = [], []
    params = json.dumps({"congestors": "p2p_incast", "pport": 1, "repeat": 0}, sort_keys=True)
    for i, ratio in enumerate(ratios):
        partition, copy = partitions[i % len(partitions)], i // len(partitions)
        for metric, value in (("bw_isolated_avg", 100.0), ("bw_congested_avg", 100.0 * ratio)):
            rows.append({"platform": "vc", "system": "vc", "origin": "user", "host_label": "h",
                         "experiment": "congestion", "metric": metric, "params": params, "value": value,
                         "unit": "MiB/s/rank", "case": CASE, "run_id": "r", "partition": partition,
                         "environ": "gnu", "repeat": 0, "sample": copy, "round": 0})
    for partition in partitions:
        cases.append({"platform": "vc", "system": "vc", "origin": "user", "host_label": "h",
                      "experiment": "congestion", "params": params, "environ": "gnu", "result": "pass",
                      "reason": None, "facts": "{}", "looks": looks, "case": CASE, "partition": partition})
    return pd.DataFrame(rows), pd.DataFrame(cases)


def verdict_of(perf, cases, trace=True):
    return next(v for v in judge(perf, cases, trace=trace) if v["id"] == CLAIM["id"])


def test_two_looks_are_judged_at_the_bonferroni_level():
    assert confidence_for(1) == pytest.approx(0.90) and confidence_for(2) == pytest.approx(0.95)
    assert min_samples(0.90) == 5 and min_samples(0.95) == 6
    five = [0.5, 0.6, 0.55, 0.65, 0.7]          # every sample slower congested
    assert verdict_of(*tables(five, looks=1))["verdict"] == "reproduced"
    at_two = verdict_of(*tables(five, looks=2))
    assert at_two["verdict"] == "inconclusive" and at_two["confidence"] == pytest.approx(0.95)


def test_the_pilot_fixes_the_samples_and_each_copy_adds_one_per_partition():
    # Two pilot samples 0.6 and 0.8 (median 0.7, 0.3 below the bound 1, half-range 0.1): the spread
    # asks for fewer than the 95 % minimum of 6, so 4 more; each copy of the case on both
    # partitions adds 2, so 2 copies on each.
    v = verdict_of(*tables([0.6, 0.8], looks=2))
    (group,) = v["groups"]
    assert v["verdict"] == "inconclusive" and group["more"] == 4
    assert group["cases"] == [["mpi", "gnu", CASE], ["slurm", "gnu", CASE]] and group["per_repeat"] == 2
    out = plan([v], {("mpi", CASE): 30.0, ("slurm", CASE): 40.0}, budget_s=1000)
    assert out.repeats == {("mpi", CASE): 2, ("slurm", CASE): 2} and out.claims == [CLAIM["id"]]
    # each case with its margin, and a start-up for each of the two sessions
    assert out.seconds == pytest.approx(CASE_MARGIN * (2 * 30 + 2 * 40) + 2 * SESSION_S)
    assert out.sessions() == [("mpi", 2, [CASE]), ("slurm", 2, [CASE])]


def test_a_wide_spread_asks_for_more_than_the_minimum():
    # Six samples straddling the bound: the interval is 4x wider than the distance to the bound,
    # so about n (half / distance)^2 samples.
    ratios = [0.2, 1.4, 0.3, 1.3, 0.85, 0.95]
    (group,) = verdict_of(*tables(ratios, looks=2))["groups"]
    assert group["verdict"] == "inconclusive" and group["more"] > min_samples(0.95)


def test_the_budget_takes_the_cheapest_claims_and_says_what_it_left_out():
    v = verdict_of(*tables([0.6, 0.8], looks=2))
    cheap = dict(v, id="cheap")
    costly = dict(v, id="costly", groups=[dict(v["groups"][0], cases=[["mpi", "gnu", "Other"]], per_repeat=1)])
    seconds = {("mpi", CASE): 30.0, ("slurm", CASE): 40.0, ("mpi", "Other"): 500.0}
    out = plan([costly, cheap], seconds, budget_s=1000)
    assert out.claims == ["cheap"] and set(out.repeats) == {("mpi", CASE), ("slurm", CASE)}
    (left,) = out.left_out
    cheap_s = CASE_MARGIN * (2 * 30 + 2 * 40) + 2 * SESSION_S          # 188 s
    costly_s = CASE_MARGIN * 4 * 500 + SESSION_S                       # 4 samples, one per copy
    assert left == {"claim": "costly", "seconds": round(costly_s),
                    "why": f"needs about {costly_s:.0f} s; {1000 - cheap_s:.0f} s of the budget were left"}
    # a claim whose cases another planned claim already runs costs nothing more
    again = dict(v, id="again")
    assert plan([cheap, again], seconds, budget_s=cheap_s).claims == ["again", "cheap"]


def test_a_claim_decided_or_on_its_bound_is_not_planned():
    decided = verdict_of(*tables([0.5, 0.6, 0.55, 0.65, 0.7, 0.6], looks=2))
    assert decided["verdict"] == "reproduced" and "cases" not in decided["groups"][0]
    on_bound = verdict_of(*tables([0.9, 1.1], looks=2))
    out = plan([decided, on_bound], {("mpi", CASE): 1.0, ("slurm", CASE): 1.0}, budget_s=1000)
    assert out.claims == [] and out.left_out == [
        {"claim": CLAIM["id"], "why": "the claim: its estimate sits on the band's bound", "seconds": None}]


def test_each_open_claim_says_why_and_the_command_that_would_decide_it():
    from crosstalk.claims.present import decided_text, open_question
    pilot = verdict_of(*tables([0.6, 0.8], looks=1))
    fresh = open_question(pilot, {"run_id": "R1", "stages": []})
    assert fresh == {"why": "too few samples: about 3 more would decide it (the run took no second stage)",
                     "command": "crosstalk run --more R1 --budget 15m"}
    why = "needs about 900 s; 10 s of the budget were left"
    spent = open_question(pilot, {"run_id": "R2", "stages": [{"left_out": [
        {"claim": CLAIM["id"], "why": why, "seconds": 900}]}]})
    # the command's budget covers what the claim needs (15 minutes), half as much again for the
    # next look's wider interval, and a minute more
    assert spent == {"why": f"budget spent: the run's plan for more samples left it out ({why})",
                     "command": "crosstalk run --more R2 --budget 24m"}
    # a plan that measured nothing again (no claim fitted the time left) is the run's last plan too,
    # until a later stage runs
    unplanned = {"after_stages": 0, "left_out": [{"claim": CLAIM["id"], "why": why, "seconds": 900}]}
    assert open_question(pilot, {"run_id": "R5", "stages": [], "unplanned": unplanned}) == {
        "why": f"budget spent: the run's plan for more samples left it out ({why})",
        "command": "crosstalk run --more R5 --budget 24m"}
    # a need of years (a median a hair from the bound) is noise, with no command
    years = open_question(pilot, {"run_id": "R7", "stages": [{"left_out": [
        {"claim": CLAIM["id"], "why": "needs about 10424014394 s; 0 s of the budget were left",
         "seconds": 10424014394}]}]})
    assert years == {"why": "noise: the median sits so near the claim's bound that deciding it would take about "
                            "120,648 days of runs at this spread", "command": None}
    stale = open_question(pilot, {"run_id": "R6", "stages": [{"claims": [CLAIM["id"]], "left_out": []}],
                                  "unplanned": unplanned})
    assert stale["why"].startswith("noise: measured again by the run's stages")
    fit = open_question(pilot, {"run_id": "R2", "stages": [{"left_out": [
        {"claim": CLAIM["id"], "why": "the claim: not decided by more samples of its cases (a fit)",
         "seconds": None}]}]})
    assert fit == {"why": "not planned by the run's stages (the claim: not decided by more samples of its "
                          "cases (a fit)); about 3 more sample(s) would decide it",
                   "command": "crosstalk run -e congestion"}
    assert open_question(pilot, None)["command"] == "crosstalk run -e congestion --budget 15m"
    measured = open_question(pilot, {"run_id": "R4", "stages": [{"claims": [CLAIM["id"]], "left_out": []}]})
    assert measured["why"] == ("noise: measured again by the run's stages and still undecided; "
                               "about 3 more would decide it")
    on_bound = open_question(verdict_of(*tables([0.9, 1.1])), {"run_id": "R3"})
    assert on_bound["command"] is None and on_bound["why"].startswith("noise: the median sits on the claim's bound")
    assert open_question(verdict_of(*tables([0.5, 0.6, 0.55, 0.65, 0.7])), None) is None
    assert decided_text({"reproduced": 2, "contradicted": 1, "inconclusive": 1, "not run": 0,
                         "not applicable": 5}) == "3 of 4 applicable claims decided (75%)"
