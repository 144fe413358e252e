"""Machine balance: a virtual cluster shaped as a scale model of a paper's machine; and the nodes'
CPU groups every virtual cluster has.

Each node's processes run in one cgroup, so nodes share the host's cores as nodes: a process
gets its node's share whatever session or launcher started it. Without the groups the kernel's
autogroup scheduler shares CPU between sessions, so srun (a session per job step) and mpirun
(one session) split the cores differently and the partitions disagreed: Triad under injection
kept all of its bandwidth under mpirun and lost half under srun (docs/claims.md).

A node's link rate is the inventory's; what changes is how much CPU a node gets. Each node runs in
a cgroup with a CPU quota (a fraction of one core), so its memory bandwidth and compute shrink with
the quota while its link keeps its rate, until the node's network-to-memory ratio (bytes of link
per byte of Triad) is the target machine's. The quota is planned from this host's one-core Triad
(xt-stream, built here), and the balance achieved is measured on the cluster itself: Triad inside a
node under its quota and the node link's rate with iperf3. The network-to-compute ratio (link bytes
per DGEMM flop, numpy's BLAS on one core) follows and is shown beside the target's (one knob, two
ratios: the papers' machines and this host differ in bytes per flop).
"""
import errno
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crosstalk import REPO_ROOT
from crosstalk.errors import CrosstalkError
from crosstalk.parsers.kernel import among_lines
from crosstalk.vcluster.iperf import iperf_flows

#: Smallest share worth running, and the longest CFS period. Below a few % of a core, throttling
#: costs more CPU than the work: on a 2-vCPU VM, xt-stream's two Triad iterations took 0.35 s of
#: CPU unthrottled, 1.2 s at 2 % (1 ms per 50 ms) and did not finish in 150 s at 1 %.
MIN_SHARE, PERIOD_US = 0.05, 100_000
#: The kernel's smallest CFS quota, and the shortest period used (a quota spread thinly over short
#: periods models a slower core; one long burst per 100 ms makes every timed loop shorter than a
#: period land on a whole number of periods: Triad came out at 674 or 985 MB/s, nothing between).
MIN_QUOTA_US, MIN_PERIOD_US = 1000, 10_000
#: Bumped when the calibration changes: a balance file of an older one is planned again.
CALIBRATION_METHOD = 2
#: Measure-and-correct rounds of the share, and how close the ratio must come.
CALIBRATION_STEPS, CALIBRATION_TOLERANCE = 4, 0.10
TRIAD_ARRAY = "64M"          # bytes per array: 192 MiB in all, beyond any last-level cache here
_DGEMM = ("import time, numpy as np; n = 768; a = np.random.rand(n, n); b = np.random.rand(n, n); a @ b; "
          "best = min((lambda t: (a @ b, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(5)); "
          "print(2 * n ** 3 / best / 1e9)")


def cgroup_cpu_root():
    """(version, directory) of the CPU controller: cgroup v1 ``cpu`` or v2 with ``cpu`` enabled; None."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        return 1, v1
    v2 = Path("/sys/fs/cgroup")
    if "cpu" in (v2 / "cgroup.controllers").read_text().split() if (v2 / "cgroup.controllers").exists() else ():
        return 2, v2
    return None


class CpuShares:
    """One cgroup per node under ``crosstalk-<cluster>``, its CPU quota a fraction of one core."""

    def __init__(self, cluster_name):
        found = cgroup_cpu_root()
        if found is None:
            raise CrosstalkError("vcluster: machine balance needs the cgroup CPU controller "
                                 "(/sys/fs/cgroup/cpu or cgroup v2 with cpu enabled); none here")
        self.version, root = found
        if not os.access(root, os.W_OK):
            raise CrosstalkError(f"vcluster: machine balance needs to create cgroups in {root}: not writable here")
        self.base = root / f"crosstalk-{cluster_name}"

    def procs(self, node):
        return self.base / node / "cgroup.procs"

    def apply(self, nodes, share=None):
        """A group per node; with ``share`` (of one core) each under that quota, else unlimited."""
        self.base.mkdir(exist_ok=True)
        if self.version == 2:       # the node groups get the cpu controller from their parent
            (self.base / "cgroup.subtree_control").write_text("+cpu")
        for node in nodes:
            group = self.base / node
            group.mkdir(parents=True, exist_ok=True)
            if share is None:
                continue
            quota, period = quota_and_period(share)
            if self.version == 1:
                (group / "cpu.cfs_period_us").write_text(str(period))
                (group / "cpu.cfs_quota_us").write_text(str(quota))
            else:
                (group / "cpu.max").write_text(f"{quota} {period}")

    def remove(self):
        """The node groups and their parent (empty by now: the cluster's processes are gone)."""
        if self.base.exists():
            for group in [*sorted(g for g in self.base.iterdir() if g.is_dir()), self.base]:
                for _ in range(50):         # killed processes leave their group a moment later
                    try:
                        group.rmdir()
                        break
                    except OSError as err:
                        if err.errno != errno.EBUSY:
                            raise
                        time.sleep(0.1)
                else:
                    raise CrosstalkError(f"vcluster: {group} still holds processes: cannot remove it")


def quota_and_period(share):
    """(quota, period) in microseconds for ``share`` of one core: the shortest period, at least
    MIN_PERIOD_US, whose quota is at least the kernel's minimum."""
    period = min(PERIOD_US, max(MIN_PERIOD_US, math.ceil(MIN_QUOTA_US / share)))
    return max(MIN_QUOTA_US, round(share * period)), period


def cpu_groups_available():
    """Whether this host lets a virtual cluster put each node in a CPU cgroup of its own."""
    found = cgroup_cpu_root()
    return bool(found) and os.access(found[1], os.W_OK)


def leave_node_quota():
    """Move this process out of a virtual node's CPU quota, into the root cgroup: crosstalk's own
    commands in a job script (link control) are the harness's work, not the modelled node's, and at
    a few % of a core they would take minutes. Elsewhere a no-op."""
    found = cgroup_cpu_root()
    try:
        mine = Path("/proc/self/cgroup").read_text()
    except OSError:
        return
    if found and "/crosstalk-" in mine and os.access(found[1] / "cgroup.procs", os.W_OK):
        (found[1] / "cgroup.procs").write_text(str(os.getpid()))


#: Shell that leaves a virtual node's CPU quota (as leave_node_quota) and then runs its arguments:
#: for a command whose own start-up would pay the quota (a Python interpreter and its imports take
#: about 2.7 s at 5 % of a core, 0.16 s outside). The cgroup roots are cgroup_cpu_root's.
LEAVE_QUOTA_SH = ('if grep -q "/crosstalk-" /proc/self/cgroup; then for g in /sys/fs/cgroup/cpu /sys/fs/cgroup; do '
                  'if [ -w "$g/cgroup.procs" ]; then echo $$ > "$g/cgroup.procs" && break; fi; done; fi; exec "$@"')


def outside_node_quota(argv):
    """``argv`` run outside a virtual node's CPU quota (elsewhere as it is)."""
    return ["sh", "-c", LEAVE_QUOTA_SH, "sh", *argv]


def join_prefix(procs):
    """argv prefix that moves the command into a node's cgroup before it runs (children follow)."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs)]


def describe(b):
    """'like X: 5.0% of a core per node; network/memory 0.05 B/B (target 0.05), ...' (status, report)."""
    achieved, target = b.get("achieved") or {}, b["target"]
    parts = []
    if b.get("share"):
        parts.append(f"{b['share']:.1%} of a core per node; network/memory "
                     f"{achieved.get('network_to_memory', float('nan')):.3g} B/B "
                     f"(target {target['network_to_memory']:.3g})")
        if target.get("network_to_compute") and achieved.get("network_to_compute"):
            parts[-1] += (f", network/compute {achieved['network_to_compute']:.3g} B/flop "
                          f"(target {target['network_to_compute']:.3g})")
    if target.get("fabric"):
        fab = target["fabric"]
        parts.append(f"{fab['topology']} global:injection {fab['global_to_injection']:g} (configured)")
    text = f"like {b['like']}: " + "; ".join(parts)
    return text + (f" [{b['limited']}]" if b.get("limited") else "")


def build_triad(where):
    """xt-stream built with the host's C compiler and OpenMP into ``where`` (seconds, no CMake)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise CrosstalkError("vcluster: machine balance measures Triad with xt-stream: no C compiler (cc)")
    exe = Path(where) / "xt-stream"
    src = REPO_ROOT / "bench"
    out = subprocess.run([cc, "-O2", "-fopenmp", f"-I{src / 'common'}", str(src / "src" / "xt-stream.c"),
                          str(src / "common" / "xt_common.c"), "-lm", "-o", str(exe)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise CrosstalkError(f"vcluster: building xt-stream failed: {out.stderr.strip()[-300:]}")
    return exe


def triad_of(stdout):
    """Triad (B/s) from xt-stream's JSON lines: STREAM's average (bytes over the mean time), which
    counts a node's throttled time in proportion where a median of a few iterations would not."""
    for rec in among_lines(stdout, "result", metric="triad", stat="avg"):
        return rec["value"] * 1e6
    raise CrosstalkError("vcluster: xt-stream printed no average Triad")


def triad_argv(exe, seconds=2):
    return [str(exe), "--size", TRIAD_ARRAY, "--duration", str(seconds), "--threads", "1", "--no-samples"]


def measure_core():
    """One core of this host: Triad (B/s) and DGEMM (flop/s)."""
    with tempfile.TemporaryDirectory(prefix="xt-balance-") as tmp:
        exe = build_triad(tmp)
        out = subprocess.run(triad_argv(exe), capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise CrosstalkError(f"vcluster: xt-stream failed: {out.stderr.strip()[-300:]}")
        triad = triad_of(out.stdout)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _DGEMM], capture_output=True, text=True, timeout=120, env=env)
    flops = float(out.stdout.strip()) * 1e9 if out.returncode == 0 and re.match(r"^[0-9.]+$", out.stdout.strip()) \
        else None
    return {"triad_Bps": triad, "dgemm_flops": flops}


def plan(target, link_bps, core):
    """The CPU share per node (fraction of one core) that gives ``target['network_to_memory']``
    with links at ``link_bps``, assuming Triad scales with the share (checked by measuring), and why
    it falls short of the target if it must (None): below MIN_SHARE it is held there."""
    ratio = target.get("network_to_memory")
    if not ratio:
        raise CrosstalkError(f"vcluster: machine {target['id']}: no network-to-memory ratio (the paper "
                             "gives no injection or memory bandwidth)")
    share = (link_bps / 8) / (ratio * core["triad_Bps"])
    if share > 1:
        raise CrosstalkError(f"vcluster: {target['id']} needs {share:.2f} cores per node at this link rate "
                             f"({link_bps / 1e6:g} Mbit/s): lower vcluster_link_rate")
    if share < MIN_SHARE:
        return MIN_SHARE, floor_note(share)
    return round(share, 4), None


def floor_note(share):
    return (f"the share is held at its floor, {MIN_SHARE:.0%} of a core ({share:.2%} wanted): this host's "
            f"ratio stops short of the target")


class Balance:
    """The machine-balance part of a VCluster (``self.like``: a machine id of machines/, or None)."""

    @property
    def balance_file(self):
        """The plan and what was measured (outside the state dir: ``down`` keeps the measurement)."""
        return self.state.parent / f"{self.name}.balance.json"

    def balance(self):
        """{'like', 'target', 'share', 'core', 'measured', 'achieved'} or None without ``like``."""
        if not self.like:
            return None
        try:
            found = json.loads(self.balance_file.read_text())
        except (OSError, ValueError):
            return None
        same = (found.get("like"), found.get("link_bps"), found.get("calibration")) == \
            (self.like, self.link_rate, CALIBRATION_METHOD)
        return found if same else None

    @property
    def cpu_share(self):
        found = self.balance()
        return found["share"] if found else None

    def fabric_target(self):
        """The machine's fabric balance (topology kind, global:injection), or None."""
        if not self.like:
            return None
        from crosstalk.site.machines import load, ratios
        return ratios(load(self.like))["fabric"]

    def _plan_balance(self):
        """Measure this host's core once and plan the share (kept while the target and rate stay).
        A machine that gives only a fabric balance gets no share: its switch links carry it."""
        if not self.like or self.balance():
            return
        from crosstalk.site.machines import load, ratios
        target = {"id": self.like, **ratios(load(self.like))}
        found = {"like": self.like, "target": target, "link_bps": self.link_rate, "share": None,
                 "calibration": CALIBRATION_METHOD}
        if target["network_to_memory"]:
            found["core"] = measure_core()
            found["share"], found["limited"] = plan(target, self.link_rate, found["core"])
        self.balance_file.write_text(json.dumps(found, indent=1))

    @property
    def node_groups(self):
        """Whether each node runs in a CPU cgroup of its own (where the host allows it; a machine
        balance needs it for its quota)."""
        return bool(self.cpu_share) or cpu_groups_available()

    def _join_prefix(self, node):
        return join_prefix(CpuShares(self.name).procs(node)) if self.node_groups else []

    def _join_line(self, node_var):
        """Shell line for the launch scripts: join the node's cgroup (``node_var``: its name)."""
        if not self.node_groups:
            return ""
        return f'echo $$ > "{CpuShares(self.name).base}/{node_var}/cgroup.procs" || exit 255\n'

    def _apply_balance(self):
        if self.node_groups:
            CpuShares(self.name).apply(self.nodes, self.cpu_share)

    def _remove_balance(self):
        found = cgroup_cpu_root()
        if found and (found[1] / f"crosstalk-{self.name}").exists():
            CpuShares(self.name).remove()

    def _measure_balance(self):
        """Triad inside the last node under its quota and its link (iperf3 to n1): the balance achieved.
        Triad does not shrink exactly with the quota (0.76x the share's fraction with one 100 ms
        period, 0.98x with thin slices, measured here), so the share is corrected from the
        measurement until the ratio is within 10 %."""
        found = self.balance()
        if not found or not found["share"] or found.get("measured") or len(self.nodes) < 2:
            return
        exe = build_triad(self.shared_dir)
        wanted = found["target"]["network_to_memory"]
        for step in range(CALIBRATION_STEPS):
            out = self.exec(self.nodes[-1], triad_argv(exe), capture_output=True, text=True, timeout=120, cwd="/")
            if out.returncode != 0:
                raise CrosstalkError(f"vcluster {self.name}: xt-stream failed: {out.stderr.strip()[-300:]}")
            triad = triad_of(out.stdout)
            link = iperf_flows(self, [(self.nodes[-1], self.nodes[0])], seconds=2)[0]
            ratio = link / 8 / triad
            if abs(ratio / wanted - 1) <= CALIBRATION_TOLERANCE or step == CALIBRATION_STEPS - 1:
                break           # the last measurement is of the share in effect
            wanted_share = found["share"] * ratio / wanted
            if wanted_share < MIN_SHARE and found["share"] == MIN_SHARE:
                found["limited"] = floor_note(wanted_share)
                break           # the network's own CPU work is under the quota too: no lower share helps
            found["share"] = round(min(1.0, max(MIN_SHARE, wanted_share)), 4)
            self.balance_file.write_text(json.dumps(found, indent=1))
            self._apply_balance()
        if abs(ratio / wanted - 1) <= CALIBRATION_TOLERANCE:
            found["limited"] = None
        elif not found.get("limited"):
            found["limited"] = f"calibration ended {ratio / wanted - 1:+.0%} from the target"
        flops = found["core"]["dgemm_flops"] * found["share"] if found["core"].get("dgemm_flops") else None
        found["measured"] = {"node_triad_Bps": triad, "link_bps": link}
        found["achieved"] = {"network_to_memory": ratio,
                             "network_to_compute": link / 8 / flops if flops else None}
        self.balance_file.write_text(json.dumps(found, indent=1))
