"""The embedded virtual cluster: N nodes made of Linux namespaces on this machine.

Layout (all created by :meth:`VCluster.up`, all removed by :meth:`VCluster.down`):

* a switch: one network namespace holding bridge ``br0``, kept open by an anchor process;
* per node ``nI``: network + UTS (hostname ``nI``) + mount namespace (private ``/tmp``,
  ``/dev/shm`` and ``/etc/hosts``) held by an anchor process; a veth ``eth0`` <-> ``pI`` on the bridge;
  tbf shaping in both directions (node egress on ``eth0``, node ingress on ``pI``);
* munged in the root namespace on a private socket, slurmctld in ``n1``, one slurmd per node;
* Open MPI reaches other nodes through an rsh agent that enters the target node (nsenter).

Every runtime file lives in the state dir (``/run/crosstalk/<name>/``): PID files, slurm.conf,
hostfile, the rsh agent, per-node Python wrappers for Ansible. Nothing is put in the root
network namespace, and addresses come only from 198.18.0.0/15.
"""
import contextlib
import fcntl
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import yaml

from crosstalk import REPO_ROOT
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.proc import describe

BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
#: What each node has of its own, as a real node has: /tmp (PMIx appdirs collide otherwise) and
#: /dev/shm (Open MPI's shared-memory segments).
NODE_PRIVATE = ("/tmp", "/dev/shm")
#: The node anchor: hostname, private /tmp and /dev/shm, /etc/hosts naming the nodes. Host paths
#: under /tmp that every node must see (a checkout under /tmp) are bind-mounted aside first and
#: moved back on top of the private /tmp. Arguments: PIDFILE NODE HOSTS HOLD [PATH...].
NODE_ANCHOR = r"""
pidfile=$1 node=$2 hosts=$3 hold=$4; shift 4
hostname "$node" || exit 1
i=0; for p in "$@"; do i=$((i+1)); mkdir -p "$hold/$i" && mount --bind "$p" "$hold/$i" || exit 1; done
mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -t tmpfs -o mode=1777 tmpfs /dev/shm || exit 1
i=0; for p in "$@"; do i=$((i+1)); mkdir -p "$p" && mount --move "$hold/$i" "$p" || exit 1; done
mount --bind "$hosts" /etc/hosts && echo $$ > "$pidfile" && exec sleep infinity
"""
#: Seconds any one tool (ip, tc, munged, slurm daemons, sinfo, ...) may take before it is an error.
TOOL_TIMEOUT = 60
MAX_NODES = 16
DEFAULT_WIDTHS = {"4X": 1.0, "2X": 0.5, "1X": 0.25}
RATE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kmg]?)bit$")
_UNIT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
MIN_BURST = 128 * 1024          # bytes; must exceed a GSO packet (64 KiB)


def parse_rate(text, where="rate"):
    """'250mbit' -> 250_000_000 (bit/s). Raises CrosstalkError naming ``where``."""
    m = RATE_RE.match(str(text).strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise CrosstalkError(f"{where}: {text!r} is not a rate like 100mbit, 1gbit, 2.5gbit")
    return int(float(m.group(1)) * _UNIT[m.group(2)])


def format_rate(bps):
    for suffix, unit in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= unit and bps % unit == 0:
            return f"{bps // unit}{suffix}"
    return f"{bps}bit"


def tbf_burst(bps):
    """Bucket size in bytes: max(128 KiB, 2 ms at the rate) (a fixed burst caps fast links)."""
    return max(MIN_BURST, int(bps * 0.002 / 8))


def _pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _comm(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _read_pid(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _netns_id(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _pids_in_netns(ns_id):
    """All live processes whose network namespace is ``ns_id`` ('net:[inode]')."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _netns_id(entry) == ns_id and _pid_alive(entry):
            pids.append(int(entry))
    return pids


def _kill(pids, sig):
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in pids if _pid_alive(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return [p for p in pids if _pid_alive(p)]


def _run(argv, stdin=None, check=True, timeout=TOOL_TIMEOUT):
    try:
        out = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CrosstalkError(f"vcluster: {' '.join(argv[:6])}: did not finish within {timeout} s") from None
    if check and out.returncode != 0:
        raise CrosstalkError(f"vcluster: {' '.join(argv[:6])}...: "
                             f"{(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    return out


def _write_if_changed(path, text, mode=0o644):
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)
    return True


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


def _load_yaml(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f) or {}
    except FileNotFoundError:
        return {}
    except yaml.YAMLError as err:
        raise InputError(path, "", f"not valid YAML ({err.__class__.__name__})") from None


def _system_name(inventory):
    """``crosstalk_system.name`` from the inventory's ``group_vars/all`` (the cluster is named after
    the system it models; read directly: ``crosstalk link`` runs in every shaped job)."""
    all_vars = inventory / "group_vars" / "all"
    for path in sorted(all_vars.glob("*.y*ml")) if all_vars.is_dir() else []:
        system = _load_yaml(path).get("crosstalk_system")
        if isinstance(system, dict) and system.get("name"):
            return str(system["name"])
    return None


def _under(path, roots):
    path = Path(path).resolve()
    return any(path.is_relative_to(root) for root in roots)


class VCluster:
    """One virtual cluster. Create with :meth:`from_inventory`."""

    def __init__(self, name, subnet, nodes, link_rate, widths=None, injection_cap=None,
                 state_dir=None, slurm=None, node_rates=None):
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
        # The checkout must be seen by every node: ReFrame, job scripts and results live in it.
        self.shared_paths = [str(REPO_ROOT)] if _under(REPO_ROOT, NODE_PRIVATE) else []

    def visible_on_nodes(self, path):
        """Whether the nodes see ``path`` as the host does (their /tmp and /dev/shm are their own)."""
        return not _under(path, NODE_PRIVATE) or _under(path, self.shared_paths)

    def _stale_shared_paths(self):
        """Shared paths whose bind mount on a node shows another directory than the host's (the
        nodes bound the directory itself, so one deleted and made again is not seen anew)."""
        stale = set()
        for node in self.nodes:
            pid = self.anchor_pid(node)
            for path in self.shared_paths if pid else ():
                try:
                    host, seen = os.stat(path), os.stat(f"/proc/{pid}/root{path}")
                except OSError:
                    stale.add(path)
                    continue
                if (host.st_dev, host.st_ino) != (seen.st_dev, seen.st_ino):
                    stale.add(path)
        return sorted(stale)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_inventory(cls, path="inventories/vcluster", **overrides):
        """Read ``hosts.yml`` and ``group_vars/all/vcluster.yml``; ``overrides`` win:
        nodes (int), link_rate, name, subnet, state_dir, injection_cap."""
        inv = Path(path)
        if not inv.is_dir():
            raise InputError(inv, "", "no such inventory directory")
        gv_path = inv / "group_vars" / "all" / "vcluster.yml"
        gv = _load_yaml(gv_path)
        hosts_path = inv / "hosts.yml"
        group = (((_load_yaml(hosts_path).get("all") or {}).get("children") or {})
                 .get("vcluster_nodes") or {})
        hosts = group.get("hosts") or {}
        if not hosts:
            raise InputError(hosts_path, "vcluster_nodes.hosts", "no nodes listed")
        names = list(hosts)
        for i, n in enumerate(names, 1):
            if n != f"n{i}":
                raise InputError(hosts_path, f"vcluster_nodes.hosts.{n}",
                                 f"nodes must be named n1..nN in order (expected n{i})")
        default_name = gv.get("vcluster_name") or _system_name(inv) or "vcluster"
        name = overrides.pop("name", None) or default_name
        if not re.match(r"^[a-z][a-z0-9_-]{0,11}$", str(name)):
            raise InputError(gv_path, "vcluster_name", f"{name!r}: use [a-z][a-z0-9_-], <= 12 chars")
        sub_override = overrides.pop("subnet", None)
        subnet_text = sub_override or gv.get("vcluster_subnet", "198.18.0.0/24")

        def bad_subnet(problem):
            if sub_override:
                return CrosstalkError(f"subnet: {subnet_text}: {problem}")
            return InputError(gv_path, "vcluster_subnet", f"{subnet_text}: {problem}")
        try:
            subnet = ipaddress.ip_network(subnet_text)
        except ValueError as err:
            raise bad_subnet(str(err)) from None
        if not subnet.subnet_of(BENCH_NET):
            raise bad_subnet("outside 198.18.0.0/15 (the only range the cluster may use)")
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
                node_rates[n] = _checked_rate(hv["vcluster_link_rate"], hosts_path,
                                              f"{n}.vcluster_link_rate")
        widths = gv.get("vcluster_widths") or DEFAULT_WIDTHS
        if set(widths) != set(DEFAULT_WIDTHS):
            raise InputError(gv_path, "vcluster_widths", "must define exactly 4X, 2X and 1X")
        link_rate = overrides.pop("link_rate", None)
        if link_rate:
            parse_rate(link_rate, "link_rate")
        else:
            link_rate = _checked_rate(gv.get("vcluster_link_rate", "1gbit"), gv_path,
                                      "vcluster_link_rate")
        state_dir = overrides.pop("state_dir", None) or (
            gv.get("vcluster_state_dir") if name == default_name else None)
        cap = overrides.pop("injection_cap", None)
        if cap:
            parse_rate(cap, "injection_cap")
        elif gv.get("vcluster_injection_cap"):
            cap = _checked_rate(gv["vcluster_injection_cap"], gv_path, "vcluster_injection_cap")
        if overrides:
            raise CrosstalkError(f"VCluster: unknown override(s): {', '.join(overrides)}")
        return cls(name, subnet, nodes, link_rate, widths, cap, state_dir,
                   _checked_slurm(gv.get("vcluster_slurm"), gv_path), node_rates)

    # ------------------------------------------------------------------ paths and environment
    def _pidfile(self, what):
        return self.state / "pids" / f"{what}.pid"

    @property
    def slurm_conf(self):
        return self.state / "slurm.conf"

    @property
    def shared_dir(self):
        """A directory every node sees (each node's /tmp is private): binaries, job files."""
        return self.state / "shared"

    @property
    def hostfile(self):
        return self.state / "hostfile"

    def env(self):
        """Variables every command on the cluster needs: Slurm client config and Open MPI."""
        return {
            "SLURM_CONF": str(self.slurm_conf),
            "SLURM_MPI_TYPE": "pmix",
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_plm_rsh_agent": str(self.state / "bin" / "rsh-agent"),
            "OMPI_MCA_orte_default_hostfile": str(self.hostfile),
            "OMPI_MCA_rmaps_base_mapping_policy": "node",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "OMPI_MCA_btl": "tcp,self,vader",
            "OMPI_MCA_btl_tcp_if_include": "eth0",
            "OMPI_MCA_oob_tcp_if_include": "eth0",
            "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_MCA_osc": "pt2pt",
        }

    # ------------------------------------------------------------------ entering nodes
    def _verified(self, pidfile, comm, node=None):
        """The PID in ``pidfile`` if that process is alive, is ``comm`` and (for a node's
        processes) lives in the node's namespace: a stale file never names a stranger."""
        pid = _read_pid(pidfile)
        if not pid or not _pid_alive(pid) or _comm(pid) != comm:
            return None
        if node is not None:
            ns_file = self.state / "nodes" / f"{node}.netns"
            if not ns_file.exists() or _netns_id(pid) != ns_file.read_text().strip():
                return None
        return pid

    def anchor_pid(self, node):
        return self._verified(self._pidfile(f"anchor-{node}"), "sleep", node)

    def _enter(self, node, argv, wd=None, ns="-n -u -m"):
        pid = self.anchor_pid(node)
        if pid is None:
            raise CrosstalkError(f"vcluster {self.name}: node {node} is not up "
                                 f"(run: crosstalk vcluster up)")
        return ["nsenter", "-t", str(pid), *ns.split(), f"--wd={wd or os.getcwd()}", "--", *argv]

    def _check_node(self, node):
        if node not in self.nodes:
            raise CrosstalkError(f"node: {node!r} is not a node of {self.name} "
                                 f"({', '.join(self.nodes)})")

    def exec(self, node, argv, **kw):
        """Run ``argv`` on ``node``; keyword arguments go to subprocess.run (cwd -> nsenter --wd;
        an expired ``timeout`` is a one-line CrosstalkError naming the command and node).
        The cluster's variables (:meth:`env`) are added to ``env`` (default: os.environ) where
        ``env`` does not set them."""
        self._check_node(node)
        full = self._enter(node, list(argv), kw.pop("cwd", None))
        kw["env"] = {**self.env(), **(kw.get("env") or os.environ)}
        try:
            return subprocess.run(full, **kw)
        except subprocess.TimeoutExpired:
            raise CrosstalkError(f"`{describe(argv)}` on {node} did not finish within "
                                 f"{kw['timeout']:g} s") from None

    def popen(self, node, argv, **kw):
        self._check_node(node)
        full = self._enter(node, list(argv), kw.pop("cwd", None))
        kw["env"] = {**self.env(), **(kw.get("env") or os.environ)}
        return subprocess.Popen(full, **kw)

    def _netcmd(self, node_or_sw, tool, lines):
        """Run a batch of ``ip``/``tc`` lines inside a node's (or the switch's) netns."""
        pid = _read_pid(self._pidfile(f"anchor-{node_or_sw}"))
        return _run(["nsenter", "-t", str(pid), "-n", tool, "-batch", "-"],
                    stdin="\n".join(lines) + "\n")

    # ------------------------------------------------------------------ status
    def _daemon_pid(self, what):
        return self._verified(self._pidfile(what), what)

    def _slurmd_pid(self, node):
        return self._verified(self.state / "run" / f"slurmd-{node}.pid", "slurmd", node)

    def _slurmctld_pid(self):
        return self._verified(self.state / "run" / "slurmctld.pid", "slurmctld", self.nodes[0])

    def status(self):
        nodes = {}
        links = self.link_state() if (self.state / "links.json").exists() else {}
        for n in self.nodes:
            nodes[n] = {"address": self.addresses[n], "anchor": self.anchor_pid(n),
                        "slurmd": self._slurmd_pid(n), "link": links.get(n)}
        return {"name": self.name, "state_dir": str(self.state), "subnet": str(self.subnet),
                "switch": self.anchor_pid("sw"), "munged": self._daemon_pid("munged"),
                "slurmctld": self._slurmctld_pid(), "nodes": nodes, "up": self.is_up()}

    def is_up(self):
        return (self.anchor_pid("sw") is not None and self._daemon_pid("munged") is not None
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
        for tool in ("unshare", "nsenter", "ip", "tc", "munged", "slurmctld", "slurmd", "sinfo"):
            if not shutil.which(tool):
                raise CrosstalkError(f"vcluster: {tool} not found on PATH")
        probe = _run(["unshare", "--net", "--uts", "--mount", "true"], check=False)
        if probe.returncode != 0:
            raise CrosstalkError("vcluster: namespaces not permitted here: "
                                 + (probe.stderr.strip() or "unshare failed"))

    def _config(self):
        return {"name": self.name, "subnet": str(self.subnet), "nodes": self.nodes,
                "link_rate": self.link_rate, "node_rates": self.node_rates,
                "injection_cap": self.injection_cap, "slurm": self.slurm,
                "shared_paths": self.shared_paths}

    def up(self):
        """Build the cluster, or repair what is missing. Returns the list of changes made
        (empty: it was already up)."""
        self._preflight()
        with self._locked():
            return self._up()

    def _up(self):
        changes = []
        cfg_path = self.state / "cluster.json"
        if cfg_path.exists():
            try:
                old = json.loads(cfg_path.read_text())
            except ValueError:
                old = None
            if old != self._config():
                self.down()
                changes.append("reconfigured")
        if self.anchor_pid("sw") is None and self.state.exists():
            self.down()             # no switch: nothing else can be trusted, rebuild
        elif self._stale_shared_paths():
            self.down()             # e.g. the checkout was deleted and cloned again at that path
            changes.append("reconfigured")
        for sub in ("pids", "run", "log", "bin", "nodes", "slurmctld", "slurmd", "munge", "shared"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        (self.state / "munge").chmod(0o700)
        _write_if_changed(cfg_path, json.dumps(self._config(), indent=1, sort_keys=True))
        slurm_conf_changed = self._write_files()

        if self.anchor_pid("sw") is None:
            self._start_anchor("sw")
            self._netcmd("sw", "ip", ["link set lo up", "link add br0 type bridge forward_delay 0",
                                      "link set br0 up"])
            changes.append("switch")
        links = self._links()
        for n in self.nodes:
            if self.anchor_pid(n) is None:
                self._clear_node(n)
                self._start_anchor(n)
                self._wire(n)
                self._shape(n, links[n]["rate_bps"])
                changes.append(f"node {n}")
        if any(c.startswith("node ") for c in changes):
            self._pin_neighbours()
        if self._daemon_pid("munged") is None:
            self._start_munged()
            changes.append("munged")
        if self._slurmctld_pid() is None:
            self._start_slurm_daemon(self.nodes[0], ["slurmctld", "-f", str(self.slurm_conf)],
                                     self.state / "run" / "slurmctld.pid")
            changes.append("slurmctld")
        started = []
        for n in self.nodes:
            if self._slurmd_pid(n) is None:
                self._start_slurm_daemon(n, ["slurmd", "-f", str(self.slurm_conf), "-N", n],
                                         None)
                started.append(n)
        for n in started:
            self._wait_pidfile(self.state / "run" / f"slurmd-{n}.pid", f"slurmd on {n}")
            changes.append(f"slurmd {n}")
        if slurm_conf_changed and "slurmctld" not in changes:
            # running daemons read a changed slurm.conf or mpi.conf only when told to
            self.exec(self.nodes[0], ["scontrol", "reconfigure"], capture_output=True, cwd="/",
                      timeout=TOOL_TIMEOUT)
            changes.append("slurm configuration")
        self._wait_slurm_ready()
        return changes

    def _start_anchor(self, node):
        """A ``sleep infinity`` that owns the node's namespaces; it writes its own PID."""
        pidfile = self._pidfile(f"anchor-{node}")
        pidfile.unlink(missing_ok=True)
        if node == "sw":
            script = 'echo $$ > "$1"; exec sleep infinity'
            argv = ["unshare", "--net", "--", "sh", "-c", script, "anchor", str(pidfile)]
        else:
            hold = self.state / "nodes" / f"{node}.hold"
            argv = ["unshare", "--net", "--uts", "--mount", "--propagation", "private", "--",
                    "sh", "-c", NODE_ANCHOR, "anchor", str(pidfile), node, str(self.state / "hosts"),
                    str(hold), *self.shared_paths]
        # setsid --fork: the anchor is reparented away from us (no zombies in long sessions)
        subprocess.run(["setsid", "--fork", *argv], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       timeout=TOOL_TIMEOUT)
        pid = self._wait_pidfile(pidfile, f"namespace anchor for {node}")
        deadline = time.monotonic() + 5
        while _comm(pid) != "sleep" and time.monotonic() < deadline:   # sh has not exec'd yet
            time.sleep(0.01)
        (self.state / "nodes" / f"{node}.netns").write_text(_netns_id(pid) or "")
        if self.anchor_pid(node) != pid:
            raise CrosstalkError(f"vcluster {self.name}: namespace anchor for {node} died")

    def _wait_pidfile(self, path, what, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = _read_pid(path)
            if pid and _pid_alive(pid):
                return pid
            time.sleep(0.02)
        raise CrosstalkError(f"vcluster {self.name}: {what} did not start within {timeout} s "
                             f"(logs: {self.state / 'log'})")

    def _clear_node(self, node):
        """Kill whatever still runs in a node whose anchor died (its netns lives on)."""
        ns_file = self.state / "nodes" / f"{node}.netns"
        ns_id = ns_file.read_text().strip() if ns_file.exists() else ""
        if ns_id:
            pids = _pids_in_netns(ns_id)
            _kill(pids, signal.SIGKILL)
            _wait_gone(pids, 5)
        ns_file.unlink(missing_ok=True)
        (self.state / "run" / f"slurmd-{node}.pid").unlink(missing_ok=True)
        if node == self.nodes[0]:
            (self.state / "run" / "slurmctld.pid").unlink(missing_ok=True)

    def _wire(self, node):
        i = self.nodes.index(node) + 1
        port, npid = f"p{i}", self.anchor_pid(node)
        # the port of a node rebuilt after its anchor died may outlive the old namespace
        _run(["nsenter", "-t", str(self.anchor_pid("sw")), "-n", "ip", "link", "del", port],
             check=False)
        self._netcmd("sw", "ip", [f"link add {port} type veth peer name eth0 netns {npid}",
                                  f"link set {port} master br0", f"link set {port} up"])
        self._netcmd(node, "ip", ["link set lo up",
                                  f"addr add {self.addresses[node]}/{self.subnet.prefixlen} dev eth0",
                                  "link set eth0 up"])

    def _pin_neighbours(self):
        """Permanent ARP entries for every other node, as on a fabric with static addressing: with
        ARP, a node starved of CPU (2 cores, 12 ranks) lets resolution fail, connect() returns
        EHOSTUNREACH and Open MPI 4.1.4's TCP BTL crashes in MPI_Init (3 of 6 srun jobs under load
        before, 0 of 8 after)."""
        macs = {}
        for n in self.nodes:
            out = _run(["nsenter", "-t", str(self.anchor_pid(n)), "-n", "ip", "-j", "link", "show",
                        "eth0"])
            macs[n] = json.loads(out.stdout)[0]["address"]
        for n in self.nodes:
            self._netcmd(n, "ip", [f"neigh replace {self.addresses[m]} lladdr {macs[m]} dev eth0 "
                                   f"nud permanent" for m in self.nodes if m != n] or ["neigh flush all"])

    def _shape(self, node, bps):
        """tbf both ways: node egress (capped by the injection limit) and the switch port."""
        egress = min(bps, self.injection_cap) if self.injection_cap else bps
        port = f"p{self.nodes.index(node) + 1}"
        self._netcmd(node, "tc", [f"qdisc replace dev eth0 root tbf rate {egress}bit "
                                  f"burst {tbf_burst(egress)} latency 50ms"])
        self._netcmd("sw", "tc", [f"qdisc replace dev {port} root tbf rate {bps}bit "
                                  f"burst {tbf_burst(bps)} latency 50ms"])

    def _start_munged(self):
        pidfile = self._pidfile("munged")
        sock = self.state / "munge" / "munge.socket"
        _run(["munged", "--force", f"--socket={sock}", f"--pid-file={pidfile}",
              f"--log-file={self.state / 'log' / 'munged.log'}",
              f"--seed-file={self.state / 'munge' / 'munged.seed'}"])
        self._wait_pidfile(pidfile, "munged")

    def _start_slurm_daemon(self, node, argv, pidfile):
        # the daemons fork into the background and write their own PID files
        out = subprocess.run(self._enter(node, argv, wd="/"), capture_output=True, text=True,
                             env={**os.environ, **self.env()}, timeout=TOOL_TIMEOUT)
        if out.returncode != 0:
            raise CrosstalkError(f"vcluster {self.name}: {argv[0]} on {node} failed: "
                                 f"{out.stderr.strip()[-300:]}")
        if pidfile:
            self._wait_pidfile(pidfile, f"{argv[0]} on {node}")

    def sinfo(self):
        """{node: state} as Slurm sees it ('idle', 'down*', ...)."""
        out = self.exec(self.nodes[0], ["sinfo", "-h", "-N", "-o", "%N %t"],
                        capture_output=True, text=True, cwd="/", timeout=TOOL_TIMEOUT)
        return dict(line.split() for line in out.stdout.splitlines() if line.strip())

    def _wait_slurm_ready(self, timeout=60):
        """Until every node is usable; a responding node left DOWN (e.g. after its slurmd
        was killed) is resumed."""
        deadline = time.monotonic() + timeout
        states = {}
        while time.monotonic() < deadline:
            states = self.sinfo()
            bad = {n: s for n, s in states.items() if s.rstrip("*~#") not in
                   ("idle", "alloc", "mix", "comp") or s.endswith("*")}
            if len(states) == len(self.nodes) and not bad:
                return
            down = [n for n, s in bad.items() if s in ("down", "drain", "drng", "fail")]
            if down:
                self.exec(self.nodes[0], ["scontrol", "update", f"nodename={','.join(down)}",
                                          "state=resume"], capture_output=True, cwd="/",
                          timeout=TOOL_TIMEOUT)
            time.sleep(0.2)
        raise CrosstalkError(f"vcluster {self.name}: Slurm nodes not ready after {timeout} s: "
                             f"{states} (logs: {self.state / 'log'})")

    # ------------------------------------------------------------------ generated files
    def _write_files(self):
        st = self.state
        _write_if_changed(st / "hosts", "127.0.0.1 localhost\n" + "".join(
            f"{self.addresses[n]} {n}\n" for n in self.nodes))
        _write_if_changed(self.hostfile, "".join(
            f"{n} slots={self.slurm['cpus_per_node']}\n" for n in self.nodes))
        cases = "".join(f"  {n}|{self.addresses[n]}) node={n} ;;\n" for n in self.nodes)
        # Open MPI calls: AGENT [options] HOST COMMAND...; COMMAND is a shell string (as for ssh)
        _write_if_changed(st / "bin" / "rsh-agent", f"""#!/bin/sh
# Open MPI launch agent for virtual cluster {self.name}: runs COMMAND on node HOST.
while [ "$#" -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case "$host" in
{cases}  *) echo "rsh-agent: unknown node $host" >&2; exit 255 ;;
esac
pid=$(cat "{st}/pids/anchor-$node.pid") || exit 255
exec nsenter -t "$pid" -n -u -m --wd=/ -- /bin/sh -c "$*"
""", 0o755)
        for n in self.nodes:   # Ansible's interpreter: runs modules inside the node
            _write_if_changed(st / "bin" / f"python-{n}", f"""#!/bin/sh
pid=$(cat "{st}/pids/anchor-{n}.pid") || exit 1
exec nsenter -t "$pid" -n -u -m --wd="$PWD" -- /usr/bin/python3 "$@"
""", 0o755)
        s = self.slurm
        first = self.nodes[0]
        nodes = "".join(
            f"NodeName={n} NodeAddr={self.addresses[n]} CPUs={s['cpus_per_node']} "
            f"RealMemory={s['real_memory_mb']} State=UNKNOWN\n" for n in self.nodes)
        changed = _write_if_changed(self.slurm_conf, f"""# Generated by crosstalk.vcluster for cluster {self.name}
ClusterName={self.name}
SlurmctldHost={first}({self.addresses[first]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={st}/munge/munge.socket
StateSaveLocation={st}/slurmctld
SlurmdSpoolDir={st}/slurmd/%n
SlurmctldPidFile={st}/run/slurmctld.pid
SlurmdPidFile={st}/run/slurmd-%n.pid
SlurmctldLogFile={st}/log/slurmctld.log
SlurmdLogFile={st}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
JobRequeue=0
SlurmdTimeout={s['slurmd_timeout']}
SlurmctldTimeout=30
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
MailProg=/bin/true
{nodes}PartitionName={s['partition']} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # Slurm 22.05's default "mixed" PMIx fence let a rank on a loaded host still be in Open MPI
        # 4.1's modex fence when a peer's first message arrived: a segfault in MPI_Init under srun
        # (37 of 85 8-rank starts on 2 busy cores; with ring or tree 0 of 90). One algorithm for
        # every fence keeps them in order.
        changed |= _write_if_changed(st / "mpi.conf", "# Generated by crosstalk.vcluster\n"
                                     "PMIxCollFence=ring\n")
        for n in self.nodes:
            (st / "slurmd" / n).mkdir(parents=True, exist_ok=True)
        return changed

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
        _kill(pids, signal.SIGTERM)          # let slurmctld save state; it takes 1-3 s
        left = _wait_gone(pids, 10)
        _kill(left, signal.SIGKILL)
        all_pids = list(pids)
        for f in sorted((self.state / "nodes").glob("*.netns")):
            ns_pids = _pids_in_netns(f.read_text().strip()) if f.read_text().strip() else []
            _kill(ns_pids, signal.SIGKILL)   # job steps, ranks, orteds left on the node
            all_pids += ns_pids
        for f in sorted((self.state / "pids").glob("*.pid")):
            name = f.stem.removeprefix("anchor-")
            pid = (self._daemon_pid("munged") if f.stem == "munged"
                   else self._verified(f, "sleep", name))
            if pid:
                _kill([pid], signal.SIGTERM if f.stem == "munged" else signal.SIGKILL)
                all_pids.append(pid)
        left = _wait_gone(all_pids, 15)
        if left:
            raise CrosstalkError(f"vcluster {self.name}: processes {left} did not exit")
        shutil.rmtree(self.state)
        return bool(all_pids)

    # ------------------------------------------------------------------ links
    def _links(self):
        path = self.state / "links.json"
        if path.exists():
            return json.loads(path.read_text())
        links = {n: {"width": "4X", "rate_bps": self.node_rates[n]} for n in self.nodes}
        path.write_text(json.dumps(links, indent=1))
        return links

    def link_state(self):
        """{node: {'width': '4X'|'2X'|'1X'|None, 'rate_bps', 'rate', 'nominal_bps',
        'tc_rate_bps' (what tbf on the switch port really has)}}."""
        links = self._links()
        out = {}
        for n in self.nodes:
            entry = dict(links[n], rate=format_rate(links[n]["rate_bps"]),
                         nominal_bps=self.node_rates[n], tc_rate_bps=None)
            if self.anchor_pid("sw"):
                out_tc = _run(["nsenter", "-t", str(self.anchor_pid("sw")), "-n", "tc", "-j",
                               "qdisc", "show", "dev", f"p{self.nodes.index(n) + 1}"], check=False)
                with contextlib.suppress(ValueError):
                    for q in json.loads(out_tc.stdout or "[]"):
                        if q.get("kind") == "tbf":
                            entry["tc_rate_bps"] = int(q["options"]["rate"]) * 8
            out[n] = entry
        return out

    def set_link(self, node, width=None, rate=None):
        """Set a node's link to a width level (4X, 2X, 1X of its nominal rate) or a rate."""
        self._check_node(node)
        if (width is None) == (rate is None):
            raise CrosstalkError("link set: give exactly one of --width and --rate")
        if width is not None:
            if width not in self.widths:
                raise CrosstalkError(f"--width: {width!r}: choose one of {', '.join(self.widths)}")
            bps = int(self.node_rates[node] * float(self.widths[width]))
        else:
            bps = parse_rate(rate, "--rate")
        with self._locked():
            if self.anchor_pid(node) is None or self.anchor_pid("sw") is None:
                raise CrosstalkError(f"vcluster {self.name}: node {node} is not up "
                                     "(run: crosstalk vcluster up)")
            links = self._links()
            self._shape(node, bps)
            links[node] = {"width": width, "rate_bps": bps}
            _write_if_changed(self.state / "links.json", json.dumps(links, indent=1))
            return links[node]

    def restore_links(self, nodes=None):
        for n in nodes or self.nodes:
            self._check_node(n)
            self.set_link(n, width="4X")

    @property
    def links_lock(self):
        """Held (flock) by a job for as long as it has links shaped, so jobs of concurrent runs
        never reshape or restore links under each other (outside the state dir: down keeps it)."""
        return self.state.parent / f"{self.name}.links.lock"

    @contextlib.contextmanager
    def link_override(self, settings):
        """``{'n2': '1X', 'n3': '250mbit'}`` for the duration of the block; nominal afterwards,
        also when the block raises."""
        try:
            for node, value in settings.items():
                if str(value).upper() in self.widths:
                    self.set_link(node, width=str(value).upper())
                else:
                    self.set_link(node, rate=value)
            yield self
        finally:
            self.restore_links()
