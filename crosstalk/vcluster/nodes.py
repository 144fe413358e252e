"""Nodes and switches as namespaces held open by anchor processes; entering them to run commands."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from crosstalk.errors import CrosstalkError
from crosstalk.proc import run
from crosstalk.vcluster.procs import (
    NODE_NAMESPACES,
    TOOL_TIMEOUT,
    comm,
    kill,
    netns_id,
    pid_alive,
    pids_in_netns,
    read_pid,
    run_tool,
    wait_gone,
)

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
#: A switch anchor: a network namespace only.
SWITCH_ANCHOR = 'echo $$ > "$1"; exec sleep infinity'


def under(path, roots):
    path = Path(path).resolve()
    return any(path.is_relative_to(root) for root in roots)


class NodeAccess:
    """Anchors, PID files and ``nsenter`` for a VCluster (``self.state``, ``self.nodes``)."""

    def visible_on_nodes(self, path):
        """Whether the nodes see ``path`` as the host does (their /tmp and /dev/shm are their own)."""
        return not under(path, NODE_PRIVATE) or under(path, self.shared_paths)

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

    def _pidfile(self, what):
        return self.state / "pids" / f"{what}.pid"

    def _verified(self, pidfile, name, node=None):
        """The PID in ``pidfile`` if that process is alive, is ``name`` and (for a node's or a
        switch's processes) lives in its namespace: a stale file never names a stranger."""
        pid = read_pid(pidfile)
        if not pid or not pid_alive(pid) or comm(pid) != name:
            return None
        if node is not None:
            ns_file = self.state / "nodes" / f"{node}.netns"
            if not ns_file.exists() or netns_id(pid) != ns_file.read_text().strip():
                return None
        return pid

    def anchor_pid(self, node):
        """The anchor of a node or a switch (None if it is not up)."""
        return self._verified(self._pidfile(f"anchor-{node}"), "sleep", node)

    def _enter(self, node, argv, wd=None, ns=NODE_NAMESPACES, quota=True):
        pid = self.anchor_pid(node)
        if pid is None:
            raise CrosstalkError(f"vcluster {self.name}: node {node} is not up "
                                 f"(run: crosstalk vcluster up)")
        return [*(self._join_prefix(node) if quota else []), "nsenter", "-t", str(pid), *ns.split(),
                f"--wd={wd or os.getcwd()}", "--", *argv]

    def _check_node(self, node):
        if node not in self.nodes:
            raise CrosstalkError(f"node: {node!r} is not a node of {self.name} "
                                 f"({', '.join(self.nodes)})")

    def exec(self, node, argv, *, timeout, **kw):
        """Run ``argv`` on ``node`` for at most ``timeout`` seconds; keyword arguments are
        subprocess.run's (cwd -> nsenter --wd). On expiry the command's whole process group ends
        (mpirun and every rank it started, on any node: left running, they would load the 2 cores
        of every later job) and a one-line CrosstalkError names the command and node.
        The cluster's variables (:meth:`env`) are added to ``env`` (default: os.environ) where
        ``env`` does not set them."""
        self._check_node(node)
        full = self._enter(node, list(argv), kw.pop("cwd", None))
        kw["env"] = {**self.env(), **(kw.get("env") or os.environ)}
        # a command that may read our terminal stays in our process group (see proc.run)
        on_terminal = "stdin" not in kw and "input" not in kw and sys.stdin is not None \
            and sys.stdin.isatty()
        return run(full, timeout, argv, where=node, own_group=not on_terminal, **kw)

    def popen(self, node, argv, quota=True, **kw):
        """Start ``argv`` on ``node``; ``quota=False``: outside the node's CPU quota (a login node's
        work, e.g. the ReFrame driver, whose jobs' launchers join the quota themselves)."""
        self._check_node(node)
        full = self._enter(node, list(argv), kw.pop("cwd", None), quota=quota)
        kw["env"] = {**self.env(), **(kw.get("env") or os.environ)}
        return subprocess.Popen(full, **kw)

    def _netcmd(self, node_or_switch, tool, lines, check=True):
        """Run a batch of ``ip``/``tc`` lines inside a node's (or a switch's) netns."""
        pid = read_pid(self._pidfile(f"anchor-{node_or_switch}"))
        return run_tool(["nsenter", "-t", str(pid), "-n", tool, "-batch", "-"],
                        stdin="\n".join(lines) + "\n", check=check)

    def _netjson(self, node_or_switch, argv):
        """``ip -j``/``tc -j`` output inside a namespace, parsed."""
        out = run_tool(["nsenter", "-t", str(self.anchor_pid(node_or_switch)), "-n", *argv], check=False)
        try:
            return json.loads(out.stdout or "[]")
        except ValueError:
            return []

    def _start_anchor(self, node):
        """A ``sleep infinity`` that owns the namespaces of a node (or, netns only, a switch); it
        writes its own PID."""
        pidfile = self._pidfile(f"anchor-{node}")
        pidfile.unlink(missing_ok=True)
        if node not in self.nodes:
            argv = ["unshare", "--net", "--", "sh", "-c", SWITCH_ANCHOR, "anchor", str(pidfile)]
        else:
            hold = self.state / "nodes" / f"{node}.hold"
            argv = ["unshare", "--net", "--uts", "--ipc", "--mount", "--propagation", "private", "--",
                    "sh", "-c", NODE_ANCHOR, "anchor", str(pidfile), node, str(self.state / "hosts"),
                    str(hold), *self.shared_paths]
        # setsid --fork: the anchor is reparented away from us (no zombies in long sessions)
        subprocess.run(["setsid", "--fork", *argv], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       timeout=TOOL_TIMEOUT)
        pid = self._wait_pidfile(pidfile, f"namespace anchor for {node}")
        deadline = time.monotonic() + 5
        while comm(pid) != "sleep" and time.monotonic() < deadline:   # sh has not exec'd yet
            time.sleep(0.01)
        (self.state / "nodes" / f"{node}.netns").write_text(netns_id(pid) or "")
        if self.anchor_pid(node) != pid:
            raise CrosstalkError(f"vcluster {self.name}: namespace anchor for {node} died")

    def _wait_pidfile(self, path, what, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = read_pid(path)
            if pid and pid_alive(pid):
                return pid
            time.sleep(0.02)
        raise CrosstalkError(f"vcluster {self.name}: {what} did not start within {timeout} s "
                             f"(logs: {self.state / 'log'})")

    def _clear_node(self, node):
        """Kill whatever still runs in a node whose anchor died (its netns lives on)."""
        ns_file = self.state / "nodes" / f"{node}.netns"
        ns_id = ns_file.read_text().strip() if ns_file.exists() else ""
        if ns_id:
            pids = pids_in_netns(ns_id)
            kill(pids, signal.SIGKILL)
            wait_gone(pids, 5)
        ns_file.unlink(missing_ok=True)
        (self.state / "run" / f"slurmd-{node}.pid").unlink(missing_ok=True)
        if node == self.nodes[0]:
            (self.state / "run" / "slurmctld.pid").unlink(missing_ok=True)
