"""What a platform is, read from a run's provenance, for a claim's ``where:`` (a claim about NICs
that offload RDMA does not apply where none does).

Facts: ``kind`` (cluster, local, vcluster), ``sockets`` and ``cores`` of a node, ``fabric`` (veth,
ethernet, infiniband, ...) and ``nic``: ``offload`` (a verbs NIC that runs the protocol itself),
``onload`` (a verbs NIC or soft RDMA whose protocol runs on the host's cores) or ``tcp`` (no RDMA:
the host's TCP stack carries MPI, so the host's cores do the protocol work, as with onload).
``link_gbit`` is a node's link rate (the inventory's ``link_rate`` or the fastest verbs port);
``topology`` the switch topology's kind (star, fattree, dragonfly; a virtual cluster's before runs
recorded it was a star). ``like``: the paper machine a virtual cluster was shaped like, and
``network_to_memory`` the bytes of link per byte of Triad its bring-up measured. ``capabilities``:
what at least one of the system's partitions can do (the inventory's ``capabilities`` flags that
are true: cpufreq, rdma, rapl, link_control, ...). ``moved``: the experiments a main job ran on
another system shaped like the machine they need (crosstalk.run.balanced): ``{experiment: {like,
system, run_id, error}}``.
A fact the provenance does not record is None.
"""
import json
import re

#: Verbs device name prefixes whose protocol runs on the NIC (Groves 2017 §2.2's "offload") and on
#: the host (its "onload": QLogic/Intel True Scale and Omni-Path, and soft RoCE/iWARP).
OFFLOAD_DEVICES = ("mlx", "cxgb", "bnxt_re", "irdma", "efa", "ionic", "qedr", "hns")
ONLOAD_DEVICES = ("qib", "hfi1", "rxe", "siw")
FACTS = ("kind", "sockets", "cores", "fabric", "nic", "link_gbit", "topology", "like", "network_to_memory",
         "capabilities", "moved")
_RATE = re.compile(r"^([0-9.]+)\s*([kmg]?)(?:bit|b/sec)", re.I)
_GBIT = {"": 1e-9, "k": 1e-6, "m": 1e-3, "g": 1.0}


def link_gbit(fingerprint):
    """A node's link rate in Gbit/s: ``1gbit``, ``100mbit`` or a verbs port's ``100 Gb/sec``."""
    rates = [fingerprint.get("link_rate")] + [p.split(" ", 1)[-1] for p in fingerprint.get("rdma") or []]
    found = [float(m.group(1)) * _GBIT[m.group(2).lower()]
             for m in map(_RATE.match, map(str, filter(None, rates))) if m]
    return max(found) if found else None


def nic_kind(rdma_ports):
    """``offload``, ``onload`` or ``tcp`` from the verbs ports (``mlx5_0/1 100 Gb/sec ...``); None
    for a device of neither list."""
    devices = [port.split("/", 1)[0] for port in rdma_ports or []]
    if not devices:
        return "tcp"
    if any(d.startswith(OFFLOAD_DEVICES) for d in devices):
        return "offload"
    if all(d.startswith(ONLOAD_DEVICES) for d in devices):
        return "onload"
    return None


def topology_of(prov):
    """The switch topology a run recorded (``dragonfly:groups=3,...``); a virtual cluster's run from
    before topologies were recorded had a star; None where nothing says."""
    return prov.get("topology") or ("star" if prov.get("link_state") else None)


def of_provenance(prov, host_class):
    """The facts of a run: ``prov`` its provenance, ``host_class`` what
    :func:`crosstalk.site.hostclass.from_provenance` made of it."""
    fp = host_class.get("fingerprint") or {}
    kind = prov.get("kind")
    if kind is None and prov.get("link_state"):
        kind = "vcluster"          # recorded before runs named their kind: shaped veths are ours
    topology = topology_of(prov) or ("star" if kind == "vcluster" else None)
    return {"kind": kind, "sockets": fp.get("sockets"), "cores": fp.get("cores"),
            "fabric": fp.get("fabric"), "nic": nic_kind(fp.get("rdma")) if fp.get("fabric") else None,
            "link_gbit": link_gbit(fp), "topology": topology.split(":", 1)[0] if topology else None,
            "like": (prov.get("balance") or {}).get("like"),
            "network_to_memory": ((prov.get("balance") or {}).get("achieved") or {}).get("network_to_memory"),
            "capabilities": capabilities_of(prov), "moved": moved_of(prov)}


def moved_of(prov):
    """``{experiment: {like, system, run_id, error}}`` of a main run's moves, or None."""
    moved = prov.get("moved")
    if not isinstance(moved, dict):
        return None
    return {name: {k: m.get(k) for k in ("like", "system", "run_id", "error")}
            for name, m in moved.items() if isinstance(m, dict)} or None


def capabilities_of(prov):
    """The capability flags true on at least one partition of the run's system (sorted), or None
    for a run that did not record them."""
    recorded = prov.get("capabilities")
    if not isinstance(recorded, dict):
        return None
    return sorted({name for caps in recorded.values() if isinstance(caps, dict)
                   for name, on in caps.items() if on is True})


def encode(facts):
    return json.dumps(facts, sort_keys=True)


def decode(text):
    """A JSON object from text; {} for anything else (a missing or broken value)."""
    try:
        facts = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return facts if isinstance(facts, dict) else {}


def unmet(where, facts):
    """Why a platform with ``facts`` is outside ``where`` ("needs kind cluster; this is vcluster"),
    or None when it is inside. A fact not recorded keeps the claim (judged, not excluded)."""
    for name, wanted in where.items():
        have = facts.get(name)
        if have is None:
            continue
        if name == "capabilities":
            missing = [c for c in wanted if c not in have]
            if missing:
                return (f"needs capabilities.{missing[0]}; no partition of this platform has it "
                        f"(the inventory's capabilities)")
        elif isinstance(wanted, list):
            if have not in wanted:
                return f"needs {name} {' or '.join(map(str, wanted))}; this platform's is {have}"
        elif ("min" in wanted and have < wanted["min"]) or ("max" in wanted and have > wanted["max"]):
            bounds = " and ".join(f"{k} {v}" for k, v in wanted.items())
            return f"needs {name} {bounds}; this platform has {have}"
    return None
