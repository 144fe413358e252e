"""The embedded virtual cluster: N nodes made of Linux namespaces on this machine.

Layout (all created by :meth:`VCluster.up`, all removed by :meth:`VCluster.down`):

* switches (``fabric``, ``topology``): one network namespace each, kept open by an anchor process; a
  star is one switch holding bridge ``br0``, a fat tree or Dragonfly routes between several;
* per node ``nI`` (``nodes``): network + UTS (hostname ``nI``) + mount namespace (private ``/tmp``,
  ``/dev/shm`` and ``/etc/hosts``) held by an anchor process; a veth ``eth0`` <-> ``pI`` on its
  switch; tbf shaping in both directions (``links``: node egress on ``eth0``, ingress on ``pI``);
* munged in the root namespace on a private socket, slurmctld in ``n1``, one slurmd per node (``slurm``);
* Open MPI reaches other nodes through an rsh agent that enters the target node (``launch``).

Every runtime file lives in the state dir (``/run/crosstalk/<name>/``): PID files, slurm.conf,
hostfile, the rsh agent, per-node Python wrappers for Ansible. Nothing is put in the root
network namespace, and addresses come only from 198.18.0.0/15.
"""
import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
from pathlib import Path

from crosstalk import REPO_ROOT
from crosstalk.errors import CrosstalkError
from crosstalk.vcluster import topology as topologies
from crosstalk.vcluster.balance import Balance
from crosstalk.vcluster.fabric import Fabric
from crosstalk.vcluster.launch import Launch
from crosstalk.vcluster.links import Links
from crosstalk.vcluster.nodes import NODE_PRIVATE, NodeAccess, under
from crosstalk.vcluster.procs import TOOL_TIMEOUT, kill, pids_in_netns, run_tool, wait_gone, write_if_changed  # noqa: F401
from crosstalk.vcluster.rates import format_rate, parse_rate, tbf_burst  # noqa: F401  (public API)
from crosstalk.vcluster.settings import BENCH_NET, DEFAULT_WIDTHS, MAX_NODES, read_inventory  # noqa: F401
from crosstalk.vcluster.slurm import SlurmDaemons


class VCluster(NodeAccess, Fabric, Links, SlurmDaemons, Launch, Balance):
    """One virtual cluster. Create with :meth:`from_inventory`."""

    def __init__(self, name, subnet, nodes, link_rate, widths=None, injection_cap=None,
                 state_dir=None, slurm=None, node_rates=None, topology="star", like=None):
        self.name = name
        self.subnet = ipaddress.ip_network(subnet)
        self.nodes = list(nodes)                     # ['n1', ...]
        self.link_rate = parse_rate(link_rate, "link_rate")
        self.widths = dict(widths or DEFAULT_WIDTHS)
        self.injection_cap = parse_rate(injection_cap, "injection_cap") if injection_cap else None
        self.state = Path(state_dir or f"/run/crosstalk/{name}")
        self.slurm = {"partition": "vc", "cpus_per_node": 2, "real_memory_mb": 2048,
                      "slurmd_timeout": 10, **(slurm or {})}
        # per-node nominal (4X) rate in bit/s
        self.node_rates = {n: parse_rate((node_rates or {}).get(n) or format_rate(self.link_rate),
                                         f"{n}: vcluster_link_rate") for n in self.nodes}
        self.addresses = {n: str(self.subnet.network_address + i + 1)
                          for i, n in enumerate(self.nodes)}
        self.like = like                             # a machine (crosstalk.site.machines) whose balance to model
        self.topology = topologies.build(topology, self.nodes, self.link_rate, fabric=self.fabric_target())
        # The checkout must be seen by every node: ReFrame, job scripts and results live in it.
        self.shared_paths = [str(REPO_ROOT)] if under(REPO_ROOT, NODE_PRIVATE) else []

    @classmethod
    def from_inventory(cls, path="inventories/vcluster", **overrides):
        """Read ``hosts.yml`` and ``group_vars/all/vcluster.yml``; ``overrides`` win:
        nodes (int), link_rate, name, subnet, state_dir, injection_cap, topology."""
        return cls(**read_inventory(path, **overrides))

    @classmethod
    def as_running(cls, path="inventories/vcluster", **overrides):
        """The cluster as ``up`` built it (its --nodes, --link-rate and --topology are kept in
        cluster.json), else as the inventory says: for commands acting on a running cluster."""
        vc = cls.from_inventory(path, **overrides)
        try:
            cfg = json.loads((vc.state / "cluster.json").read_text())
        except (OSError, ValueError):
            return vc
        built = {"nodes": len(cfg.get("nodes", vc.nodes)), "link_rate": format_rate(cfg.get("link_rate", vc.link_rate)),
                 "topology": cfg.get("topology", vc.topology.spec), "like": cfg.get("like")}
        now = {"nodes": len(vc.nodes), "link_rate": format_rate(vc.link_rate), "topology": vc.topology.spec,
               "like": vc.like}
        changed = {k: v for k, v in built.items() if v != now[k] and k not in overrides}
        return cls.from_inventory(path, **overrides, **changed) if changed else vc

    # ------------------------------------------------------------------ status
    def status(self):
        nodes = {}
        links = self.link_state() if (self.state / "links.json").exists() else {}
        for n in self.nodes:
            nodes[n] = {"address": self.addresses[n], "anchor": self.anchor_pid(n),
                        "slurmd": self._slurmd_pid(n), "link": links.get(n),
                        "switch": self._switch_of(n)}
        return {"name": self.name, "state_dir": str(self.state), "subnet": str(self.subnet),
                "topology": self.topology.spec,
                "switches": {sw: self.anchor_pid(sw) for sw in self.topology.switches},
                "munged": self._daemon_pid("munged"), "slurmctld": self._slurmctld_pid(),
                "nodes": nodes, "links": self.link_counters() if self._fabric_up() else [],
                "balance": self.balance(), "up": self.is_up()}

    def is_up(self):
        return (self._fabric_up() and self._daemon_pid("munged") is not None
                and self._slurmctld_pid() is not None
                and all(self.anchor_pid(n) and self._slurmd_pid(n) for n in self.nodes))

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def _locked(self):
        """Serialise up/down/link changes between processes (tests, CLI, runner)."""
        if getattr(self, "_lock_depth", 0):
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self.state.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state.parent, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_depth = 1
            yield
        finally:
            self._lock_depth = 0
            os.close(fd)

    # ------------------------------------------------------------------ up
    def _preflight(self):
        if os.geteuid() != 0:
            raise CrosstalkError("vcluster: needs root (network namespaces, tc, Slurm daemons)")
        for tool in ("unshare", "nsenter", "ip", "tc", "sysctl", "munged", "slurmctld", "slurmd", "sinfo"):
            if not shutil.which(tool):
                raise CrosstalkError(f"vcluster: {tool} not found on PATH")
        probe = run_tool(["unshare", "--net", "--uts", "--ipc", "--mount", "true"], check=False)
        if probe.returncode != 0:
            raise CrosstalkError("vcluster: namespaces not permitted here: "
                                 + (probe.stderr.strip() or "unshare failed"))

    def _config(self):
        return {"name": self.name, "subnet": str(self.subnet), "nodes": self.nodes,
                "link_rate": self.link_rate, "node_rates": self.node_rates,
                "injection_cap": self.injection_cap, "slurm": self.slurm,
                "shared_paths": self.shared_paths, "topology": self.topology.spec, "like": self.like,
                "node_groups": self.node_groups}

    def up(self):
        """Build the cluster, or repair what is missing. Returns the list of changes made
        (empty: it was already up)."""
        self._preflight()
        with self._locked():
            return self._up()

    def _up(self):
        changes = []
        self._plan_balance()
        cfg_path = self.state / "cluster.json"
        if cfg_path.exists():
            try:
                old = json.loads(cfg_path.read_text())
            except ValueError:
                old = None
            if old != self._config():
                self.down()
                changes.append("reconfigured")
        if not self._fabric_up() and self.state.exists():
            self.down()             # a switch is missing: nothing else can be trusted, rebuild
        elif self._stale_shared_paths():
            self.down()             # e.g. the checkout was deleted and cloned again at that path
            changes.append("reconfigured")
        for sub in ("pids", "run", "log", "bin", "nodes", "slurmctld", "slurmd", "munge", "shared"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        (self.state / "munge").chmod(0o700)
        write_if_changed(cfg_path, json.dumps(self._config(), indent=1, sort_keys=True))
        self._write_launch_files()
        slurm_conf_changed = self._write_slurm_files()

        if not self._fabric_up():
            self._build_switches()
            changes.append("switch" if len(self.topology.switches) == 1 else "switches")
        links = self._links()
        for n in self.nodes:
            if self.anchor_pid(n) is None:
                self._clear_node(n)
                self._start_anchor(n)
                self._wire(n)
                self._shape(n, links[n]["rate_bps"])
                changes.append(f"node {n}")
        if any(c.startswith("node ") for c in changes):
            self._pin()
        self._apply_balance()          # before slurmd starts: it joins its node's cgroup
        self._start_slurm(changes, slurm_conf_changed)
        self._measure_balance()
        return changes

    # ------------------------------------------------------------------ down
    def down(self):
        """Stop every daemon and process of the cluster, remove its namespaces and state dir.
        Returns True if something was running."""
        with self._locked():
            return self._down()

    def _down(self):
        if not self.state.exists():
            return False
        pids = [p for p in [self._slurmctld_pid(), *(self._slurmd_pid(n) for n in self.nodes)]
                if p]
        kill(pids, signal.SIGTERM)          # let slurmctld save state; it takes 1-3 s
        left = wait_gone(pids, 10)
        kill(left, signal.SIGKILL)
        all_pids = list(pids)
        for f in sorted((self.state / "nodes").glob("*.netns")):
            ns_pids = pids_in_netns(f.read_text().strip()) if f.read_text().strip() else []
            kill(ns_pids, signal.SIGKILL)   # job steps, ranks, orteds left on the node
            all_pids += ns_pids
        for f in sorted((self.state / "pids").glob("*.pid")):
            name = f.stem.removeprefix("anchor-")
            pid = (self._daemon_pid("munged") if f.stem == "munged"
                   else self._verified(f, "sleep", name))
            if pid:
                kill([pid], signal.SIGTERM if f.stem == "munged" else signal.SIGKILL)
                all_pids.append(pid)
        left = wait_gone(all_pids, 15)
        if left:
            raise CrosstalkError(f"vcluster {self.name}: processes {left} did not exit")
        self._remove_balance()
        shutil.rmtree(self.state)
        return bool(all_pids)
