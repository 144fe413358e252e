"""What a virtual-cluster inventory says: nodes (``hosts.yml``), and subnet, rates, topology and Slurm
sizes (``group_vars/all/vcluster.yml``), checked, with one-line errors naming file and field."""
import ipaddress
import re
from pathlib import Path

from crosstalk import userfiles
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.vcluster import topology
from crosstalk.vcluster.rates import parse_rate

BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
MAX_NODES = 16
DEFAULT_WIDTHS = {"4X": 1.0, "2X": 0.5, "1X": 0.25}


def _checked_rate(text, path, field):
    """A rate from an inventory file: returned unchanged, or InputError naming file and field."""
    try:
        parse_rate(text)
    except CrosstalkError as err:
        raise InputError(path, field, str(err).split(": ", 1)[1]) from None
    return text


def _checked_slurm(settings, path):
    """``vcluster_slurm``: the partition name and positive integer sizes (they reach slurm.conf)."""
    if settings is None:
        return None
    if not isinstance(settings, dict):
        raise InputError(path, "vcluster_slurm", "must be a mapping")
    for key, value in settings.items():
        field = f"vcluster_slurm.{key}"
        if key == "partition":
            if not isinstance(value, str) or not re.match(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$", value):
                raise InputError(path, field, f"{value!r}: a partition name ([A-Za-z][A-Za-z0-9_-])")
        elif key in ("cpus_per_node", "real_memory_mb", "slurmd_timeout"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(path, field, f"{value!r}: must be a positive integer")
        else:
            raise InputError(path, field, "unknown key (partition, cpus_per_node, real_memory_mb, "
                                          "slurmd_timeout)")
    return settings


def load_yaml(path):
    try:
        return userfiles.load_yaml(path, "inventory") or {}
    except userfiles.MissingFile:
        return {}


def _system_name(inventory):
    """``crosstalk_system.name`` from the inventory's ``group_vars/all`` (the cluster is named after
    the system it models; read directly: ``crosstalk link`` runs in every shaped job)."""
    all_vars = inventory / "group_vars" / "all"
    for path in sorted(all_vars.glob("*.y*ml")) if all_vars.is_dir() else []:
        system = load_yaml(path).get("crosstalk_system")
        if isinstance(system, dict) and system.get("name"):
            return str(system["name"])
    return None


def _subnet(text, gv_path, overridden):
    def bad(problem):
        if overridden:
            return CrosstalkError(f"subnet: {text}: {problem}")
        return InputError(gv_path, "vcluster_subnet", f"{text}: {problem}")
    try:
        subnet = ipaddress.ip_network(text)
    except ValueError as err:
        raise bad(str(err)) from None
    if not subnet.subnet_of(BENCH_NET):
        raise bad("outside 198.18.0.0/15 (the only range the cluster may use)")
    return subnet, bad


def read_inventory(path, **overrides):
    """The VCluster constructor's arguments from inventory ``path``; ``overrides`` win:
    nodes (int), link_rate, name, subnet, state_dir, injection_cap, topology."""
    inv = Path(path)
    if not inv.is_dir():
        raise InputError(inv, "", "no such inventory directory")
    gv_path = inv / "group_vars" / "all" / "vcluster.yml"
    gv = load_yaml(gv_path)
    hosts_path = inv / "hosts.yml"
    group = (((load_yaml(hosts_path).get("all") or {}).get("children") or {})
             .get("vcluster_nodes") or {})
    hosts = group.get("hosts") or {}
    if not hosts:
        raise InputError(hosts_path, "vcluster_nodes.hosts", "no nodes listed")
    names = list(hosts)
    for i, n in enumerate(names, 1):
        if n != f"n{i}":
            raise InputError(hosts_path, f"vcluster_nodes.hosts.{n}",
                             f"virtual nodes are named n1..nN in order, by position (expected n{i}); "
                             "a real cluster's inventory takes any host names")
    default_name = gv.get("vcluster_name") or _system_name(inv) or "vcluster"
    name = overrides.pop("name", None) or default_name
    if not re.match(r"^[a-z][a-z0-9_-]{0,11}$", str(name)):
        raise InputError(gv_path, "vcluster_name", f"{name!r}: use [a-z][a-z0-9_-], <= 12 chars")
    sub_override = overrides.pop("subnet", None)
    subnet, bad_subnet = _subnet(sub_override or gv.get("vcluster_subnet", "198.18.0.0/24"), gv_path,
                                 bool(sub_override))
    nnodes = overrides.pop("nodes", None)
    if nnodes is None and len(names) > MAX_NODES:
        raise InputError(hosts_path, "vcluster_nodes.hosts",
                         f"{len(names)} nodes: a virtual cluster has 1..{MAX_NODES}")
    nnodes = nnodes or len(names)
    if not isinstance(nnodes, int) or not 1 <= nnodes <= MAX_NODES:
        raise CrosstalkError(f"nodes: {nnodes!r}: must be an integer 1..{MAX_NODES}")
    if nnodes > subnet.num_addresses - 2:
        raise bad_subnet(f"too small for {nnodes} nodes")
    nodes = [f"n{i}" for i in range(1, nnodes + 1)]
    node_rates = {}
    for i, n in enumerate(nodes, 1):
        hv = hosts.get(n) or {}
        addr = hv.get("vcluster_address")
        if addr and not sub_override and addr != str(subnet.network_address + i):
            raise InputError(hosts_path, f"{n}.vcluster_address",
                             f"{addr} must be {subnet.network_address + i} (subnet {subnet})")
        if hv.get("vcluster_link_rate") and not overrides.get("link_rate"):
            node_rates[n] = _checked_rate(hv["vcluster_link_rate"], hosts_path, f"{n}.vcluster_link_rate")
    widths = gv.get("vcluster_widths") or DEFAULT_WIDTHS
    if set(widths) != set(DEFAULT_WIDTHS):
        raise InputError(gv_path, "vcluster_widths", "must define exactly 4X, 2X and 1X")
    link_rate = overrides.pop("link_rate", None)
    if link_rate:
        parse_rate(link_rate, "link_rate")
    else:
        link_rate = _checked_rate(gv.get("vcluster_link_rate", "1gbit"), gv_path, "vcluster_link_rate")
    state_dir = overrides.pop("state_dir", None) or (
        gv.get("vcluster_state_dir") if name == default_name else None)
    cap = overrides.pop("injection_cap", None)
    if cap:
        parse_rate(cap, "injection_cap")
    elif gv.get("vcluster_injection_cap"):
        cap = _checked_rate(gv["vcluster_injection_cap"], gv_path, "vcluster_injection_cap")
    like_override = overrides.pop("like", None)
    like = like_override or gv.get("vcluster_like")
    fabric = None
    if like:
        from crosstalk.site.machines import load, ratios
        try:
            fabric = ratios(load(like))["fabric"]
        except InputError as err:
            if like_override:
                raise CrosstalkError(f"--like: {like!r}: {err.problem}") from None
            raise InputError(gv_path, "vcluster_like", f"{like!r}: {err.problem}") from None
    shape = overrides.pop("topology", None)
    if shape:
        topology.build(shape, nodes, parse_rate(link_rate), "--topology", fabric=fabric)
    else:
        shape = str(gv.get("vcluster_topology", "star"))
        try:
            topology.build(shape, nodes, parse_rate(link_rate), fabric=fabric)
        except CrosstalkError as err:
            raise InputError(gv_path, "vcluster_topology", str(err).split(": ", 1)[1]) from None
    if overrides:
        raise CrosstalkError(f"VCluster: unknown override(s): {', '.join(overrides)}")
    return dict(name=name, subnet=subnet, nodes=nodes, link_rate=link_rate, widths=widths,
                injection_cap=cap, state_dir=state_dir,
                slurm=_checked_slurm(gv.get("vcluster_slurm"), gv_path), node_rates=node_rates,
                topology=shape, like=like)
