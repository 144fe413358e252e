"""The congestion layout planner (seed per cluster size and topology); its shuffle is checked
against the real xt-congestion in tests/bench/test_congestion.py."""
import pytest

from crosstalk.errors import CrosstalkError
from crosstalk.models.congestion_layout import (
    CONGESTORS,
    Fabric,
    canary_count,
    congested_links,
    congestion_seed,
    flows,
    layout,
    members,
    shuffled,
)
from crosstalk.vcluster.topology import build

MBIT = 1_000_000


def names(hosts):
    return [f"n{i}" for i in range(1, hosts + 1)]


def star(hosts, shaped=50 * MBIT):
    return Fabric(build("star", names(hosts), 100 * MBIT), names(hosts), shaped)


def test_shuffle_is_a_permutation_and_depends_on_the_seed():
    assert sorted(shuffled(12, 5)) == list(range(12))
    assert shuffled(12, 5) != shuffled(12, 6)


def test_default_cluster_keeps_the_specs_seed():
    # 4 hosts x 2 endpoints: the layout the E4 spec describes (canaries n1 and n4, root on n4):
    # the incast fills n4's ingress link, which the canary on n1 sends through to the one on n4.
    plan = layout(5, 8, 4, 0.2, ["p2p_incast"])
    assert plan["canaries"] == [0, 7] and plan["roots"] == {"p2p_incast": 3}
    assert congestion_seed(5, 8, lambda v: v % 4, 0.2, ["p2p_incast"], star(4)) == 5
    assert congested_links(5, 8, lambda v: v % 4, 0.2, ["p2p_incast"], star(4)) == {"p2p_incast": {("in", "n4")}}


def test_the_specs_congestors_are_the_kernels():
    from crosstalk.specs import load_spec
    spec = load_spec("congestion")
    for profile in ("quick", "full"):
        assert set(spec.profile(profile)["parameters"]["congestors"]) <= {*CONGESTORS, "all"}


def test_members_are_dealt_round_robin_after_the_canaries():
    order = shuffled(12, 5)
    groups = members(5, 12, 0.2, list(CONGESTORS))
    assert groups["a2a"] == order[2::4] and groups["rma_bcast"] == order[5::4]
    assert sorted(v for g in groups.values() for v in g) == sorted(order[2:])
    assert flows("p2p_incast", [4, 1, 9]) == [(1, 4), (9, 4)]      # members into the root
    assert flows("rma_bcast", [4, 1]) == [(4, 1)]                   # the root's data out


def test_a_fat_tree_whose_uplinks_are_wider_than_any_load_gets_no_layout():
    # The shape that failed (issue 27): 7 nodes at 1 Gbit/s, uplinks of 2 Gbit/s, host links at
    # their nominal rate: an incast is limited by its root's ingress link and fills no uplink.
    tree = build("fattree:leaves=2,spines=1,oversub=2", names(7), 1000 * MBIT)
    fabric = Fabric(tree, names(7), 1000 * MBIT)
    assert congestion_seed(5, 7, lambda v: v, 0.25, ["p2p_incast"], fabric) is None
    # Oversubscribed 8:1 (uplinks of 500 Mbit/s) the incast from the other leaf fills the uplink.
    tree = build("fattree:leaves=2,spines=1,oversub=8", names(7), 1000 * MBIT)
    fabric = Fabric(tree, names(7), 1000 * MBIT)
    seed = congestion_seed(5, 7, lambda v: v, 0.25, ["p2p_incast"], fabric)
    assert seed is not None
    assert {link for link, _ in congested_links(seed, 7, lambda v: v, 0.25, ["p2p_incast"], fabric)["p2p_incast"]} \
        <= {link.name for link in tree.links}


# ---------------------------------------------------------------- the premise, on every shape
# For every topology and size the planner gives a seed for, the premise of E4's portable checks
# holds on the route model: some link is filled by the congestors' max-min fair shares (computed
# here by a second, independent method: each flow's rate by progressive filling over its links),
# carries that congestor's traffic and the canaries' the same way.

def fair_rates(paths, capacity):
    """Max-min fair rate of each path: raise every unfrozen flow's rate together until a link is
    full, freeze the flows through it, repeat (water filling, per flow)."""
    rate = [0.0] * len(paths)
    frozen = [not p for p in paths]
    total = dict.fromkeys(capacity, 0.0)
    while not all(frozen):
        count = {}
        for i, p in enumerate(paths):
            if not frozen[i]:
                for link in p:
                    count[link] = count.get(link, 0) + 1
        step = min((capacity[link] - total[link]) / n for link, n in count.items())
        for i, p in enumerate(paths):
            if not frozen[i]:
                rate[i] += step
                for link in p:
                    total[link] += step
        full = {link for link in count if total[link] >= capacity[link] * (1 - 1e-6)}
        frozen = [f or bool(full.intersection(p)) for f, p in zip(frozen, paths)]
    return rate


def premise_holds(seed, nodes, host_of, fraction, kinds, fabric):
    groups = members(seed, nodes, fraction, kinds)
    party = [(kind, fabric.flow(a, b, host_of)) for kind, group in groups.items() for a, b in flows(kind, group)]
    capacity = fabric.capacities(nodes)
    rates = fair_rates([p for _, p in party], capacity)
    canaries = shuffled(nodes, seed)[:canary_count(fraction, nodes)]
    canary_links = {link for a, b in flows("canary", canaries) for link in fabric.flow(a, b, host_of)}
    for kind in groups:
        def filled(link):
            return sum(r for r, (_, p) in zip(rates, party) if link in p) >= capacity[link] * (1 - 1e-6)
        mine = {link for k, p in party if k == kind for link in p}
        if not any(filled(link) for link in mine & canary_links):
            return False
    return True


#: shape -> how many layouts the planner gives for P2P incast alone and for all four congestors,
#: over 2-16 hosts (a star's hosts with 2 and with 3 endpoints each; 100 Mbit/s nodes, 20 Mbit/s
#: per congestor rank): fat trees up to 2:1 are too wide for what 2-16 congestor ranks send
#: through one uplink, and are skipped at every size.
SHAPES = {"star": (28, 13), "fattree:leaves=2,spines=1,oversub=1": (0, 0),
          "fattree:leaves=2,spines=2,oversub=2": (0, 0), "fattree:leaves=3,spines=1,oversub=4": (5, 0),
          "fattree:leaves=4,spines=2,oversub=8": (9, 6), "dragonfly:groups=2,routers=2,global=0.5": (11, 6),
          "dragonfly:groups=3,routers=2,global=0.25": (10, 5),
          "dragonfly:groups=4,routers=1,local=1,global=0.125": (12, 4)}


@pytest.mark.parametrize("kinds", [["p2p_incast"], list(CONGESTORS)], ids=["p2p_incast", "all"])
@pytest.mark.parametrize("shape, sizes", SHAPES.items())
def test_every_layout_the_planner_gives_holds_the_premise(shape, sizes, kinds):
    planned = skipped = 0
    for hosts in range(2, 17):
        try:
            topology = build(shape, names(hosts), 100 * MBIT)
        except CrosstalkError:
            continue                     # too few nodes for this many switches
        if shape == "star":              # endpoints share hosts, links shaped below nominal
            layouts = [(hosts * per, (lambda v, h=hosts: v % h), 50 * MBIT, 0.2) for per in (2, 3)]
        else:                            # one node per host at its nominal rate
            layouts = [(hosts, (lambda v: v), 100 * MBIT, 0.25)]
        for nodes, host_of, host_bps, fraction in layouts:
            fabric = Fabric(topology, names(hosts), host_bps, injection_bps=20 * MBIT)
            seed = congestion_seed(5, nodes, host_of, fraction, kinds, fabric)
            if seed is None:
                skipped += 1             # the case skips with its reason
                continue
            planned += 1
            assert premise_holds(seed, nodes, host_of, fraction, kinds, fabric), (shape, hosts, kinds, seed)
    assert planned == sizes[len(kinds) > 1], (shape, kinds, planned, skipped)


def test_where_no_layout_congests_the_planner_names_the_link_rate_that_would():
    """The 'not applicable' of a cluster whose links are wider than the congestors can fill (a
    node's cores send 20 Mbit/s on a 9-node Dragonfly at 250 Mbit/s) says at which link rate the
    planner would find a layout (issue 41); where no rate helps (a fat tree whose incast stops at its
    root's own link, every switch link scaled alike; too few nodes) it finds none."""
    from crosstalk.models.congestion_layout import congesting_rate
    dragonfly = Fabric(build("dragonfly:groups=3,routers=1,global=0.25", names(9), 250 * MBIT), names(9),
                       250 * MBIT, injection_bps=20 * MBIT)
    assert congestion_seed(5, 9, lambda v: v, 0.25, ["p2p_incast"], dragonfly) is None
    rate = congesting_rate(5, 9, lambda v: v, 0.25, ["p2p_incast"], dragonfly, 250 * MBIT)
    assert rate == 125 * MBIT
    slower = dragonfly.scaled(rate / (250 * MBIT))
    seed = congestion_seed(5, 9, lambda v: v, 0.25, ["p2p_incast"], slower)
    assert premise_holds(seed, 9, lambda v: v, 0.25, ["p2p_incast"], slower)
    tree = Fabric(build("fattree:leaves=2,spines=1,oversub=2", names(7), 1000 * MBIT), names(7), 1000 * MBIT,
                  injection_bps=20 * MBIT)
    assert congesting_rate(5, 7, lambda v: v, 0.25, ["p2p_incast"], tree, 1000 * MBIT) is None
