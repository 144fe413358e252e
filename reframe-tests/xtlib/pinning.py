"""Bind each rank of the measured step to a given core (Narayanaswamy 2008 Ch. 3).

``pin_ranks(cores)``: local rank i of every node runs on core ``cores[i]``;
``pin_ranks(cores, by="rank")``: rank r of the job runs on core ``cores[r]`` (a mapping whose
nodes differ, as Table 3.2's: :func:`round_robin_cores`). The launcher's own binding is switched
off (mpirun ``--bind-to none``, srun ``--cpu-bind=none``) and each rank execs through ``taskset -c
CORE``, choosing its core from its node-local rank (Open MPI's ``OMPI_COMM_WORLD_LOCAL_RANK``,
Hydra's ``MPI_LOCALRANKID``, Slurm's ``SLURM_LOCALID``) or its rank (``OMPI_COMM_WORLD_RANK``,
``PMI_RANK``, ``SLURM_PROCID``), so the same mapping works under both launchers. Each rank then
logs the CPUs it is really allowed on (``/proc/self/status``) to stderr and ``pinned_as_asked``
(sanity) checks them against the mapping.

``place(policy)``: ``compact`` fills a node before the next (ranks 0,1 on the first node),
``scatter`` deals ranks round-robin over the nodes (mpirun ``--map-by slot|node``, srun
``--distribution=block|cyclic``).

A core may also be named by its role (:func:`role_core`): ``irq``, the core that takes the NIC's
interrupts, and ``irq_sibling``, another core of its socket, from the inventory's
``network.interrupt_core``.
"""
import os
import re
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before

from crosstalk.skips import platform_reason
from xtlib.placement import partition_nodes, rank_options

#: Fixed script (the core list is an argument, never part of the script text): ``sh -c SCRIPT
#: xt-pin local|rank CORES PROGRAM ARGS...``.
PIN_SCRIPT = (
    'by=$1; map=$2; shift 2; '
    'l=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}; '
    'g=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}; '
    'if [ "$by" = rank ]; then r=$g; else r=$l; fi; '
    'if [ -z "$r" ]; then echo "xt-pin: the launcher set no $by number" >&2; exit 2; fi; '
    'core=$(echo "$map" | cut -d, -f$((r + 1))); '
    'if [ -z "$core" ]; then echo "xt-pin: no core for $by $r in $map" >&2; exit 2; fi; '
    'exec taskset -c "$core" sh -c '
    '\'echo "xt-pin host=$(hostname) local_rank=$1 core=$2 allowed=$(grep Cpus_allowed_list '
    '/proc/self/status | cut -f2) rank=$3" >&2; '
    'shift 3; exec "$@"\' xt-pin "$l" "$core" "${g:-?}" "$@"')
_LINE = re.compile(r"^xt-pin host=(\S+) local_rank=(\d+) core=(\d+) allowed=(\S+) rank=(\S+)$")


class Pinning(rfm.RegressionTestPlugin):
    def pin_ranks(self, cores, by="local"):
        """Local rank i on every node (``by="local"``), or rank i of the job (``by="rank"``), runs
        on core ``cores[i]`` (ints)."""
        if by not in ("local", "rank"):
            raise ValueError(f"pin ranks by local or rank, not {by!r}")
        self._pin_cores, self._pin_by = [int(c) for c in cores], by
        ncpu = self.current_partition.processor.num_cpus or 0
        self.skip_if(ncpu and max(self._pin_cores) >= ncpu,
                     platform_reason(f"core {max(self._pin_cores)} does not exist ({ncpu} cores per node)"))

    def place(self, policy, nodes=None):
        """``compact`` or ``scatter`` placement of ranks over the job's first ``nodes`` nodes
        (mpirun: ``--max-vm-size``; a Slurm job gets its node count from the test)."""
        if policy not in ("compact", "scatter"):
            raise ValueError(f"placement must be compact or scatter, not {policy!r}")
        self._placement = policy
        self._place_nodes = nodes

    @run_before("run")
    def apply_pinning(self):
        placement = getattr(self, "_placement", None)
        spread = {"scatter": "node", "compact": "fill"}.get(placement)
        self.job.launcher.options += rank_options(self, spread, nodes=placement and getattr(self, "_place_nodes", None),
                                                  unbound=hasattr(self, "_pin_cores"))
        if hasattr(self, "_pin_cores"):
            # ReFrame writes executable_opts into the job script as they are: quote every word.
            argv = ["-c", PIN_SCRIPT, "xt-pin", getattr(self, "_pin_by", "local"),
                    ",".join(map(str, self._pin_cores)), str(self.executable),
                    *map(str, self.executable_opts)]
            self.executable_opts = [shlex.quote(w) for w in argv]
            self.executable = "sh"

    @sn.deferrable
    def pinned_as_asked(self, ranks):
        """Sanity: ``ranks`` ranks each reported running on exactly its mapped core (and, pinned by
        rank over scattered nodes, each on the node round robin deals it)."""
        if not hasattr(self, "_pin_cores"):
            return True
        lines = parse_pin_lines(os.path.join(self.stagedir, self.job.stderr))
        if len(lines) != ranks:
            raise sn.SanityError(f"{len(lines)} of {ranks} ranks reported their binding (xt-pin)")
        by_rank = getattr(self, "_pin_by", "local") == "rank"
        for host, local, core, allowed, rank in lines:
            want = self._pin_cores[int(rank) if by_rank else local]
            if allowed != str(want) or core != want:
                raise sn.SanityError(f"{host} local rank {local} allowed on CPUs {allowed}, mapped to {want}")
        if by_rank and getattr(self, "_placement", None) == "scatter":
            wrong = round_robin_errors([(int(rank), host) for host, _, _, _, rank in lines],
                                       self._place_nodes or partition_nodes(self))
            if wrong:
                raise sn.SanityError(f"ranks not dealt round robin over the nodes: {wrong}")
        return True

    def pin_records(self):
        """``[(host, local_rank, core, rank)]`` as the ranks reported them (after the run)."""
        return parse_pin_lines(os.path.join(self.stagedir, self.job.stderr))


def parse_pin_lines(path):
    """``[(host, local_rank, core, allowed, rank)]`` from a job's stderr (xt-pin lines)."""
    with open(path) as fp:
        return [(m[1], int(m[2]), int(m[3]), m[4], m[5]) for m in (_LINE.match(line.strip()) for line in fp)
                if m]


def round_robin_errors(rank_hosts, nodes):
    """What contradicts ranks dealt round robin over ``nodes`` nodes (rank r on the (r % nodes)-th
    node) in ``[(rank, host)]``: "" where nothing does."""
    by_slot = {}
    for rank, host in rank_hosts:
        by_slot.setdefault(rank % nodes, set()).add(host)
    hosts = [h for slot in sorted(by_slot) for h in sorted(by_slot[slot])]
    if any(len(h) > 1 for h in by_slot.values()) or len(set(hosts)) != len(hosts):
        return ", ".join(f"ranks = {slot} mod {nodes} on {sorted(h)}" for slot, h in sorted(by_slot.items()))
    return ""


def node_cores(text):
    """A mapping setting's per-node core lists: ``"1,0,2,3/0,1,2,3"`` -> ``[[1, 0, 2, 3], [0, 1, 2,
    3]]``; node k's list gives the core of each of its ranks in rank order. ValueError unless every
    node has as many ranks, each on its own core."""
    nodes = [[int(c) for c in part.split(",")] for part in str(text).split("/")]
    if len({len(cores) for cores in nodes}) != 1 or any(len(set(c)) != len(c) for c in nodes):
        raise ValueError(f"{text!r}: every node needs as many ranks, each on its own core")
    return nodes


def round_robin_cores(nodes):
    """The core of each rank of the job when its ranks are dealt round robin over the nodes (rank r
    on node r % N, that node's (r // N)-th rank): Table 3.2's placement (even ranks on machine 1,
    odd on machine 2). ``nodes``: :func:`node_cores`."""
    n = len(nodes)
    return [nodes[r % n][r // n] for r in range(n * len(nodes[0]))]


def rank_table(nodes):
    """``{(machine, core): rank}`` of a mapping, as Table 3.2 prints it (machines from 1)."""
    return {(r % len(nodes) + 1, core): r for r, core in enumerate(round_robin_cores(nodes))}


#: Core roles a core parameter may name instead of a number (Narayanaswamy 2008 §3.2.1).
ROLES = ("irq", "irq_sibling")


def role_core(value, interrupt_core):
    """``(core, None)`` for a core parameter: a core number, or a role of :data:`ROLES` resolved
    from the inventory's ``network.interrupt_core`` (``{core, socket_cores}``); ``(None, why)``
    where the inventory does not say."""
    if value not in ROLES:
        return int(value), None
    if not interrupt_core:
        return None, "the inventory names no interrupt core (network.interrupt_core)"
    irq = int(interrupt_core["core"])
    if value == "irq":
        return irq, None
    others = [int(c) for c in interrupt_core["socket_cores"] if int(c) != irq]
    return (others[0], None) if others else (None, f"core {irq}'s socket has no other core in the inventory")
