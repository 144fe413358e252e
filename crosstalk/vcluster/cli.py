"""``crosstalk vcluster up|down|status|exec|bench`` and ``crosstalk link set|show|restore``."""
import argparse
import json
import os

from crosstalk import REPO_ROOT
from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.balance import leave_node_quota


def _cluster(args, building=False):
    """The cluster ``up`` builds (inventory and options), or for the other actions the one running."""
    from crosstalk.vcluster import VCluster
    overrides = {k: v for k, v in (("nodes", getattr(args, "nodes", None)),
                                   ("link_rate", getattr(args, "link_rate", None)),
                                   ("topology", getattr(args, "topology", None)),
                                   ("like", getattr(args, "like", None)),
                                   ("name", args.name), ("subnet", args.subnet)) if v}
    if building:
        return VCluster.from_inventory(args.inventory, **overrides)
    return VCluster.as_running(args.inventory, **overrides)


def _node_count(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= n <= 16:
        raise argparse.ArgumentTypeError(f"{n}: must be 1..16")
    return n


def _common(p):
    p.add_argument("--inventory", default=str(REPO_ROOT / "inventories" / "vcluster"),
                   help="virtual cluster inventory (default: %(default)s)")
    p.add_argument("--name", help="cluster name (state in /run/crosstalk/NAME)")
    p.add_argument("--subnet", help="node subnet inside 198.18.0.0/15")


def cmd_up(args):
    vc = _cluster(args, building=True)
    changes = vc.up()
    if args.json:
        print(json.dumps({"changed": bool(changes), "changes": changes}))
    else:
        print(f"vcluster {vc.name}: " + (f"changed: {', '.join(changes)}" if changes
                                         else "already up"))
    return 0


def cmd_down(args):
    vc = _cluster(args)
    was = vc.down()
    held = vc.remove_locks()
    if args.json:
        print(json.dumps({"changed": was, "locks_in_use": [str(p) for p in held]}))
    else:
        print(f"vcluster {vc.name}: " + ("removed" if was else "was not up")
              + "".join(f"; {p} is held by a running command, kept" for p in held))
    return 0


def _bytes(counter):
    return f"{counter['bytes']:>14,}" if counter else f"{'-':>14}"


def cmd_status(args):
    from crosstalk.vcluster.rates import format_rate
    from crosstalk.vcluster.topology import describe
    vc = _cluster(args)
    st = vc.status()
    if args.json:
        print(json.dumps(st, indent=1))
        return 0 if st["up"] else 1
    print(f"vcluster {st['name']}: {'up' if st['up'] else 'not (fully) up'} "
          f"(state {st['state_dir']}; topology {st['topology']})")
    for n, d in st["nodes"].items():
        link = d["link"] or {}
        print(f"  {n} {d['address']:<14} anchor={d['anchor']} slurmd={d['slurmd']} "
              f"link={link.get('width') or '-'} {link.get('rate', '-')} switch={d['switch']}")
    if st["balance"]:
        from crosstalk.vcluster.balance import describe as describe_balance
        print(f"balance: {describe_balance(st['balance'])}")
    if vc.topology.routed:
        print("switches:")
        for line in describe(vc.topology, vc.nodes):
            print(f"  {line}")
    if st["links"]:
        print(f"bytes each link has carried (tc counters since up)\n"
              f"  {'link':<16} {'kind':<7} {'rate':>8} {'forward':>14} {'back':>14}")
        for link in st["links"]:
            fwd, back = (link["up"], link["down"]) if link["kind"] == "node" else (link["a_to_b"], link["b_to_a"])
            rate = format_rate(max(c["rate_bps"] for c in (fwd, back) if c)) if fwd or back else "-"
            print(f"  {link['link']:<16} {link['kind']:<7} {rate:>8} {_bytes(fwd)} {_bytes(back)}")
    return 0 if st["up"] else 1


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def cmd_exec(args):
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise CrosstalkError("vcluster exec: no command given (usage: exec NODE -- CMD...)")
    vc = _cluster(args)
    return vc.exec(args.node, argv, cwd=os.getcwd(), timeout=args.timeout).returncode


def cmd_bench(args):
    from crosstalk.vcluster import linkbench
    return linkbench.main(args)


def cmd_bench_topologies(args):
    from crosstalk.vcluster import topobench
    return topobench.main(args)


def cmd_machines(args):
    """The paper machines ``--like`` takes, with the balance each gives and where it comes from."""
    from crosstalk.site.machines import all_machines, ratios
    rows = []
    for machine in all_machines().values():
        r = ratios(machine)
        node = f"network/memory {r['network_to_memory']:.3g} B/B, {r['cores']} cores" if r["network_to_memory"] else ""
        fab = r["fabric"]
        fabric = f"{fab['topology']} global:injection {fab['global_to_injection']:g}" if fab else ""
        rows.append({"id": machine["id"], "balance": "; ".join(filter(None, (node, fabric))),
                     "source": machine["source"].split(":")[0]})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        print(f"{r['id']:<{width}}  {r['balance']}  ({r['source']})")
    return 0


def cmd_link_set(args):
    leave_node_quota()          # link control is the harness's work, not the node's
    if (args.width is None) == (args.rate is None):
        raise CrosstalkError("link set: give exactly one of --width and --rate")
    vc = _cluster(args)
    entry = vc.set_link(args.node, width=args.width, rate=args.rate)
    print(f"{args.node}: {entry['width'] or '-'} {entry['rate_bps']} bit/s")
    return 0


def cmd_link_show(args):
    leave_node_quota()          # link control is the harness's work, not the node's
    from crosstalk.vcluster import format_rate
    vc = _cluster(args)
    if not vc.is_up():
        raise CrosstalkError(f"vcluster {vc.name}: not up (run: crosstalk vcluster up)")
    state = vc.link_state()
    if args.json:
        print(json.dumps(state, indent=1))
        return 0
    print(f"{'node':<5} {'width':<6} {'rate':<10} {'nominal':<10} tc (switch port)")
    for n, d in state.items():
        tc = format_rate(d["tc_rate_bps"]) if d["tc_rate_bps"] else "-"
        print(f"{n:<5} {d['width'] or '-':<6} {d['rate']:<10} {format_rate(d['nominal_bps']):<10} "
              f"{tc}")
    return 0


def cmd_link_restore(args):
    leave_node_quota()          # link control is the harness's work, not the node's
    vc = _cluster(args)
    vc.restore_links(args.restore_nodes or None)
    print(f"vcluster {vc.name}: {', '.join(args.restore_nodes) or 'all links'} at 4X")
    return 0


def register(subparsers):
    vc = subparsers.add_parser("vcluster", help="the embedded virtual cluster")
    vsub = vc.add_subparsers(dest="vcommand", required=True, metavar="ACTION")

    p = vsub.add_parser("up", help="build (or repair) the virtual cluster")
    _common(p)
    p.add_argument("--nodes", type=_node_count, help="number of nodes (1..16)")
    p.add_argument("--link-rate", help="nominal 4X rate, e.g. 1gbit")
    p.add_argument("--topology", help="star, fattree:leaves=L,spines=S,oversub=R or "
                                      "dragonfly:groups=G,routers=A,local=X,global=Y "
                                      "(default: the inventory's vcluster_topology, else star)")
    p.add_argument("--like", metavar="MACHINE", help="a paper machine (`crosstalk vcluster machines`) whose "
                                                     "balance the cluster takes: network to memory by a CPU "
                                                     "quota per node, global to injection on its switch links")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_up)

    p = vsub.add_parser("down", help="remove the virtual cluster")
    _common(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_down)

    p = vsub.add_parser("status", help="show nodes, daemons, switches and what each link carried")
    _common(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = vsub.add_parser("exec", help="run a command on a node: exec NODE -- CMD...")
    _common(p)
    p.add_argument("--timeout", type=_seconds, default=3600,
                   help="seconds the command may take (default: %(default)s)")
    p.add_argument("node")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_exec)

    p = vsub.add_parser("bench", help="link benchmark: achieved/configured rate, bring-up time")
    p.add_argument("--inventory", default="inventories/vcluster")
    p.add_argument("--rates", default="100mbit,250mbit,1gbit,4gbit,10gbit")
    p.add_argument("--sizes", default="2,4,8,16", help="node counts for bring-up time")
    p.add_argument("--seconds", type=int, default=4, help="iperf3 duration per run")
    p.add_argument("--repeats", type=int, default=3, help="iperf3 runs per rate (best kept)")
    p.add_argument("--out", default="results/vcluster")
    p.set_defaults(func=cmd_bench)

    p = vsub.add_parser("bench-topologies", help="topology benchmark: rate per link type, where traffic "
                                                 "goes, bring-up time by node count")
    p.add_argument("--inventory", default="inventories/vcluster")
    p.add_argument("--seconds", type=int, default=3, help="iperf3 duration per run")
    p.add_argument("--repeats", type=int, default=3, help="iperf3 runs per link type")
    p.add_argument("--out", default="results/vcluster")
    p.set_defaults(func=cmd_bench_topologies)

    p = vsub.add_parser("machines", help="the paper machines --like takes, with their balance")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_machines)

    lk = subparsers.add_parser("link", help="runtime link control on the virtual cluster")
    lsub = lk.add_subparsers(dest="lcommand", required=True, metavar="ACTION")
    p = lsub.add_parser("set", help="set NODE's link width or rate")
    _common(p)
    p.add_argument("node")
    p.add_argument("--width", choices=["4X", "2X", "1X"])
    p.add_argument("--rate", help="tc notation, e.g. 250mbit")
    p.set_defaults(func=cmd_link_set)
    p = lsub.add_parser("show", help="configured width and rate per node")
    _common(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_link_show)
    p = lsub.add_parser("restore", help="links back to nominal (4X): the NODEs given, else all")
    p.add_argument("restore_nodes", nargs="*", metavar="NODE")
    _common(p)
    p.set_defaults(func=cmd_link_restore)
