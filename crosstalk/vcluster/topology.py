"""Switch topologies of the virtual cluster: which switch each node hangs off, the switch-to-switch
links with their rates, and minimal routes (pure: no namespaces here; ``fabric`` builds them).

``star``: one switch (a bridge), as before. ``fattree:leaves=L,spines=S,oversub=R``: L leaf switches
with the nodes in blocks, each joined to every spine; a leaf's uplinks together carry its nodes'
nominal rate divided by R. ``dragonfly:groups=G,routers=A,local=X,global=Y``: G groups of A routers,
routers of a group all joined by local links, one global link between each pair of groups (spread
over the routers); X and Y are rates ('500mbit') or multiples of the node rate (0.5). Routing is
minimal: shortest path with a global hop costing more than any local detour, so traffic between
groups crosses exactly one global link; ties go to ``node index mod choices`` (d-mod-k)."""
import heapq
import math
from dataclasses import dataclass

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.rates import RATE_RE, format_rate, parse_rate

KINDS = {"star": {}, "fattree": {"leaves": 2, "spines": 1, "oversub": 1},
         "dragonfly": {"groups": 3, "routers": 2, "local": 1, "global": 1}}
COUNTS = ("leaves", "spines", "groups", "routers")
MAX_SWITCHES = 16
#: A global hop outweighs any detour of local hops (a group has at most 16 routers).
COST = {"uplink": 1, "local": 1, "global": 100}


@dataclass(frozen=True)
class SwitchLink:
    a: str
    b: str
    kind: str            # uplink (fat tree), local or global (dragonfly)
    rate_bps: int

    def dev(self, at):
        """The link's interface in switch ``at`` (named after the switch at the other end)."""
        return f"to-{self.b if at == self.a else self.a}"

    def other(self, at):
        return self.b if at == self.a else self.a

    @property
    def name(self):
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class Topology:
    spec: str            # canonical text, e.g. 'fattree:leaves=2,spines=1,oversub=2'
    kind: str
    switches: tuple
    attach: dict         # node -> switch
    links: tuple         # SwitchLink, switch to switch

    @property
    def routed(self):
        """Whether switches route (several switches) rather than bridge (the star)."""
        return self.kind != "star"

    def links_of(self, switch):
        return [link for link in self.links if switch in (link.a, link.b)]

    def _distances(self, target):
        dist, todo = {target: 0}, [(0, target)]
        while todo:
            d, sw = heapq.heappop(todo)
            if d > dist[sw]:
                continue
            for link in self.links_of(sw):
                nxt, nd = link.other(sw), d + COST[link.kind]
                if nd < dist.get(nxt, math.inf):
                    dist[nxt] = nd
                    heapq.heappush(todo, (nd, nxt))
        return dist

    def next_link(self, switch, node, index):
        """The link ``switch`` sends traffic for ``node`` (the ``index``-th node) out on; None if
        the node hangs off ``switch`` itself."""
        target = self.attach[node]
        if switch == target:
            return None
        dist = self._distances(target)
        if switch not in dist:
            raise CrosstalkError(f"topology {self.spec}: {switch} cannot reach {target}")
        choices = sorted((link for link in self.links_of(switch)
                          if COST[link.kind] + dist.get(link.other(switch), math.inf) == dist[switch]),
                         key=lambda link: link.other(switch))
        return choices[index % len(choices)]

    def routes(self, nodes):
        """{switch: {node: SwitchLink or None}} for every switch and node."""
        return {sw: {n: self.next_link(sw, n, i) for i, n in enumerate(nodes)} for sw in self.switches}

    def path(self, src, dst, nodes):
        """The switch-to-switch links a packet from node ``src`` to node ``dst`` crosses."""
        return [link for link, _ in self.directed_path(src, dst, nodes)]

    def directed_path(self, src, dst, nodes):
        """``(link, 'a_to_b' or 'b_to_a')`` for each link from ``src`` to ``dst``, in order: queues
        form per direction (each end's tbf)."""
        index, sw, crossed = nodes.index(dst), self.attach[src], []
        while (link := self.next_link(sw, dst, index)) is not None:
            crossed.append((link, "a_to_b" if sw == link.a else "b_to_a"))
            sw = link.other(sw)
        return crossed


def _value(kind, key, text, where):
    if key in COUNTS:
        if not text.isdigit() or int(text) < 1:
            raise CrosstalkError(f"{where}: {key}={text}: a positive integer")
        return int(text)
    if key != "oversub" and RATE_RE.match(text.lower()):
        parse_rate(text, where)
        return text.lower()
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value < math.inf:
        what = "a ratio such as 2" if key == "oversub" else \
            "a rate like 500mbit or a positive multiple of the node rate"
        raise CrosstalkError(f"{where}: {key}={text}: {what}")
    return value


def parse(text, where="topology"):
    """'dragonfly:groups=4' -> (kind, {every parameter, defaults filled in})."""
    kind, _, rest = str(text).strip().partition(":")
    if kind not in KINDS:
        raise CrosstalkError(f"{where}: {text!r}: the kind is one of {', '.join(KINDS)}")
    params = dict(KINDS[kind])
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if key not in params or not eq:
            known = ", ".join(f"{k}=" for k in KINDS[kind]) or "no parameters"
            raise CrosstalkError(f"{where}: {item!r}: {kind} takes {known}")
        params[key] = _value(kind, key, value.strip(), where)
    return kind, params


def _rate(value, node_bps):
    return parse_rate(value) if isinstance(value, str) else max(1000, int(node_bps * value))


def _blocks(nodes, switches):
    per = math.ceil(len(nodes) / len(switches))
    return {n: switches[i // per] for i, n in enumerate(nodes)}, per


def apply_fabric(kind, params, fabric, text, nodes, where):
    """Set the switch links from a machine's fabric balance (``machines.ratios()['fabric']``): a
    fat tree's oversubscription is injection over uplink bandwidth; a Dragonfly group's global links
    together carry ``global_to_injection`` times the group's injection (a multiple of the node rate
    per link). A value the text sets must be the machine's (the canonical text of a built cluster)."""
    ratio = fabric["global_to_injection"]
    if fabric["topology"] != kind:
        raise CrosstalkError(f"{where}: {text!r}: the machine's fabric is a {fabric['topology']} "
                             f"(global:injection {ratio:g}); use --topology {fabric['topology']}:...")
    if kind == "fattree":
        key, value = "oversub", 1 / ratio
    else:
        key, value = "global", ratio * math.ceil(len(nodes) / params["groups"]) / max(1, params["groups"] - 1)
    given = params[key]
    if f"{key}=" in str(text) and (isinstance(given, str) or abs(given / value - 1) > 1e-4):
        raise CrosstalkError(f"{where}: {text!r}: sets {key}= and the machine sets it to {value:g} "
                             f"(global:injection {ratio:g}); drop one")
    params[key] = value


def build(text, nodes, node_bps, where="topology", fabric=None):
    """The Topology ``text`` describes for ``nodes`` whose nominal rate is ``node_bps``; ``fabric``:
    a machine's fabric balance, which sets the fat tree's uplinks or the Dragonfly's global links."""
    kind, p = parse(text, where)
    if fabric:
        apply_fabric(kind, p, fabric, text, nodes, where)
    canonical = kind + (":" + ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                       for k, v in p.items()) if p else "")
    if kind == "star":
        return Topology(canonical, kind, ("sw",), {n: "sw" for n in nodes}, ())
    if kind == "fattree":
        leaves = [f"leaf{i}" for i in range(1, p["leaves"] + 1)]
        spines = [f"spine{i}" for i in range(1, p["spines"] + 1)]
        edge = leaves
        switches = leaves + spines
    else:
        edge = [f"g{g}r{r}" for g in range(1, p["groups"] + 1) for r in range(1, p["routers"] + 1)]
        switches = edge
    if len(switches) > MAX_SWITCHES:
        raise CrosstalkError(f"{where}: {text!r}: {len(switches)} switches, at most {MAX_SWITCHES}")
    if len(edge) > len(nodes) or (kind == "dragonfly" and p["groups"] < 2) or \
            (kind == "fattree" and p["leaves"] < 2):
        raise CrosstalkError(f"{where}: {text!r}: needs at least 2 {'leaves' if kind == 'fattree' else 'groups'} "
                             f"and no more edge switches ({len(edge)}) than nodes ({len(nodes)})")
    attach, per_switch = _blocks(nodes, edge)
    links = []
    if kind == "fattree":
        up = max(1000, int(per_switch * node_bps / (p["oversub"] * len(spines))))
        links = [SwitchLink(leaf, spine, "uplink", up) for leaf in leaves for spine in spines]
    else:
        local, glob, a = _rate(p["local"], node_bps), _rate(p["global"], node_bps), p["routers"]
        groups = range(1, p["groups"] + 1)
        links = [SwitchLink(f"g{g}r{i}", f"g{g}r{j}", "local", local)
                 for g in groups for i in range(1, a + 1) for j in range(i + 1, a + 1)]
        for g in groups:
            for h in groups:
                if g < h:
                    gi = [x for x in groups if x != g].index(h) % a + 1
                    hi = [x for x in groups if x != h].index(g) % a + 1
                    links.append(SwitchLink(f"g{g}r{gi}", f"g{h}r{hi}", "global", glob))
    return Topology(canonical, kind, tuple(switches), attach, tuple(links))


def describe(topology, nodes):
    """One line per switch: its nodes and links, for ``vcluster status``."""
    lines = []
    for sw in topology.switches:
        mine = [n for n in nodes if topology.attach[n] == sw]
        links = ", ".join(f"{link.kind} {link.other(sw)} {format_rate(link.rate_bps)}"
                          for link in topology.links_of(sw))
        lines.append(f"{sw}: {' '.join(mine) or '-'}" + (f"; {links}" if links else ""))
    return lines
