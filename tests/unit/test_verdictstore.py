"""The report keeps each platform's verdicts and judges again only the platforms whose rows
changed; what it writes is what judging everything afresh writes. The shipped example runs, judged
for real."""
import pandas as pd
import pytest

import crosstalk.claims as claims
from crosstalk import examples_root
from crosstalk.analysis import verdictstore
from crosstalk.analysis.collect import collect
from crosstalk.claims.verdictfile import to_json


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    perf, cases, _ = collect(tmp_path_factory.mktemp("no-user-runs"), None, examples_root())
    # a second platform with the same rows (one changes, the other stays)
    twin = {"platform": perf["platform"] + " twin", "system": "twin"}
    perf, cases = (pd.concat([t, t.assign(**{k: (v if k == "system" else t["platform"] + " twin")
                                              for k, v in twin.items()})], ignore_index=True)
                   for t in (perf, cases))
    assert perf["platform"].nunique() >= 2
    return perf, cases


@pytest.fixture
def judged_platforms(monkeypatch):
    """The platforms each call of judge() judged (claims judged in this process: one worker)."""
    seen = []
    real = claims.judge_claim

    def counting(spec, claim, table, cases, facts=None, trace=False):
        seen.append(cases["platform"].iloc[0] if not cases.empty else table.full["platform"].iloc[0])
        return real(spec, claim, table, cases, facts, trace)
    monkeypatch.setattr(claims, "judge_claim", counting)
    return seen


def test_kept_verdicts_are_the_fresh_ones_and_only_changed_platforms_are_judged(tables, tmp_path, judged_platforms):
    perf, cases = tables
    store = tmp_path / "store"
    fresh = to_json(claims.judge(perf, cases))
    judged_platforms.clear()
    assert to_json(claims.judge(perf, cases, store=store)) == fresh
    assert set(judged_platforms) == set(perf["platform"]) | set(cases["platform"])
    judged_platforms.clear()
    assert to_json(claims.judge(perf, cases, store=store)) == fresh          # all kept
    assert judged_platforms == []
    # one platform loses a row: it alone is judged again, and the result is a fresh judgement's
    changed = perf["platform"].iloc[-1]
    fewer = perf.drop(index=perf.index[perf["platform"] == changed][-1:])
    expected = to_json(claims.judge(fewer, cases))
    judged_platforms.clear()
    assert to_json(claims.judge(fewer, cases, store=store)) == expected
    assert set(judged_platforms) == {changed}


def test_a_broken_kept_file_is_judged_again_and_unused_ones_go(tables, tmp_path, monkeypatch):
    perf, cases = tables
    store = tmp_path / "store"
    claims.judge(perf, cases, store=store)
    kept = sorted(store.glob("*.json"))
    fresh = to_json(claims.judge(perf, cases))
    # cut short; a list with nothing kept (it would erase the platform's verdicts); a foreign list
    for broken in ("{not json", "[]", '[1, "x"]', '[{"id": "a"}]'):
        kept[0].write_text(broken)
        assert to_json(claims.judge(perf, cases, store=store)) == fresh, broken
        assert kept[0].read_text().startswith('[{"platform"'), broken
    # a platform no longer in the tables: its file goes once unused for the grace period
    one = perf["platform"].iloc[0]
    monkeypatch.setattr(verdictstore, "UNUSED_GRACE_S", 0)
    claims.judge(perf[perf["platform"] == one], cases[cases["platform"] == one], store=store)
    assert len(list(store.glob("*.json"))) == 1
