"""E4's quick P2P-incast case on virtual clusters shaped unlike any shipped inventory (issue 27): an
odd node count with one slower node on a star, a fat tree with 8:1 oversubscribed uplinks and
one with 2:1 uplinks too wide for what the congestors send. The
layout planner (crosstalk.models.congestion_layout) either finds a seed whose congestors fill a
link the canaries cross, and then the portable checks must pass, or the case skips saying why:
never a run whose check premise is false. Each shape is a copy of inventories/vcluster edited as a
site would (name, subnet, node list, rates, topology)."""
import json
import shutil
import uuid

import pytest
from vcluster_fixtures import REPO, copy_inventory, run_on_inventory, skip_unless_root
from xt_testing import OPEN_MPI_ONLY, reported_values

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]
#: shape -> (what the planner decides, the inventory's edits). Measured 2026-11-29, links queueing
#: 200 ms: the odd star 2.5-3.6x (bandwidth) and 14-78x (Allreduce) a round, the 8:1 fat tree
#: 2.5-6.0x and 32-43x (at 50 ms the fat tree's uplinks dropped, and its bandwidth canary was
#: 1.2-1.8x, once 0.97 in a loaded suite); the 2:1 fat tree at 1 Gbit/s (uplinks of 2 Gbit/s, the
#: kind of shape issue 27 found failing) skips.
SHAPES = {
    "odd-star-one-slow-node": ("pass", {"name": "vcodd", "subnet": "198.19.30.0/24", "nodes": 5, "rate": "1gbit",
                                        "topology": "star", "node_rates": {"n3": "200mbit"}}),
    "fat-tree-8-to-1": ("pass", {"name": "vctree", "subnet": "198.19.31.0/24", "nodes": 7, "rate": "100mbit",
                                 "topology": "fattree:leaves=2,spines=1,oversub=8"}),
    "fat-tree-2-to-1-wide": ("skip", {"name": "vcwide", "subnet": "198.19.32.0/24", "nodes": 7, "rate": "1gbit",
                                      "topology": "fattree:leaves=2,spines=1,oversub=2"}),
}


#: Paired rounds of the job (a site spec; the quick profile has four). The impacts are the median
#: of the rounds, for two their mean: with the shapes' measured 2.5-6.0x (bandwidth) and 14-78x
#: (Allreduce) in one round, a disturbed other round (0.56 the lowest seen under load) cannot take
#: it below 1.
ROUNDS = 2


@pytest.fixture(scope="module", params=list(SHAPES))
def shape_run(request, run_env_module):
    skip_unless_root()
    expect, shape = SHAPES[request.param]
    work = REPO / "build" / "test-shapes" / uuid.uuid4().hex[:8]
    inv = copy_inventory(work, **shape)
    try:
        with run_on_inventory(inv, shape["name"], run_env_module,
                              ["-e", "congestion", "--partition", "mpi", "--", *OPEN_MPI_ONLY,
                               "-n", "^CongestionCanary%congestors=p2p_incast"], f"shapes-{shape['name']}",
                              settings={"congestion": {"rounds": ROUNDS}}) as run:
            yield request.param, expect, run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_the_incast_case_passes_its_portable_checks_or_skips_saying_why(shape_run):
    name, expect, (run_dir, (perf, cases)) = shape_run
    (case,) = [c for c in cases if c["test"] == "CongestionCanary"]
    assert case["result"] == expect, (name, case["reason"])
    if expect == "skip":
        assert "no layout puts a link the congestors fill on the canaries' routes" in case["reason"], case
        return
    # A pass includes the portable checks (incast slows the Allreduce and bandwidth canaries).
    impacts = {m: reported_values(perf, m) for m in ("ci_allreduce_avg", "ci_bw_avg")}
    assert impacts["ci_allreduce_avg"][0] > 1 and impacts["ci_bw_avg"][0] > 1, (name, impacts)
    prov = json.loads((run_dir / "provenance.json").read_text())
    print(f"{name}: {prov['topology']}: {impacts}")
