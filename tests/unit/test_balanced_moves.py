"""The main job runs an experiment at the balance its paper needs (crosstalk.run.balanced): on a
virtual cluster shaped otherwise, an experiment whose spec names a machine (``like:``) goes to a
shipped inventory of kind vcluster shaped like it; where none exists or the host cannot shape a
node's CPU it stays, and its claims say why. The main platform's claims of a moved experiment are
judged on the other system (not applicable here), and a platform's headline counts apart the
claims whose experiments never ran on it."""
from types import SimpleNamespace

import pandas as pd
import pytest

import crosstalk.run.balanced as balanced
from crosstalk.analysis.ingest import PERF_COLUMNS
from crosstalk.claims import judge_claim, platform_facts
from crosstalk.claims.balance import needed_balance
from crosstalk.claims.operands import Table
from crosstalk.claims.present import decided_text, main_job_text, unmeasured
from crosstalk.site.systemfacts import encode, moved_of
from crosstalk.specs import all_specs, load_spec

ENERGY_LIKE = load_spec("energy").data["like"]


@pytest.fixture
def shapeable(monkeypatch):
    monkeypatch.setattr(balanced, "cpu_groups_available", lambda: True)


def test_an_experiment_needing_a_machine_goes_to_the_inventory_shaped_like_it(shapeable):
    moves = balanced.plan_moves(SimpleNamespace(like=None), all_specs())
    assert moves == {"energy": {"like": ENERGY_LIKE, "inventory": "vcluster-sand", "error": None}}
    assert [s.name for s in balanced.staying(all_specs(), moves)] == \
        [s.name for s in all_specs() if s.name != "energy"]
    assert balanced.destinations(moves) == {"vcluster-sand": ["energy"]}


def test_a_cluster_shaped_like_the_machine_keeps_its_experiment(shapeable):
    assert balanced.plan_moves(SimpleNamespace(like=ENERGY_LIKE), all_specs()) == {}


def test_a_real_cluster_runs_every_experiment(shapeable):
    assert balanced.plan_moves(None, all_specs()) == {}


def test_an_experiment_stays_where_the_host_cannot_shape_a_node(monkeypatch):
    monkeypatch.setattr(balanced, "cpu_groups_available", lambda: False)
    moves = balanced.plan_moves(SimpleNamespace(like=None), all_specs())
    assert moves["energy"]["inventory"] is None and "cgroup CPU controller" in moves["energy"]["error"]
    assert "energy" in [s.name for s in balanced.staying(all_specs(), moves)]
    assert balanced.destinations(moves) == {}


def test_an_experiment_stays_where_no_inventory_is_shaped_like_its_machine(shapeable, monkeypatch):
    monkeypatch.setattr(balanced, "shaped_like", lambda like: ())
    moves = balanced.plan_moves(SimpleNamespace(like=None), all_specs())
    assert moves["energy"]["error"] == f"no shipped inventory of kind vcluster is shaped like {ENERGY_LIKE}"


def _cases(*runs):
    """A platform's cases: one energy case per (run_id, moved) run, its facts as ingest writes them."""
    return pd.DataFrame([{"experiment": "energy", "params": "{}", "environ": "e", "result": "pass", "reason": None,
                          "run_id": run_id, "facts": encode({"kind": "vcluster", "moved": moved_of({"moved": moved})})}
                         for run_id, moved in runs])


def test_the_claims_of_a_moved_experiment_are_judged_on_the_other_system():
    spec = load_spec("energy")
    claim = next(c for c in spec.data["claims"] if c["id"] == "sand-half-bw-saves-energy")
    moved = {"energy": {"like": ENERGY_LIKE, "inventory": "vcluster-sand", "system": "vcsand", "run_id": "R2"}}
    # an older run ran energy here; the latest moved it: where it ran is the latest run's choice
    cases = _cases(("R1", None), ("R3", moved))
    facts = platform_facts(cases)
    out = judge_claim(spec, claim, Table(pd.DataFrame(columns=PERF_COLUMNS)),
                      cases, facts)
    assert out["verdict"] == "not applicable" and out["judged_on"] == "vcsand"
    assert out["groups"][0]["reason"].startswith("judged on vcsand: the main job ran energy there, shaped like "
                                                 f"{ENERGY_LIKE}"), out
    assert platform_facts(_cases(("R3", moved), ("R4", None)))["moved"] is None


def test_a_move_that_failed_is_said_in_the_balance_note():
    facts = {"like": None, "moved": {"energy": {"like": ENERGY_LIKE, "system": None, "error": "no cgroups here"}}}
    text = needed_balance(ENERGY_LIKE, facts, "energy")
    assert text.endswith("; the main job could not: no cgroups here"), text
    assert needed_balance(ENERGY_LIKE, {"like": ENERGY_LIKE}, "energy") is None


def test_the_headline_counts_apart_the_claims_of_experiments_that_never_ran_here():
    verdicts = [{"verdict": "reproduced"}, {"verdict": "not run", "measured": True},
                {"verdict": "not run", "measured": False}, {"verdict": "not applicable", "measured": False}]
    totals = {"reproduced": 1, "contradicted": 0, "inconclusive": 0, "not run": 2, "not applicable": 1}
    assert unmeasured(verdicts) == 1
    assert decided_text(totals, unmeasured(verdicts)) == \
        "1 of 2 applicable claims decided (50%); 1 more whose experiments did not run here"
    assert decided_text(totals) == "1 of 3 applicable claims decided (33%)"


def test_the_main_job_headline_counts_each_moved_claim_where_it_was_judged():
    """vcluster judged two claims and moved energy's two to vcsand (one decided there); vcsand's
    other claims never ran there. The main job: 2 of 4 decided here and there together."""
    def row(platform, system, claim, verdict, **extra):
        return {"platform": platform, "system": system, "origin": "user", "id": claim, "experiment": claim[:1],
                "verdict": verdict, "measured": True, **extra}
    verdicts = [row("vc@1", "vcluster", "a1", "reproduced"), row("vc@1", "vcluster", "a2", "inconclusive"),
                row("vc@1", "vcluster", "e1", "not applicable", judged_on="vcsand"),
                row("vc@1", "vcluster", "e2", "not applicable", judged_on="vcsand"),
                row("sand@2", "vcsand", "a1", "not run", measured=False),
                row("sand@2", "vcsand", "a2", "not run", measured=False),
                row("sand@2", "vcsand", "e1", "contradicted"), row("sand@2", "vcsand", "e2", "inconclusive")]
    assert main_job_text(verdicts, "vc@1") == "with e judged on vcsand: 2 of 4 applicable claims decided (50%)"
    assert main_job_text(verdicts, "sand@2") is None          # it moved nothing


def test_the_report_shows_a_moved_experiment_in_the_main_jobs_column_and_each_balance_note_once():
    """The platform that only ran what the main job moved there (vcsand) is no column of "not run":
    its verdicts stand in the main platform's cells, saying where they were judged; a balance note
    shared by several claims of a platform is written once and each cell links it."""
    from crosstalk.analysis.report import claim_tables, moved_only

    def row(platform, system, claim, verdict, **extra):
        return {"platform": platform, "system": system, "origin": "user", "id": claim, "experiment": claim[:1],
                "verdict": verdict, "measured": True, "paper": "sand2012", "item": "Table 6.2", "artefact": None,
                "claim": claim, "kind": "paper", "quote": {"text": "q" * 20, "source": "s"}, "differs": None,
                "paper_values": [], "groups": [{"group": "", "verdict": verdict, "reason": "r", "estimate": 1.0,
                                                "ci_low": None, "ci_high": None, "n": 3, "low": 1, "high": None}],
                "note": "balance: the same long note", **extra}
    verdicts = [row("vc@1", "vcluster", "a1", "not run"), row("vc@1", "vcluster", "a2", "not run"),
                row("vc@1", "vcluster", "e1", "not applicable", judged_on="vcsand"),
                row("sand@2", "vcsand", "a1", "not run", measured=False),
                row("sand@2", "vcsand", "a2", "not run", measured=False),
                row("sand@2", "vcsand", "e1", "contradicted")]
    assert moved_only(verdicts) == {"sand@2"}
    tables = claim_tables(verdicts, {"vc@1": "host", "sand@2": "host"})
    assert tables["platforms"] == ["vc@1"]
    cells = {c["id"]: c["cells"][0] for t in tables["tables"] for c in t["claims"]}
    assert cells["e1"]["verdict"] == "contradicted" and cells["e1"]["lines"][0].startswith("judged on vcsand")
    assert tables["notes"]["vc@1"] == [{"anchor": "note-vc-1-1", "n": 1, "text": "why the magnitude may differ: "
                                        "balance: the same long note"}]
    assert {cells[c]["why"]["anchor"] for c in ("a1", "a2", "e1")} == {"note-vc-1-1"}
    # a platform that also ran an experiment of its own keeps its column
    verdicts[3]["measured"] = True
    assert moved_only(verdicts) == set()
