"""The congestion layout planner (seed per cluster size); its shuffle is checked against the real
xt-congestion in tests/bench/test_congestion.py."""
import pytest

from crosstalk.models.congestion_layout import (CONGESTORS, fabric_seed, flows, layout, layout_seed,
                                                members, narrow_route, shared_links, shuffled, useful)
from crosstalk.vcluster.topology import build

FLY_NODES = [f"n{i}" for i in range(1, 13)]


def test_shuffle_is_a_permutation_and_depends_on_the_seed():
    assert sorted(shuffled(12, 5)) == list(range(12))
    assert shuffled(12, 5) != shuffled(12, 6)


def test_default_cluster_keeps_the_specs_seed():
    # 4 hosts x 2 endpoints: the layout the E4 spec describes (canaries n1 and n4, root on n4).
    plan = layout(5, 8, 4, 0.2, ["p2p_incast"])
    assert plan["canaries"] == [0, 7] and plan["roots"] == {"p2p_incast": 3}
    assert layout_seed(5, 8, 4, 0.2, ["p2p_incast"]) == 5


@pytest.mark.parametrize("hosts", range(2, 17))
@pytest.mark.parametrize("congestors", [["p2p_incast"], list(CONGESTORS)])
def test_every_cluster_size_gets_a_useful_layout(hosts, congestors):
    for per_host in (2, 3):
        nodes = hosts * per_host
        seed = layout_seed(5, nodes, hosts, 0.2, congestors)
        if nodes < 2 + 2 * len(congestors):
            assert seed is None          # too few GPCNeT nodes: the test skips
            continue
        plan = layout(seed, nodes, hosts, 0.2, congestors)
        assert useful(plan)
        assert len({plan["host_of"][v] for v in plan["canaries"]}) >= 2


def test_members_are_dealt_round_robin_after_the_canaries():
    order = shuffled(12, 5)
    groups = members(5, 12, 0.2, list(CONGESTORS))
    assert groups["a2a"] == order[2::4] and groups["rma_bcast"] == order[5::4]
    assert sorted(v for g in groups.values() for v in g) == sorted(order[2:])
    assert flows("p2p_incast", [4, 1, 9]) == [(1, 4), (9, 4)]      # members into the root
    assert flows("rma_bcast", [4, 1]) == [(4, 1)]                   # the root's data out


def test_dragonfly_seed_makes_every_congestor_share_a_global_link_with_the_canaries():
    # 100 Mbit/s nodes shaped to 50, global links at 25: only the global links are narrower.
    fly = build("dragonfly:groups=3,routers=2,global=0.25", FLY_NODES, 100_000_000)
    route = narrow_route(fly, FLY_NODES, 50_000_000)
    kinds = {link.name: link.kind for link in fly.links}
    seed = fabric_seed(5, 12, 0.25, list(CONGESTORS), route)
    shared = shared_links(seed, 12, 0.25, list(CONGESTORS), route)
    assert all(shared.values()) and {kinds[name] for hops in shared.values() for name, _ in hops} == {"global"}
    # GPCNeT's 20 % (two canaries) never gets all four onto the canaries' global link
    assert fabric_seed(5, 12, 0.2, list(CONGESTORS), route) is None
    assert fabric_seed(5, 12, 0.2, ["p2p_incast"], route) is not None
