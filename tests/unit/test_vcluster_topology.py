"""Virtual-cluster topologies (crosstalk.vcluster.topology): layout, link rates and minimal routes,
and the inventory's ``vcluster_topology`` errors (pure: no namespaces)."""
import itertools
import shutil

import pytest
import yaml
from vcluster_fixtures import INVENTORY

from crosstalk.errors import CrosstalkError, InputError
from crosstalk.vcluster import VCluster
from crosstalk.vcluster.topology import build

NODES = [f"n{i}" for i in range(1, 13)]
GBIT = 10**9


def test_star_is_one_bridging_switch():
    star = build("star", NODES[:4], GBIT)
    assert star.switches == ("sw",) and not star.routed and star.links == ()
    assert set(star.attach.values()) == {"sw"} and star.path("n1", "n4", NODES[:4]) == []


def test_dragonfly_routes_minimally_over_one_global_link():
    fly = build("dragonfly:groups=3,routers=2,global=0.5", NODES, GBIT)
    assert fly.spec == "dragonfly:groups=3,routers=2,local=1,global=0.5"
    assert len(fly.switches) == 6 and fly.attach["n1"] == "g1r1" and fly.attach["n12"] == "g3r2"
    kinds = {link.name: link.kind for link in fly.links}
    assert sorted(kinds.values()).count("global") == 3 and sorted(kinds.values()).count("local") == 3
    assert {link.rate_bps for link in fly.links if link.kind == "global"} == {GBIT // 2}
    group = {n: fly.attach[n][:2] for n in NODES}
    for src, dst in itertools.permutations(NODES, 2):
        path = fly.path(src, dst, NODES)
        globals_crossed = [link for link in path if link.kind == "global"]
        # between groups exactly one global link, inside a group none; local hops at most one each side
        assert len(globals_crossed) == (group[src] != group[dst]), (src, dst, path)
        assert len(path) <= 3
    # n1 (g1r1) to n12 (g3r2): g1's link to g3 hangs off g1r2 and lands on g3r1
    assert [link.name for link in fly.path("n1", "n12", NODES)] == ["g1r1-g1r2", "g1r2-g3r1", "g3r1-g3r2"]


def test_fat_tree_uplinks_carry_the_leaf_rate_over_the_oversubscription():
    tree = build("fattree:leaves=2,spines=2,oversub=2", NODES[:8], GBIT)
    # 4 nodes per leaf at 1 Gbit/s, halved, over 2 spines: 1 Gbit/s per uplink
    assert {link.rate_bps for link in tree.links} == {GBIT} and len(tree.links) == 4
    spines = set()
    for dst in NODES[4:8]:
        path = tree.path("n1", dst, NODES[:8])
        assert [link.kind for link in path] == ["uplink", "uplink"]
        spines.add(path[0].b)
    assert spines == {"spine1", "spine2"}           # destinations spread over the spines (d-mod-k)
    assert tree.path("n1", "n4", NODES[:8]) == []   # same leaf: the leaf switch alone


@pytest.mark.parametrize("text, message", [
    ("torus", "the kind is one of star, fattree, dragonfly"),
    ("fattree:leafs=2", "'leafs=2': fattree takes leaves=, spines=, oversub="),
    ("dragonfly:groups=zero", "groups=zero: a positive integer"),
    ("dragonfly:groups=1", "needs at least 2 groups"),
    ("dragonfly:groups=8,routers=2", "no more edge switches (16) than nodes (12)"),
    ("fattree:oversub=fast", "oversub=fast: a ratio such as 2"),
    ("fattree:oversub=1gbit", "oversub=1gbit: a ratio such as 2"),
    ("dragonfly:global=-1", "global=-1: a rate like 500mbit or a positive multiple"),
    ("star:nodes=3", "star takes no parameters"),
])
def test_bad_topologies_are_one_line_errors(text, message):
    with pytest.raises(CrosstalkError) as err:
        build(text, NODES, GBIT)
    assert message in str(err.value) and "\n" not in str(err.value)


def inventory_with(tmp_path, **settings):
    """A copy of the default inventory with ``settings`` in its vcluster.yml: (inventory, that file)."""
    inv = tmp_path / "inv"
    shutil.copytree(INVENTORY, inv)
    gv = inv / "group_vars" / "all" / "vcluster.yml"
    gv.write_text(yaml.safe_dump({**yaml.safe_load(gv.read_text()), **settings}))
    return inv, gv


def test_inventory_topology_error_names_file_and_field(tmp_path):
    inv, gv = inventory_with(tmp_path, vcluster_topology="dragonfly:groups=3")
    with pytest.raises(InputError) as err:          # 4 nodes cannot fill 6 routers
        VCluster.from_inventory(inv)
    assert str(err.value).startswith(f"{gv}: vcluster_topology: ")
    vc = VCluster.from_inventory(inv, nodes=12)
    assert vc.topology.kind == "dragonfly" and vc._config()["topology"] == vc.topology.spec


def test_a_machines_fabric_balance_sets_the_global_links_and_uplinks():
    from crosstalk.site.machines import load, ratios
    theta = ratios(load("chunduri2019-theta"))["fabric"]        # GPCNeT Table 1: 55 % global:injection
    fly = build("dragonfly:groups=3,routers=2", NODES, 100 * 10**6, fabric=theta)
    # a group's 4 nodes inject 400 Mbit/s; its 2 global links carry 55 % of that: 110 Mbit/s each
    assert {link.rate_bps for link in fly.links if link.kind == "global"} == {110 * 10**6}
    assert build(fly.spec, NODES, 100 * 10**6, fabric=theta).spec == fly.spec   # as_running rebuilds it
    sierra = ratios(load("chunduri2019-sierra"))["fabric"]      # a tree at 50 %: oversubscribed 2:1
    tree = build("fattree:leaves=2,spines=1", NODES[:4], 100 * 10**6, fabric=sierra)
    assert [link.rate_bps for link in tree.links] == [100 * 10**6, 100 * 10**6]   # 2 nodes x 100 / 2


@pytest.mark.parametrize("text, message", [
    ("star", "the machine's fabric is a dragonfly (global:injection 0.55); use --topology dragonfly:"),
    ("dragonfly:groups=3,global=3", "sets global= and the machine sets it to 1.1"),
])
def test_a_topology_that_contradicts_the_machines_fabric_is_refused(text, message):
    from crosstalk.site.machines import load, ratios
    with pytest.raises(CrosstalkError) as err:
        build(text, NODES, 100 * 10**6, fabric=ratios(load("chunduri2019-theta"))["fabric"])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_inventory_like_a_fabric_machine_on_a_star_names_the_topology_field(tmp_path):
    inv, gv = inventory_with(tmp_path, vcluster_like="chunduri2019-crystal")
    with pytest.raises(InputError) as err:
        VCluster.from_inventory(inv)
    assert str(err.value).startswith(f"{gv}: vcluster_topology: ") and "dragonfly" in str(err.value)
    vc = VCluster.from_inventory(inv, nodes=12, topology="dragonfly:groups=3,routers=2")
    assert vc.fabric_target()["global_to_injection"] == 1.0
