"""Shared pytest fixtures: paths, the venv's tools, and the virtual cluster."""
import pytest
from example_figures import example_figures, examples_perf  # noqa: F401  (fixtures of every module)
from shared_run import shared_report, shared_run  # noqa: F401  (fixtures of every module)
from vcluster_fixtures import isolated, login_report, pingpong_src, spare_cluster, vcluster  # noqa: F401  (fixtures of every module)
from xt_testing import REPO, tool_env

#: Fixtures that bring up or use a virtual cluster (a test that asks for one is in the cluster tier),
#: and the machine each stands for: the shared cluster, the private cluster ``vclt``, the spare
#: cluster ``vcspare``. Fixtures built on them (``login_report``) count through pytest's fixture closure.
FIXTURE_MACHINES = {"vcluster": "vcluster", "isolated": "vclt", "spare_cluster": "vcspare"}
#: Machines whose tests share another machine's worker: the main job on the shared cluster moves E6
#: to vcsand (crosstalk.run.balanced), so a test of that move holds both systems' run locks in turn.
WORKER_OF = {"vcsand": "vcluster"}


def machine_of(item):
    """The one machine a test runs experiments on (a cluster fixture it asks for, or its
    ``machine`` marker; machines that share a worker count as the one whose worker it is), or
    None. Two would put it in two pytest workers' way at once."""
    machines = {FIXTURE_MACHINES[f] for f in item.fixturenames if f in FIXTURE_MACHINES}
    machines |= {m.args[0] for m in item.iter_markers("machine")}
    workers = {WORKER_OF.get(m, m) for m in machines}
    if len(workers) > 1:
        raise pytest.UsageError(f"{item.nodeid}: uses machines {sorted(machines)}: give each test one")
    return workers.pop() if workers else None


@pytest.hookimpl(tryfirst=True)   # before -m selects on the markers, and before xdist reads groups
def pytest_collection_modifyitems(items):
    """Tiers (docs/testing.md): ``cluster`` for tests on a virtual cluster, ``slow`` as marked,
    ``fast`` for every other test, so that a new test is fast unless it says otherwise.

    Worker groups (pytest-xdist's ``--dist loadgroup``): the tests of one machine run on one
    worker, one after the other (a system takes one run at a time; the shared cluster is brought
    up and down by the worker that uses it); every other module runs on one worker, so its
    module-scoped fixtures are made once, or in the group its ``xdist_group`` marker names (modules
    that share a session fixture, e.g. tests/example_figures.py)."""
    for item in items:
        if FIXTURE_MACHINES.keys() & set(item.fixturenames) and not item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.cluster)
        if not (item.get_closest_marker("cluster") or item.get_closest_marker("slow")):
            item.add_marker(pytest.mark.fast)
        machine = machine_of(item)
        named = item.get_closest_marker("xdist_group")
        group = machine or (named.args[0] if named else item.nodeid.split("::")[0])
        item.add_marker(pytest.mark.xdist_group(group))
        # in the JUnit file (--junitxml): .ci/run's time per tier and group (scripts/bench_test_tiers.py)
        tier = next(t for t in ("slow", "cluster", "fast") if item.get_closest_marker(t))
        item.user_properties += [("tier", tier), ("group", group)]


@pytest.fixture(scope="session", autouse=True)
def explore_mode(tmp_path_factory):
    """Experiments under test run in explore mode: they check physics, not this machine's
    calibrated references (tests of references and gate mode set their own directory)."""
    import os
    os.environ["CROSSTALK_REFERENCES_DIR"] = str(tmp_path_factory.mktemp("no-references"))


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture
def run_env():
    """Environment for subprocesses: the venv first on PATH."""
    return tool_env()


@pytest.fixture(scope="module")
def run_env_module():
    return tool_env()


@pytest.fixture(scope="session")
def tool_env_session():
    return tool_env()
