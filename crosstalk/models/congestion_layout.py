"""Where xt-congestion puts canaries and congestors when several GPCNeT nodes share a host.

xt-congestion shuffles its GPCNeT nodes with ``--seed`` (splitmix64 Fisher-Yates, as in
bench/common/xt_common.c): the first ``ncanary`` shuffled nodes are canaries, the rest go round robin
to the congestors, and each congestor's root (incast and broadcast target) is its first node. With
``--allow-shared-nodes`` node ``v`` is placed on host ``v mod hosts``. On a star of shaped links the
congestion a canary sees is queueing in *its own host's* link, so a useful layout has canaries on
two hosts at least and an incast or broadcast root on a canary host. Which seed gives that depends on the number
of hosts: :func:`layout_seed` finds the first one from the spec's seed on, for any cluster size.
"""
MASK = 2**64 - 1
#: xt-congestion's congestor order (its --congestors list is used in this order).
CONGESTORS = ("a2a", "p2p_incast", "rma_incast", "rma_bcast")
ROOTED = ("p2p_incast", "rma_incast", "rma_bcast")
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


def useful(plan):
    """Canaries on two hosts or more and, where a congestor has a root, one root on a canary host
    (with two canary hosts, all three roots there is more than most sizes allow)."""
    canary_hosts = {plan["host_of"][v] for v in plan["canaries"]}
    roots = [root for kind, root in plan["roots"].items() if kind in ROOTED]
    return len(canary_hosts) >= 2 and (not roots or any(plan["host_of"][r] in canary_hosts
                                                        for r in roots))


def layout_seed(seed, nodes, hosts, fraction, congestors):
    """The first seed from ``seed`` on whose layout is useful, or None (none, or too few nodes:
    2 canaries and 2 nodes per congestor at least)."""
    if nodes < canary_count(fraction, nodes) + 2 * len(congestors):
        return None
    for candidate in range(seed, seed + SEARCH):
        if useful(layout(candidate, nodes, hosts, fraction, congestors)):
            return candidate
    return None


# ------------------------------------------------------------------ routed fabrics
# On a fat tree or Dragonfly each host is one GPCNeT node (no shared host links), and congestion
# is queueing in switch-to-switch links that canary and congestor traffic cross in the same
# direction. ``route(a, b)`` gives the directed links from host a to host b (topology.directed_path).

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


def shared_links(seed, nodes, fraction, congestors, route):
    """{congestor: directed links its traffic shares with the canaries'} for one host per node."""
    canaries = shuffled(nodes, seed)[:canary_count(fraction, nodes)]
    canary_links = {hop for a, b in flows("canary", canaries) for hop in route(a, b)}
    return {kind: {hop for a, b in flows(kind, group) for hop in route(a, b)} & canary_links
            for kind, group in members(seed, nodes, fraction, congestors).items()}


def fabric_seed(seed, nodes, fraction, congestors, route):
    """The first seed from ``seed`` on where every congestor's traffic shares a switch link with
    the canaries' (in one direction), or None."""
    if nodes < canary_count(fraction, nodes) + 2 * len(congestors):
        return None
    for candidate in range(seed, seed + SEARCH):
        if all(shared_links(candidate, nodes, fraction, congestors, route).values()):
            return candidate
    return None


def narrow_route(topology, names, node_bps):
    """``route(a, b)`` over hosts ``names`` (index -> node name) keeping only the switch links
    narrower than a node's link (where queues form; all switch links if none is narrower)."""
    narrow = {link.name for link in topology.links if link.rate_bps < node_bps} or \
        {link.name for link in topology.links}

    def route(a, b):
        return [(link.name, way) for link, way in topology.directed_path(names[a], names[b], names)
                if link.name in narrow]
    return route
