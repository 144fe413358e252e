"""E6 (LAMMPS under reduced network bandwidth) on a virtual cluster shaped like the machine of
SAND2012-1750 Table 6.2 (inventories/vcluster-sand: each node under a CPU quota so that its link
bytes per byte of Triad approach Red Storm's node). On the default cluster the same quick case is
link-bound (1X takes 4.0x as long as 4X: time follows bandwidth exactly); at the paper's balance
compute dominates, as on the paper's machine, and the balance reached is recorded with the run."""
import json
import statistics

import pytest
from vcluster_fixtures import REPO, run_on_inventory, skip_unless_root
from xt_testing import OPEN_MPI_ONLY

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]
INVENTORY = REPO / "inventories" / "vcluster-sand"
MACHINE = "sand2012-red-storm-dual-core-node"


@pytest.fixture(scope="module")
def sand_run(run_env_module):
    skip_unless_root()
    from crosstalk.vcluster.balance import cgroup_cpu_root
    if cgroup_cpu_root() is None:
        pytest.skip("no cgroup CPU controller here: machine balance cannot be set")
    # Only the two cases the tests compare (4X and 1X at the default frequency): under the quota
    # every case is compute-bound and slow (the whole quick profile took 267 s of CI).
    with run_on_inventory(INVENTORY, "vcsand", run_env_module,
                          ["-e", "energy", "--partition", "mpi", "--", *OPEN_MPI_ONLY,
                           "-n", "Energy62%link=(4X|1X)%cpu_freq=default"], "sand") as run:
        yield run


def test_the_run_records_the_balance_it_had_beside_the_target(sand_run):
    run_dir, (_, cases) = sand_run
    assert all(c["result"] in ("pass", "skip") for c in cases), [c["reason"] for c in cases]
    balance = json.loads((run_dir / "provenance.json").read_text())["balance"]
    assert balance["like"] == MACHINE and balance["target"]["network_to_memory"] == 0.5
    # Whatever this host reaches is measured (iperf3 over Triad inside a node), never assumed;
    # a shortfall says why (the share's floor) rather than passing as the target.
    achieved = balance["achieved"]["network_to_memory"]
    assert achieved > 0 and (abs(achieved / 0.5 - 1) <= 0.1 or balance["limited"])


def test_at_the_papers_balance_compute_not_the_link_sets_the_run_time(sand_run):
    _, (perf, _) = sand_run
    def case(r, link):
        params = json.loads(r["params"])
        return r["metric"] == "time_s" and params["link"] == link and params["cpu_freq"] == "default"
    times = {link: statistics.median(r["value"] for r in perf if case(r, link)) for link in ("4X", "1X")}
    # Link-bound (the default cluster) 1X/4X is 4.0; Table 6.2's applications at 1/4 bandwidth
    # take 1.00-1.30x. Measured here at 0.23 B/B (a 1 % share): 1.0-1.1x; it holds at 0.046 B/B
    # (the 5 % floor, where this host stops). 2 is halfway (in log) between the two
    # regimes, so host noise in one case cannot cross it.
    assert times["1X"] / times["4X"] < 2, times
