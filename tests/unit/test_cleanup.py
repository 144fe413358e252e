"""The main job leaves the machine as it found it (issue 42), at unit level (no cluster is brought
up here): `crosstalk run` takes down the virtual clusters it brought up, or names them with the
command that does; `vcluster down` removes the cluster's lock files that no one holds."""
import io

import pytest

from crosstalk.errors import CrosstalkError
from crosstalk.run import runner, uselock
from crosstalk.vcluster import VCluster


def _cluster(tmp_path, name="tlock"):
    return VCluster(name, "198.18.0.0/24", ["n1", "n2"], "1gbit", state_dir=tmp_path / name)


def test_down_removes_the_lock_files_no_one_holds(tmp_path):
    vc = _cluster(tmp_path)
    vc.links_lock.write_text("")
    with uselock.held(vc.run_lock, "crosstalk run test"):
        assert vc.remove_locks() == [vc.run_lock]           # held by a run: kept
        assert not vc.links_lock.exists() and vc.run_lock.exists()
    assert vc.remove_locks() == [] and not vc.run_lock.exists()
    assert vc.remove_locks() == []                          # nothing left: nothing to do


class FakeCluster:
    def __init__(self, name, up, fail=None, balance_file=None):
        self.name, self.was_up, self.fail, self.calls = name, up, fail, []
        self.like, self.balance_file = ("a-machine" if balance_file else None), balance_file

    def is_up(self):
        return self.was_up

    def up(self):
        self.calls.append("up")

    def visible_on_nodes(self, path):
        return True

    def down(self):
        if self.fail:
            raise CrosstalkError(self.fail)
        self.calls.append("down")

    def remove_locks(self):
        self.calls.append("remove_locks")
        return []


@pytest.fixture
def clusters(monkeypatch, tmp_path):
    measured = tmp_path / "vcsand.balance.json"
    measured.write_text("{}")
    made = {"inventories/vcluster-sand": FakeCluster("vcsand", up=False, balance_file=measured),
            "inventories/vcluster": FakeCluster("vcluster", up=True),
            "inventories/odd dir": FakeCluster("vcodd", up=False, fail="processes [4242] did not exit")}
    monkeypatch.setattr(VCluster, "from_inventory", classmethod(lambda cls, inv: made[str(inv)]))
    monkeypatch.setattr(runner, "BROUGHT_UP", {})
    return made


def test_a_run_names_the_clusters_it_brought_up_and_the_command(clusters):
    for inventory in ("inventories/vcluster", "inventories/vcluster-sand", "inventories/vcluster-sand"):
        runner._vcluster(inventory)
    out = io.StringIO()
    runner.leave_clusters(take_down=False, out=out)
    assert out.getvalue() == ("crosstalk: virtual cluster vcsand, brought up by this run, is still running (its "
                              "Slurm daemons and CPU-quota groups); `crosstalk vcluster down --inventory "
                              "inventories/vcluster-sand` takes it down\n")
    assert clusters["inventories/vcluster"].calls == ["up"]          # was up before: not ours
    assert clusters["inventories/vcluster-sand"].calls == ["up", "up"]
    assert runner.BROUGHT_UP == {}


def test_the_main_job_takes_down_what_it_brought_up_or_says_why_not(clusters):
    for inventory in clusters:
        runner._vcluster(inventory)
    out = io.StringIO()
    runner.leave_clusters(take_down=True, out=out)
    lines = out.getvalue().splitlines()
    # its balance measurement is a file it keeps: said, with what removing it does
    assert (f"crosstalk: virtual cluster vcsand, brought up by this run, taken down; kept its balance measurement "
            f"{clusters['inventories/vcluster-sand'].balance_file} for the next bring-up (remove it to measure again)"
            in lines)
    assert ("crosstalk: virtual cluster vcodd, brought up by this run, could not be taken down (processes "
            "[4242] did not exit); `crosstalk vcluster down --inventory 'inventories/odd dir'` takes it down"
            in lines)                                        # the inventory quoted for a shell
    assert len(lines) == 2
    assert clusters["inventories/vcluster-sand"].calls == ["up", "down", "remove_locks"]
    assert clusters["inventories/vcluster"].calls == ["up"]


def test_the_main_job_asks_for_it():
    text = (runner.REPO_ROOT / "run.sh").read_text()
    assert 'crosstalk run --take-down "${budget[@]}" "$@"' in text
