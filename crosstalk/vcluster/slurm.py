"""Slurm on the virtual cluster: munged in the root namespace, slurmctld on the first node, one
slurmd per node, and the slurm.conf and mpi.conf they read."""
import os
import subprocess
import time

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.procs import TOOL_TIMEOUT, run_tool, write_if_changed


class SlurmDaemons:
    """The Slurm part of a VCluster."""

    @property
    def slurm_conf(self):
        return self.state / "slurm.conf"

    def _daemon_pid(self, what):
        return self._verified(self._pidfile(what), what)

    def _slurmd_pid(self, node):
        return self._verified(self.state / "run" / f"slurmd-{node}.pid", "slurmd", node)

    def _slurmctld_pid(self):
        return self._verified(self.state / "run" / "slurmctld.pid", "slurmctld", self.nodes[0])

    def _start_munged(self):
        pidfile = self._pidfile("munged")
        sock = self.state / "munge" / "munge.socket"
        run_tool(["munged", "--force", f"--socket={sock}", f"--pid-file={pidfile}",
                  f"--log-file={self.state / 'log' / 'munged.log'}",
                  f"--seed-file={self.state / 'munge' / 'munged.seed'}"])
        self._wait_pidfile(pidfile, "munged")

    def _start_slurm_daemon(self, node, argv, pidfile):
        # the daemons fork into the background and write their own PID files
        # slurmctld is the cluster's controller, not the node's work: outside the node's CPU quota
        out = subprocess.run(self._enter(node, argv, wd="/", quota=argv[0] != "slurmctld"),
                             capture_output=True, text=True,
                             env={**os.environ, **self.env()}, timeout=TOOL_TIMEOUT)
        if out.returncode != 0:
            raise CrosstalkError(f"vcluster {self.name}: {argv[0]} on {node} failed: "
                                 f"{out.stderr.strip()[-300:]}")
        if pidfile:
            self._wait_pidfile(pidfile, f"{argv[0]} on {node}")

    def _start_slurm(self, changes, conf_changed):
        """Start what is not running of munged, slurmctld and the slurmds; appends to ``changes``."""
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
                self._start_slurm_daemon(n, ["slurmd", "-f", str(self.slurm_conf), "-N", n], None)
                started.append(n)
        for n in started:
            self._wait_pidfile(self.state / "run" / f"slurmd-{n}.pid", f"slurmd on {n}")
            changes.append(f"slurmd {n}")
        if conf_changed and "slurmctld" not in changes:
            # running daemons read a changed slurm.conf or mpi.conf only when told to
            self.exec(self.nodes[0], ["scontrol", "reconfigure"], capture_output=True, cwd="/",
                      timeout=TOOL_TIMEOUT)
            changes.append("slurm configuration")
        self._wait_slurm_ready()

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

    def _write_slurm_files(self):
        """slurm.conf and mpi.conf; True if either changed."""
        st, s = self.state, self.slurm
        first = self.nodes[0]
        nodes = "".join(
            f"NodeName={n} NodeAddr={self.addresses[n]} CPUs={s['cpus_per_node']} "
            f"RealMemory={s['real_memory_mb']} State=UNKNOWN\n" for n in self.nodes)
        changed = write_if_changed(self.slurm_conf, f"""# Generated by crosstalk.vcluster for cluster {self.name}
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
        changed |= write_if_changed(st / "mpi.conf", "# Generated by crosstalk.vcluster\n"
                                    "PMIxCollFence=ring\n")
        for n in self.nodes:
            (st / "slurmd" / n).mkdir(parents=True, exist_ok=True)
        return changed
