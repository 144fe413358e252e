"""What makes a verdict worth its claim (issue 38): every claim carries the paper's own words, a
platform's checks are counted apart from the papers' claims, and a control that fails takes the
claims it guards out of judgement on that platform, with the control's number (one not decided
holds them undecided)."""
import pytest
from test_claims_kinds import SPEC, claim, table  # the same small tables

from crosstalk.claims import apply_controls, counts, judge_claim, paper_claims, spec_claims
from crosstalk.claims.plan import need_of
from crosstalk.claims.present import summary


def test_every_claim_quotes_its_paper_and_names_where():
    for _, c in spec_claims():
        quote = c.get("quote") or {}
        assert len(quote.get("text", "")) >= 20 and quote.get("source"), f"{c['id']} has no quote"


def test_checks_are_the_claims_no_sentence_of_a_paper_states():
    kinds = {c["id"]: c.get("kind", "paper") for _, c in spec_claims()}
    # the list: controls and cross-experiment consistency, and what the paper did not say
    for cid in ("casas-network-free-load-leaves-probe", "gpcnet-incast-slows-bw", "stream-matches-nimc-baseline"):
        assert kinds[cid] == "check", cid
    assert sum(k == "paper" for k in kinds.values()) >= 25


def _judged(cid, kind, test, rows, controlled_by=None):
    t, cases = table(rows)
    out = judge_claim(SPEC, {**claim(test), "id": cid}, t, cases)
    return {"id": cid, "kind": kind, "controlled_by": controlled_by, **out}


#: A probe's latency under a load against idle, 6 samples each: ``factor`` times idle.
def _probe(factor, load):
    return [({"load": load}, "probe_median", s, 10.0 * factor * (1 + 0.01 * s)) for s in range(6)] + \
           [({"load": load}, "idle_probe_median", s, 10.0 * (1 + 0.01 * s)) for s in range(6)]


CONTROL = {"kind": "ratio", "select": {"load": "stream"}, "num": {"metric": "probe_median"},
           "den": {"metric": "idle_probe_median"}, "band": [None, 1.5]}
GUARDED = {"kind": "direction", "select": {"load": "app"}, "expect": "greater",
           "a": {"metric": "probe_median"}, "b": {"metric": "idle_probe_median"}}


@pytest.mark.parametrize("stream_factor, want", [(181.0, "not applicable"), (1.0, "reproduced")])
def test_a_failed_control_makes_the_claims_it_guards_not_decidable(stream_factor, want):
    rows = _probe(stream_factor, "stream") + _probe(40.0, "app")
    control = _judged("ctl", "check", CONTROL, rows)
    guarded = _judged("app-raises", "paper", GUARDED, rows, controlled_by="ctl")
    assert guarded["verdict"] == "reproduced"          # judged alone, the effect shows
    out = {v["id"]: v for v in apply_controls([control, guarded])}
    assert out["ctl"]["verdict"] == ("contradicted" if want == "not applicable" else "reproduced")
    assert out["app-raises"]["verdict"] == want
    if want == "not applicable":
        reason = out["app-raises"]["groups"][0]["reason"]
        assert "ctl" in reason and "181" in reason     # names the control and its value


#: A network-free load's probe over idle, spread across the control's bound (1.5): undecided.
SPREAD = [1.1, 1.3, 1.45, 1.55, 1.7, 1.9]


@pytest.mark.parametrize("measured", [True, False])
def test_a_control_not_decided_holds_the_claims_it_guards_undecided(measured):
    stream = [({"load": "stream"}, "probe_median", s, 10.0 * f) for s, f in enumerate(SPREAD)] + \
             [({"load": "stream"}, "idle_probe_median", s, 10.0) for s in range(6)]
    rows = (stream if measured else []) + _probe(40.0, "app")
    control = _judged("ctl", "check", CONTROL, rows)
    guarded = _judged("app-raises", "paper", GUARDED, rows, controlled_by="ctl")
    assert guarded["verdict"] == "reproduced"          # judged alone, the effect shows
    assert control["verdict"] == ("inconclusive" if measured else "not run")
    out = {v["id"]: v for v in apply_controls([control, guarded])}
    held = out["app-raises"]
    assert held["verdict"] == "inconclusive" and held["held_by"] == "ctl"
    assert held["groups"][0]["estimate"] == guarded["groups"][0]["estimate"]     # its value is still shown
    line = summary(held)[0]
    assert "40" in line and "held undecided: its control ctl is" in line
    # the second stage measures the control again, not the claim it holds
    assert "until its control ctl" in need_of(held, {})
    assert out["ctl"] == control


def test_checks_are_not_counted_as_the_papers_claims():
    rows = _probe(181.0, "stream") + _probe(40.0, "app")
    control = _judged("ctl", "check", CONTROL, rows)
    paper = _judged("app-raises", "paper", GUARDED, rows)
    assert paper_claims([control, paper]) == [paper]
    assert counts([control, paper])["contradicted"] == 0 and counts([control, paper])["reproduced"] == 1
