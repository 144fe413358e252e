"""E6 (LAMMPS under reduced network bandwidth) on a virtual cluster shaped like the machine of
SAND2012-1750 Table 6.2 (inventories/vcluster-sand: each node under a CPU quota so that its link
bytes per byte of Triad approach Red Storm's node). On the default cluster the same quick case is
link-bound (1X takes 4.0x as long as 4X: time follows bandwidth exactly); at the paper's balance
compute dominates, as on the paper's machine, and the balance reached is recorded with the run."""
import json
import statistics

import pytest
from vcluster_fixtures import REPO, skip_unless_root

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]
INVENTORY = REPO / "inventories" / "vcluster-sand"
MACHINE = "sand2012-red-storm-dual-core-node"


@pytest.fixture(scope="module")
def sand_run(main_job_with_a_move):
    """The E6 run the main job below moved to vcluster-sand: the run these tests read (the 4X and
    1X cases at the default frequency; under the quota every case is compute-bound and slow, the
    whole quick profile took 267 s of CI)."""
    from crosstalk.analysis.ingest import load_run
    _, results, _ = main_job_with_a_move
    (run_dir,) = (results / "vcsand" / "runs").iterdir()
    return run_dir, load_run(run_dir)


@pytest.mark.machine("vcsand")
def test_the_run_records_the_balance_it_had_beside_the_target(sand_run):
    run_dir, (_, cases) = sand_run
    assert all(c["result"] in ("pass", "skip") for c in cases), [c["reason"] for c in cases]
    balance = json.loads((run_dir / "provenance.json").read_text())["balance"]
    assert balance["like"] == MACHINE and balance["target"]["network_to_memory"] == 0.5
    # Whatever this host reaches is measured (iperf3 over Triad inside a node), never assumed;
    # a shortfall says why (the share's floor) rather than passing as the target.
    achieved = balance["achieved"]["network_to_memory"]
    assert achieved > 0 and (abs(achieved / 0.5 - 1) <= 0.1 or balance["limited"])


@pytest.mark.machine("vcsand")
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


@pytest.fixture(scope="module")
def main_job_with_a_move(run_env_module, vcluster):
    """The main job's run on the default virtual cluster (as for the whole suite, at_balance, but of
    two experiments, with a site's small specs: STREAM at one thread, E6 at 4X, 2X (the claim's half
    bandwidth) and 1X, one round of 20 steps, so that it is short): E6 goes to vcluster-sand.
    The shared cluster is the ``vcluster`` fixture's, up before the main job: the main job would
    bring it up itself and leave it up, and the fixture, finding it up, would not take it down."""
    skip_unless_root()
    from crosstalk.vcluster.balance import cpu_groups_available
    if not cpu_groups_available():
        pytest.skip("no writable cgroup CPU controller here: the main job keeps E6 (tested in unit tests)")
    import shutil
    import subprocess
    import uuid

    from xt_testing import site_spec, venv_tool
    work = REPO / "build" / "test-move" / uuid.uuid4().hex[:8]      # the nodes have a private /tmp
    specs = work / "specs"
    site_spec(specs, "stream", {"threads": [1]}, {"array_bytes": "32M", "ntimes": 2, "rounds": 1})
    # LAMMPS for 20 steps, not 40: the test compares loop times, whose 1X/4X ratio is the steps'
    # (compute under the quota: 1.0-1.1x), the same over 20 steps as over 40, against a bound of 2
    site_spec(specs, "energy", {"link": ["4X", "2X", "1X"], "cpu_freq": ["default"]}, {"rounds": 1, "lammps_steps": 20})
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(work / "results"), CROSSTALK_SPECS_DIR=str(specs))
    try:
        main_job = ("import sys; from crosstalk.run.runner import run; "
                    "sys.exit(run('vcluster', experiments=['stream', 'energy'], budget_s=0, at_balance=True)[0])")
        proc = subprocess.run([venv_tool("python"), "-c", main_job], capture_output=True, text=True, env=env,
                              timeout=1800)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        claims = subprocess.run([venv_tool("crosstalk"), "claims", "--claim", "sand-half-bw-saves-energy"],
                                capture_output=True, text=True, env=env, timeout=600)
        yield proc.stdout, work / "results", claims.stdout
    finally:
        subprocess.run([venv_tool("crosstalk"), "vcluster", "down", "--inventory", str(INVENTORY)],
                       capture_output=True, env=env, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def test_the_main_job_runs_e6_on_the_inventory_shaped_like_its_machine(main_job_with_a_move):
    stdout, results, claims = main_job_with_a_move
    assert f"energy needs a system shaped like {MACHINE}; it runs on inventory vcluster-sand" in stdout, stdout
    (main,) = (results / "vcluster" / "runs").iterdir()
    (moved,) = (results / "vcsand" / "runs").iterdir()
    prov = json.loads((main / "provenance.json").read_text())
    assert set(prov["specs"]) == {"stream"}
    assert prov["moved"]["energy"] | {} == {"like": MACHINE, "inventory": "vcluster-sand", "error": None,
                                            "system": "vcsand", "run_id": moved.name}, prov["moved"]
    moved_prov = json.loads((moved / "provenance.json").read_text())
    assert set(moved_prov["specs"]) == {"energy"} and moved_prov["balance"]["like"] == MACHINE
    # judged there, and said so here
    here, there = claims.split("\nvcsand")
    assert "NOT APPLICABLE sand-half-bw-saves-energy" in here and "judged on vcsand" in here, claims
    (line,) = [x for x in there.splitlines() if "sand-half-bw-saves-energy" in x]
    assert line.split()[0] in ("REPRODUCED", "CONTRADICTED", "INCONCLUSIVE"), claims
