"""Where xt-congestion puts canaries and congestors when several GPCNeT nodes share a host.

xt-congestion shuffles its GPCNeT nodes with ``--seed`` (splitmix64 Fisher-Yates, as in
bench/common/xt_common.c): the first ``ncanary`` shuffled nodes are canaries, the rest go round robin
to the congestors, and each congestor's root (incast and broadcast target) is its first node. With
``--allow-shared-nodes`` node ``v`` is placed on host ``v mod hosts``. Congestion is queueing in a
link that congestor and canary traffic share: which seed gives that depends on the number of hosts
and the topology; :func:`congestion_seed` finds the first one from the spec's seed on.
"""
MASK = 2**64 - 1
#: xt-congestion's congestor order (its --congestors list is used in this order).
CONGESTORS = ("a2a", "p2p_incast", "rma_incast", "rma_bcast")
#: Seeds tried after the spec's before giving up (a layout exists for every size >= 2 hosts).
SEARCH = 1000


def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def shuffled(n, seed):
    """xt_shuffle_int over 0..n-1."""
    order, state = list(range(n)), seed & MASK
    for i in range(n - 1, 0, -1):
        state, value = _splitmix64(state)
        k = value % (i + 1)
        order[i], order[k] = order[k], order[i]
    return order


def canary_count(fraction, nodes):
    """round(fraction x nodes), at least 2 (xt-congestion and GPCNeT)."""
    return max(2, int(fraction * nodes + 0.5))


def layout(seed, nodes, hosts, fraction, congestors):
    """{'canaries': [node...], 'roots': {congestor: node}} for ``congestors`` (names)."""
    kinds = [c for c in CONGESTORS if c in congestors]
    order = shuffled(nodes, seed)
    ncanary = canary_count(fraction, nodes)
    roots = {kind: order[ncanary + i] for i, kind in enumerate(kinds)}
    return {"canaries": order[:ncanary], "roots": roots,
            "host_of": {v: v % hosts for v in range(nodes)}}


def members(seed, nodes, fraction, congestors):
    """{congestor: [node...]} as xt-congestion assigns them (round robin in shuffled order)."""
    kinds = [c for c in CONGESTORS if c in congestors]
    order = shuffled(nodes, seed)
    ncanary = canary_count(fraction, nodes)
    return {kind: order[ncanary + i::len(kinds)] for i, kind in enumerate(kinds)}


def flows(kind, group):
    """Directed (src, dst) node pairs a party's traffic takes: all pairs for the canaries' random
    rings and the all-to-all; members to the root (its first node) for the incasts; the root's data
    to the members for the Get broadcast."""
    root, rest = group[0], group[1:]
    if kind in ("p2p_incast", "rma_incast"):
        return [(v, root) for v in rest]
    if kind == "rma_bcast":
        return [(root, v) for v in rest]
    return [(a, b) for a in group for b in group if a != b]


# ------------------------------------------------------------------ where queues form
# A flow between GPCNeT nodes on two hosts crosses the sender's host link out, the switch links of
# its route (each direction its own queue) and the receiver's host link in. Congestion needs a link
# the congestors fill that canary traffic crosses the same way: on a star that is a canary host's
# link (an incast root beside a canary), on a fat tree or Dragonfly a switch link narrower than
# what crosses it. Which links the congestors fill follows from max-min fair shares (every flow
# as fast as its links allow, progressive filling), with the links' real rates.

class Fabric:
    """Directed links of a cluster with their rates: host links ('out'/'in', host) at the shaped
    rate ``host_bps``, switch links at the rates the topology built them with, and, with
    ``injection_bps``, what one GPCNeT node can send (('send', node): on a few shared cores a
    congestor rank is slower than its link)."""

    def __init__(self, topology, names, host_bps, injection_bps=None):
        self.topology, self.names, self.injection_bps = topology, names, injection_bps
        self._paths = {}
        self.capacity = {(way, n): host_bps for n in names for way in ("out", "in")}
        for link in topology.links:
            for way in ("a_to_b", "b_to_a"):
                self.capacity[(link.name, way)] = link.rate_bps

    def scaled(self, factor):
        """The same cluster with every link (host and switch) at ``factor`` times its rate; what a
        GPCNeT node can send stays (a node's cores do not get faster with a slower link)."""
        other = Fabric.__new__(Fabric)
        other.topology, other.names, other.injection_bps = self.topology, self.names, self.injection_bps
        other._paths = self._paths
        other.capacity = {link: rate * factor for link, rate in self.capacity.items()}
        return other

    def path(self, a, b):
        """The directed links from host index ``a`` to host index ``b`` ([] on one host)."""
        if a == b:
            return []
        if (a, b) not in self._paths:     # routing is a search: once per pair
            src, dst = self.names[a], self.names[b]
            self._paths[a, b] = [("out", src), *((link.name, way) for link, way in
                                                 self.topology.directed_path(src, dst, self.names)), ("in", dst)]
        return self._paths[a, b]

    def flow(self, a, b, host_of):
        """The links a flow from GPCNeT node ``a`` to node ``b`` crosses, its sender's included."""
        links = self.path(host_of(a), host_of(b))
        return [("send", a), *links] if links and self.injection_bps else links

    def capacities(self, nodes):
        """Every link's rate, the ``nodes`` GPCNeT nodes' send links included."""
        sends = {("send", v): self.injection_bps for v in range(nodes)} if self.injection_bps else {}
        return {**self.capacity, **sends}


def filled_links(paths, capacity):
    """The links max-min fair shares of flows along ``paths`` fill to their rate."""
    remaining = dict(capacity)
    active = [p for p in paths if p]
    filled = set()
    while active:
        users = {}
        for path in active:
            for link in path:
                users[link] = users.get(link, 0) + 1
        share = min(remaining[link] / n for link, n in users.items())
        for link, n in users.items():
            remaining[link] -= share * n
        full = {link for link in users if remaining[link] <= 1e-6 * capacity[link]}
        filled |= full
        active = [p for p in active if not full.intersection(p)]
    return filled


def congested_links(seed, nodes, host_of, fraction, congestors, fabric):
    """{congestor: links its traffic crosses that the congestors together fill and the canaries'
    traffic also crosses}, GPCNeT node v on host ``host_of(v)``."""
    def paths(kind, group):
        return [fabric.flow(a, b, host_of) for a, b in flows(kind, group)]
    groups = members(seed, nodes, fraction, congestors)
    filled = filled_links([p for kind, group in groups.items() for p in paths(kind, group)],
                          fabric.capacities(nodes))
    canaries = shuffled(nodes, seed)[:canary_count(fraction, nodes)]
    canary_links = {link for p in paths("canary", canaries) for link in p}
    return {kind: {link for p in paths(kind, group) for link in p} & canary_links & filled
            for kind, group in groups.items()}


def congestion_seed(seed, nodes, host_of, fraction, congestors, fabric):
    """The first seed from ``seed`` on where every congestor's traffic crosses a link that the
    congestors fill and the canaries cross (:func:`congested_links`), or None (none in SEARCH
    seeds, or too few nodes: 2 canaries and 2 nodes per congestor at least)."""
    if nodes < canary_count(fraction, nodes) + 2 * len(congestors):
        return None
    for candidate in range(seed, seed + SEARCH):
        if all(congested_links(candidate, nodes, host_of, fraction, congestors, fabric).values()):
            return candidate
    return None


def congesting_rate(seed, nodes, host_of, fraction, congestors, fabric, host_bps, floor_bps=1e6):
    """Where :func:`congestion_seed` finds no layout: the highest host-link rate, halving from
    ``host_bps`` (every switch link scaled with it) down to ``floor_bps``, at which it finds one;
    None if none does (then no link rate helps: too few nodes, or no route the two share)."""
    factor = 0.5
    while host_bps * factor >= floor_bps:
        if congestion_seed(seed, nodes, host_of, fraction, congestors, fabric.scaled(factor)) is not None:
            return host_bps * factor
        factor /= 2
    return None
