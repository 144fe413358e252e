"""Work split over forked workers gives what one process gives: the figures' and the verdicts'."""
import json
import os

import pytest

from crosstalk import examples_root
from crosstalk.analysis.collect import collect
from crosstalk.claims import judge
from crosstalk.forked import forked_map


def test_every_item_once_in_workers_that_inherit_a_closure():
    offset = 1000                               # a closure: inherited by the fork, never pickled
    items = list(range(7))
    results = list(forked_map(lambda i: (i + offset, os.getpid()), items, workers=2))
    assert sorted(r for r, _ in results) == [i + offset for i in items]
    assert os.getpid() not in {pid for _, pid in results}


def test_one_worker_or_one_item_runs_here():
    assert list(forked_map(lambda i: os.getpid(), [0, 1], workers=1)) == [os.getpid()] * 2
    assert list(forked_map(lambda i: os.getpid(), [0], workers=2)) == [os.getpid()]


def test_a_worker_error_reaches_the_caller():
    def fails(i):
        if i == 3:
            raise ValueError("item 3")
        return i
    with pytest.raises(ValueError, match="item 3"):
        list(forked_map(fails, range(5), workers=2))


def test_claims_judged_by_two_workers_are_those_judged_here(tmp_path):
    perf, cases, _ = collect(tmp_path / "no-user-runs", None, examples_root())
    here = judge(perf, cases)
    assert len(here) > 10
    # NaN == NaN as text
    assert json.dumps(judge(perf, cases, workers=2), sort_keys=True, default=str) == \
        json.dumps(here, sort_keys=True, default=str)
