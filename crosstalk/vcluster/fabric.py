"""The network between the nodes: switch namespaces, the veth links that join them to the nodes and
to each other, their shaping, static neighbours and routes, and per-link byte counters.

A star is one switch holding a bridge. Other topologies route: every switch forwards by a /32 route
per node (minimal, from ``topology``), every neighbour entry is pinned (a node starved of CPU lets
ARP fail, see ``_pin``), and the nodes keep one flat subnet, so Slurm and MPI see no difference."""
from crosstalk.vcluster.procs import run_tool
from crosstalk.vcluster.rates import tbf_line


class Fabric:
    """The network part of a VCluster (``self.topology``)."""

    def _port(self, node):
        return f"p{self.nodes.index(node) + 1}"

    def _switch_of(self, node):
        return self.topology.attach[node]

    def _fabric_up(self):
        """Whether every switch's anchor lives."""
        return all(self.anchor_pid(sw) for sw in self.topology.switches)

    def _build_switches(self):
        """Start every switch and create the switch-to-switch links, shaped both ways."""
        for sw in self.topology.switches:
            self._start_anchor(sw)
            if self.topology.routed:
                run_tool(["nsenter", "-t", str(self.anchor_pid(sw)), "-n", "sysctl", "-q", "-w",
                          "net.ipv4.ip_forward=1"])
                self._netcmd(sw, "ip", ["link set lo up"])
            else:
                self._netcmd(sw, "ip", ["link set lo up", "link add br0 type bridge forward_delay 0",
                                        "link set br0 up"])
        for link in self.topology.links:
            self._netcmd(link.a, "ip", [f"link add {link.dev(link.a)} type veth peer name "
                                        f"{link.dev(link.b)} netns {self.anchor_pid(link.b)}",
                                        f"link set {link.dev(link.a)} up"])
            self._netcmd(link.b, "ip", [f"link set {link.dev(link.b)} up"])
            for end in (link.a, link.b):
                self._netcmd(end, "tc", [tbf_line(link.dev(end), link.rate_bps)])

    def _wire(self, node):
        """The node's veth: ``eth0`` in the node, its port on its switch (bridged in a star)."""
        sw, port, npid = self._switch_of(node), self._port(node), self.anchor_pid(node)
        # the port of a node rebuilt after its anchor died may outlive the old namespace
        run_tool(["nsenter", "-t", str(self.anchor_pid(sw)), "-n", "ip", "link", "del", port], check=False)
        lines = [f"link add {port} type veth peer name eth0 netns {npid}", f"link set {port} up"]
        if not self.topology.routed:
            lines.insert(1, f"link set {port} master br0")
        self._netcmd(sw, "ip", lines)
        self._netcmd(node, "ip", ["link set lo up",
                                  f"addr add {self.addresses[node]}/{self.subnet.prefixlen} dev eth0",
                                  "link set eth0 up"])

    def _mac(self, where, dev):
        return self._netjson(where, ["ip", "-j", "link", "show", dev])[0]["address"]

    def _pin(self):
        """Permanent neighbours (and, routed, routes) everywhere, as on a fabric with static
        addressing: with ARP, a node starved of CPU (2 cores, 12 ranks) lets resolution fail,
        connect() returns EHOSTUNREACH and Open MPI 4.1.4's TCP BTL crashes in MPI_Init (3 of 6
        srun jobs under load before, 0 of 8 after)."""
        eth0 = {n: self._mac(n, "eth0") for n in self.nodes}
        if not self.topology.routed:
            for n in self.nodes:
                self._netcmd(n, "ip", [f"neigh replace {self.addresses[m]} lladdr {eth0[m]} dev eth0 "
                                       f"nud permanent" for m in self.nodes if m != n] or ["neigh flush all"])
            return
        # routed: a node sends everything to its switch port's MAC; switches route per node
        for n in self.nodes:
            port_mac = self._mac(self._switch_of(n), self._port(n))
            self._netcmd(n, "ip", [f"neigh replace {self.addresses[m]} lladdr {port_mac} dev eth0 "
                                   f"nud permanent" for m in self.nodes if m != n] or ["neigh flush all"])
        # (switch, its device) -> MAC of the device at the link's other end
        far_end = {(sw, link.dev(sw)): self._mac(link.other(sw), link.dev(link.other(sw)))
                   for link in self.topology.links for sw in (link.a, link.b)}
        for sw, routes in self.topology.routes(self.nodes).items():
            lines = []
            for m, link in routes.items():
                address = self.addresses[m]
                if link is None:
                    dev, mac = self._port(m), eth0[m]
                else:
                    dev = link.dev(sw)
                    mac = far_end[(sw, dev)]
                lines += [f"route replace {address}/32 dev {dev}",
                          f"neigh replace {address} lladdr {mac} dev {dev} nud permanent"]
            self._netcmd(sw, "ip", lines)

    def _shape(self, node, bps):
        """tbf both ways: node egress (capped by the injection limit) and its switch port."""
        egress = min(bps, self.injection_cap) if self.injection_cap else bps
        self._netcmd(node, "tc", [tbf_line("eth0", egress)])
        self._netcmd(self._switch_of(node), "tc", [tbf_line(self._port(node), bps)])

    def _sent(self, where, dev):
        """Bytes, packets and drops the tbf on ``dev`` has sent (its egress)."""
        for q in self._netjson(where, ["tc", "-s", "-j", "qdisc", "show", "dev", dev]):
            if q.get("kind") == "tbf":
                return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0),
                        "drops": q.get("drops", 0), "rate_bps": int(q["options"]["rate"]) * 8}
        return None

    def link_counters(self):
        """Every link with what its tbf on each end has sent: node links (``up``: node to switch,
        ``down``: switch to node) and switch links (``a_to_b``, ``b_to_a``)."""
        out = []
        for n in self.nodes:
            sw = self._switch_of(n)
            if self.anchor_pid(n) and self.anchor_pid(sw):
                out.append({"link": f"{n}-{sw}", "kind": "node", "up": self._sent(n, "eth0"),
                            "down": self._sent(sw, self._port(n))})
        for link in self.topology.links:
            if self.anchor_pid(link.a) and self.anchor_pid(link.b):
                out.append({"link": link.name, "kind": link.kind, "a_to_b": self._sent(link.a, link.dev(link.a)),
                            "b_to_a": self._sent(link.b, link.dev(link.b))})
        return out
