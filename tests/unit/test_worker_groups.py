"""The worker groups tests/conftest.py gives (pytest-xdist --dist loadgroup): tests that run on one
system share a worker, so two of them never ask for its run lock at once."""
import pytest
from xt_testing import REPO


def _groups(module):
    """Each collected test of ``module`` and its xdist group, as the suite's conftest sets them."""
    class Grab:
        groups = {}

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, items):
            self.groups = {item.name: item.get_closest_marker("xdist_group").args[0] for item in items}
    grab = Grab()
    status = pytest.main(["--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
                          str(REPO / "tests" / module)], plugins=[grab])
    assert status == 0
    return grab.groups


def test_the_moved_main_job_and_the_shaped_clusters_tests_share_the_shared_clusters_worker():
    # CI, 2026-11-26: the main job's run on vcluster, grouped with its module instead, was refused
    # the vcluster run lock that another worker's test held.
    groups = _groups("integration/test_energy_sand_balance.py")
    assert len(groups) == 3 and set(groups.values()) == {"vcluster"}, groups


def test_a_module_without_a_machine_keeps_its_own_group():
    groups = _groups("unit/test_worker_groups.py")
    assert set(groups.values()) == {"tests/unit/test_worker_groups.py"}, groups
