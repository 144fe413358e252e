"""Experiments the main job runs at the balance they need: an experiment whose spec names a paper
machine (``like:``) runs, when the main job's system is a virtual cluster shaped otherwise, on a
shipped inventory of kind vcluster shaped like that machine (its own virtual cluster, brought up
for it), and its claims are judged there. The main run's provenance records each move (``moved``):
the system and run it went to, or why it stayed (the host cannot shape a node's CPU, or no
inventory is shaped like the machine), which the claims then say."""
from crosstalk.claims.balance import shaped_like
from crosstalk.errors import CrosstalkError
from crosstalk.site.inventory import load_system, resolve_inventory
from crosstalk.vcluster.balance import cpu_groups_available


def _vcluster_shaped_like(like):
    """The first shipped inventory of kind vcluster shaped like ``like``, or None."""
    for name in shaped_like(like):
        try:
            if load_system(resolve_inventory(name))["kind"] == "vcluster":
                return name
        except CrosstalkError:
            continue
    return None


def plan_moves(cluster, specs):
    """``{experiment: {"like", "inventory", "error"}}`` for the experiments of ``specs`` that need a
    balance the main job's virtual cluster (``cluster``, None elsewhere) is not shaped like:
    ``inventory`` where they go, or ``error`` why they stay. A real cluster runs every experiment."""
    if cluster is None:
        return {}
    moves = {}
    for spec in specs:
        like = spec.data.get("like")
        if not like or like == cluster.like:
            continue
        inventory = _vcluster_shaped_like(like)
        error = None
        if inventory is None:
            error = f"no shipped inventory of kind vcluster is shaped like {like}"
        elif not cpu_groups_available():
            error = (f"this host has no writable cgroup CPU controller, so no virtual cluster here can be "
                     f"shaped like {like}")
        moves[spec.name] = {"like": like, "inventory": inventory if error is None else None, "error": error}
    return moves


def staying(specs, moves):
    """The specs the main job's own system runs: all but those moved elsewhere."""
    return [s for s in specs if not (moves.get(s.name) or {}).get("inventory")]


def destinations(moves):
    """``{inventory: [experiment, ...]}`` of the moves that go somewhere, in order."""
    out = {}
    for name, move in moves.items():
        if move.get("inventory"):
            out.setdefault(move["inventory"], []).append(name)
    return out
