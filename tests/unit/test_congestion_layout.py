"""The congestion layout planner (seed per cluster size); its shuffle is checked against the real
xt-congestion in tests/bench/test_congestion.py."""
import pytest

from crosstalk.models.congestion_layout import CONGESTORS, layout, layout_seed, shuffled, useful


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
