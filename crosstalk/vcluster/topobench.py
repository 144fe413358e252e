"""Topology benchmark of the virtual cluster (a benchmark, not a test): ``crosstalk vcluster
bench-topologies``.

For each topology, on a private cluster (name ``vctbench``, 198.19.11.0/24):

* achieved against configured rate per link type: one iperf3 flow between two nodes whose path
  crosses that link type, made the narrowest link on the path (node links at ``NODE_RATE``);
* where inter-group traffic goes: bytes each switch link's tc counters gained while 16 MiB went
  from a node to one in another group (Dragonfly) or leaf (fat tree);
* bring-up time (``up`` until every slurmd is idle) by node count.

Writes results/vcluster/topologies-<timestamp>.json and results/vcluster/topologies.md.
"""
import datetime
import os
import statistics
import time

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster import VCluster
from crosstalk.vcluster.iperf import iperf_flows
from crosstalk.vcluster.linkbench import host_facts, write_results
from crosstalk.vcluster.rates import format_rate

NAME, SUBNET = "vctbench", "198.19.11.0/24"
NODE_RATE = "200mbit"
MIB = 1024 * 1024
#: (topology, nodes for the rate and traffic measurements, (link kind, src, dst) pairs per kind)
CASES = [
    ("star", 4, [("node", "n1", "n2")]),
    ("fattree:leaves=2,spines=2,oversub=4", 8, [("node", "n1", "n2"), ("uplink", "n1", "n5")]),
    ("dragonfly:groups=3,routers=2,local=0.75,global=0.5", 12,
     [("node", "n1", "n2"), ("local", "n1", "n3"), ("global", "n1", "n5")]),
]
SIZES = {"star": (2, 4, 8, 12, 16), "fattree": (4, 8, 12, 16), "dragonfly": (6, 12, 16)}


def _cluster(inventory, topology, nodes):
    return VCluster.from_inventory(inventory, name=NAME, subnet=SUBNET, nodes=nodes, topology=topology,
                                   link_rate=NODE_RATE)


def _narrowest(vc, kind, src, dst):
    """The configured rate the flow src -> dst is held to: its node links and switch links."""
    rates = [vc.node_rates[src], vc.node_rates[dst]] + [link.rate_bps for link in vc.topology.path(src, dst, vc.nodes)]
    crossed = {link.kind for link in vc.topology.path(src, dst, vc.nodes)}
    if kind != "node" and kind not in crossed:
        raise CrosstalkError(f"bench-topologies: {src} -> {dst} does not cross a {kind} link on {vc.topology.spec}")
    return min(rates)


def _switch_bytes(vc):
    return {(c["link"], c["kind"], way): c[way]["bytes"] for c in vc.link_counters() if c["kind"] != "node"
            for way in ("a_to_b", "b_to_a")}


def bench_topology(inventory, topology, nodes, pairs, seconds, repeats):
    vc = _cluster(inventory, topology, nodes)
    vc.down()
    vc.up()
    try:
        rates = []
        for kind, src, dst in pairs:
            configured = _narrowest(vc, kind, src, dst)
            runs = [round(iperf_flows(vc, [(src, dst)], seconds)[0]) for _ in range(repeats)]
            rates.append({"kind": kind, "src": src, "dst": dst, "configured_bps": configured,
                          "achieved_bps": max(runs), "runs_bps": runs,
                          "median_efficiency": round(statistics.median(runs) / configured, 4)})
            print(f"  {topology:<52} {kind:<7} {src}->{dst}: {max(runs) / 1e6:7.1f} of "
                  f"{configured / 1e6:.0f} Mbit/s", flush=True)
        traffic = None
        far = [p for p in pairs if p[0] in ("global", "uplink")]
        if far:
            _, src, dst = far[0]
            before = _switch_bytes(vc)
            iperf_flows(vc, [(src, dst)], nbytes=16 * MIB)
            time.sleep(0.5)                 # the tail still queued when the client returned
            path = {(link.name, way) for link, way in vc.topology.directed_path(src, dst, vc.nodes)}
            traffic = {"src": src, "dst": dst, "links": [
                {"link": name, "kind": kind, "way": way, "on_path": (name, way) in path,
                 "bytes": after - before[(name, kind, way)]}
                for (name, kind, way), after in sorted(_switch_bytes(vc).items())]}
    finally:
        vc.down()
    return {"topology": vc.topology.spec, "nodes": nodes, "node_rate": NODE_RATE, "rates": rates,
            "traffic": traffic, "switches": len(vc.topology.switches), "links": len(vc.topology.links)}


def bench_bringup(inventory, topology, sizes):
    rows = []
    for n in sizes:
        vc = _cluster(inventory, topology, n)
        vc.down()
        t0 = time.monotonic()
        vc.up()
        t_up = time.monotonic() - t0
        t0 = time.monotonic()
        vc.down()
        rows.append({"nodes": n, "switches": len(vc.topology.switches), "up_s": round(t_up, 3),
                     "down_s": round(time.monotonic() - t0, 3)})
        print(f"  {topology:<52} N={n:>2}: up {t_up:5.2f} s", flush=True)
    return rows


def markdown(doc):
    lines = [f"# Virtual cluster topologies ({doc['time']})", "",
             f"Host: {doc['host']['kernel']}, {doc['host']['cpus']} CPUs, load before {doc['host']['loadavg'][0]} "
             f"(shared machine). Node links at {NODE_RATE}; each flow is one iperf3 TCP stream of "
             f"{doc['seconds']} s, best and median of {doc['repeats']}; the configured rate is the narrowest "
             "link on the flow's path (tbf on both ends of every link).", "",
             "| topology | link type | flow | configured | achieved (best) | median/configured |",
             "|---|---|---|---:|---:|---:|"]
    for t in doc["topologies"]:
        for r in t["rates"]:
            lines.append(f"| {t['topology']} | {r['kind']} | {r['src']} → {r['dst']} | "
                         f"{format_rate(r['configured_bps'])} | {r['achieved_bps'] / 1e6:.1f} Mbit/s | "
                         f"{r['median_efficiency']:.1%} |")
    lines += ["", "Where 16 MiB between groups (Dragonfly) or leaves (fat tree) went: bytes each "
              "switch link's tc counter gained, per direction (on the route: **bold**).", "",
              "| topology | flow | link | kind | direction | bytes |", "|---|---|---|---|---|---:|"]
    for t in doc["topologies"]:
        tr = t["traffic"]
        for link in tr["links"] if tr else ():
            cell = f"**{link['bytes']:,}**" if link["on_path"] else f"{link['bytes']:,}"
            lines.append(f"| {t['topology']} | {tr['src']} → {tr['dst']} | {link['link']} | {link['kind']} | "
                         f"{link['way'].replace('_', ' ')} | {cell} |")
    lines += ["", "Bring-up: `up` from nothing until every slurmd is idle; `down` (all processes gone).", "",
              "| topology | nodes | switches | up (s) | down (s) |", "|---|---:|---:|---:|---:|"]
    for t in doc["bringup"]:
        for r in t["rows"]:
            lines.append(f"| {t['topology']} | {r['nodes']} | {r['switches']} | {r['up_s']:.2f} | {r['down_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main(args):
    if os.geteuid() != 0:
        raise CrosstalkError("vcluster bench-topologies: needs root")
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {"time": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "seconds": args.seconds, "repeats": args.repeats,
           "host": host_facts()}
    print("rates and routes:", flush=True)
    doc["topologies"] = [bench_topology(args.inventory, t, n, pairs, args.seconds, args.repeats)
                         for t, n, pairs in CASES]
    print("bring-up:", flush=True)
    doc["bringup"] = [{"topology": t, "rows": bench_bringup(args.inventory, t, SIZES[t.split(":")[0]])}
                      for t, _, _ in CASES]
    write_results(args.out, "topologies", doc, markdown(doc))
    return 0
