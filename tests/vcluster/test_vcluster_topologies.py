"""Routed topologies on private clusters (a Dragonfly vctopo, 198.19.10.0/24, and fat trees vctopf,
198.19.13.0/24: apart, so that either test may run first): traffic takes the minimal route (tc
counters rise on exactly the links of the path) and an oversubscribed fat-tree uplink caps what
crosses it. Real namespaces, tbf and iperf3 flows."""
import subprocess
from pathlib import Path

import pytest
from vcluster_fixtures import INVENTORY, skip_unless_root

from crosstalk.vcluster.iperf import iperf_flows

pytestmark = [pytest.mark.root, pytest.mark.cluster]
NAME, SUBNET = "vctopo", "198.19.10.0/24"
FATTREE_NAME, FATTREE_SUBNET = "vctopf", "198.19.13.0/24"
MIB = 1024 * 1024


def _cluster(name=NAME, subnet=SUBNET, **settings):
    from crosstalk.vcluster import VCluster
    return VCluster.from_inventory(INVENTORY, name=name, subnet=subnet, **settings)


def _root_forwarding():
    return Path("/proc/sys/net/ipv4/ip_forward").read_text()


@pytest.fixture(scope="module")
def dragonfly():
    skip_unless_root()
    vc = _cluster(nodes=6, topology="dragonfly:groups=3,routers=2", link_rate="200mbit")
    forwarding = _root_forwarding()
    vc.up()
    yield vc, forwarding
    vc.down()


def test_routing_stays_inside_the_switch_namespaces(dragonfly):
    vc, forwarding = dragonfly
    assert _root_forwarding() == forwarding          # only the switches forward
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=30).stdout
    assert not any(f" {dev}@" in links or f" {dev}:" in links for dev in ("to-g1r2", "p1"))
    status = vc.status()
    assert status["up"] and status["topology"] == "dragonfly:groups=3,routers=2,local=1,global=1"
    assert {d["switch"] for d in status["nodes"].values()} == set(vc.topology.switches)


def _sent(vc):
    """{(link, direction): bytes} for the switch-to-switch links."""
    return {(c["link"], d): c[d]["bytes"] for c in vc.link_counters() if c["kind"] != "node"
            for d in ("a_to_b", "b_to_a")}


@pytest.mark.parametrize("src, dst", [("n1", "n2"), ("n1", "n3"), ("n1", "n6"), ("n4", "n5")])
def test_traffic_crosses_exactly_the_links_of_its_minimal_route(dragonfly, src, dst):
    vc, _ = dragonfly
    path = vc.topology.path(src, dst, vc.nodes)
    before = _sent(vc)
    iperf_flows(vc, [(src, dst)], nbytes=8 * MIB)
    grown = {key: after - before[key] for key, after in _sent(vc).items()}
    travelled = {(link.name, way) for link, way in vc.topology.directed_path(src, dst, vc.nodes)}
    # 8 MiB of data on the way there, less what is still queued when the client returns (7.3 MiB
    # counted); elsewhere only Slurm's pings and the flow's ACKs (about 2 % of the data, on the way
    # back): 6 MiB and 1 MiB keep both sides several times clear of what was measured.
    for key, delta in grown.items():
        if key in travelled:
            assert delta >= 6 * MIB, (key, delta, grown)
        else:
            assert delta < MIB, (key, delta, sorted(travelled))
    groups = {vc.topology.attach[n][:2] for n in (src, dst)}
    assert sum(link.kind == "global" for link in path) == (len(groups) == 2)


def test_oversubscribed_uplink_caps_the_traffic_between_leaves():
    skip_unless_root()
    flows = [("n1", "n3"), ("n2", "n4")]       # leaf1 -> leaf2, two flows at 100 Mbit/s each
    aggregate = {}
    try:
        for oversub in (2, 1):
            vc = _cluster(FATTREE_NAME, FATTREE_SUBNET, nodes=4, link_rate="100mbit",
                          topology=f"fattree:leaves=2,spines=1,oversub={oversub}")
            vc.up()
            (uplink,) = {link.rate_bps for link in vc.topology.links}
            assert uplink == 200_000_000 // oversub
            aggregate[oversub] = sum(iperf_flows(vc, flows, seconds=3))
    finally:
        vc.down()
    # tbf never sends above its rate (a 128 KiB bucket adds under 0.4 Mbit/s over 3 s): the halved
    # uplink holds both flows to 100 Mbit/s together ...
    assert aggregate[2] <= 1.02 * 100e6, aggregate
    # ... which the full uplink does not: both flows then reach most of their own links' rate
    # (96 % measured for one flow; 1.5x leaves room for a busy host at these low rates).
    assert aggregate[1] >= 1.5 * 100e6, aggregate
