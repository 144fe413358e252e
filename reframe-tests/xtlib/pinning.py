"""Bind each rank of the measured step to a given core (Narayanaswamy 2008 Ch. 3).

``pin_ranks(cores)``: local rank i of every node runs on core ``cores[i]``. The launcher's own
binding is switched off (mpirun ``--bind-to none``, srun ``--cpu-bind=none``) and each rank execs
through ``taskset -c CORE``, choosing its core from its node-local rank (Open MPI's
``OMPI_COMM_WORLD_LOCAL_RANK``, Hydra's ``MPI_LOCALRANKID``, Slurm's ``SLURM_LOCALID``), so the
same mapping works under both launchers. Each rank then logs the CPUs it is really allowed on
(``/proc/self/status``) to stderr
and ``pinned_as_asked`` (sanity) checks them against the mapping.

``place(policy)``: ``compact`` fills a node before the next (ranks 0,1 on the first node),
``scatter`` deals ranks round-robin over the nodes (mpirun ``--map-by slot|node``, srun
``--distribution=block|cyclic``).
"""
import os
import re
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before

from crosstalk.skips import platform_reason
from xtlib.placement import rank_options

#: Fixed script (the core list is an argument, never part of the script text).
PIN_SCRIPT = (
    'map=$1; shift; '
    'r=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}; '
    'core=$(echo "$map" | cut -d, -f$((r + 1))); '
    'if [ -z "$core" ]; then echo "xt-pin: no core for local rank $r in $map" >&2; exit 2; fi; '
    'exec taskset -c "$core" sh -c '
    '\'echo "xt-pin host=$(hostname) local_rank=$1 core=$2 allowed=$(grep Cpus_allowed_list '
    '/proc/self/status | cut -f2) rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-?}}}" >&2; '
    'shift 2; exec "$@"\' xt-pin "$r" "$core" "$@"')
_LINE = re.compile(r"^xt-pin host=(\S+) local_rank=(\d+) core=(\d+) allowed=(\S+) rank=(\S+)$")


class Pinning(rfm.RegressionTestPlugin):
    def pin_ranks(self, cores):
        """Local rank i on every node runs on core ``cores[i]`` (ints)."""
        self._pin_cores = [int(c) for c in cores]
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
            argv = ["-c", PIN_SCRIPT, "xt-pin", ",".join(map(str, self._pin_cores)), str(self.executable),
                    *map(str, self.executable_opts)]
            self.executable_opts = [shlex.quote(w) for w in argv]
            self.executable = "sh"

    @sn.deferrable
    def pinned_as_asked(self, ranks):
        """Sanity: ``ranks`` ranks each reported running on exactly its mapped core."""
        if not hasattr(self, "_pin_cores"):
            return True
        lines = []
        with open(os.path.join(self.stagedir, self.job.stderr)) as fp:
            lines = [m for m in (_LINE.match(line.strip()) for line in fp) if m]
        if len(lines) != ranks:
            raise sn.SanityError(f"{len(lines)} of {ranks} ranks reported their binding (xt-pin)")
        for m in lines:
            want = self._pin_cores[int(m[2])]
            if m[4] != str(want) or int(m[3]) != want:
                raise sn.SanityError(f"{m[1]} local rank {m[2]} allowed on CPUs {m[4]}, mapped to {want}")
        return True

    def pin_records(self):
        """``[(host, local_rank, core, rank)]`` as the ranks reported them (after the run)."""
        return parse_pin_lines(os.path.join(self.stagedir, self.job.stderr))


def parse_pin_lines(path):
    """``[(host, local_rank, core, allowed, rank)]`` from a job's stderr (xt-pin lines)."""
    with open(path) as fp:
        return [(m[1], int(m[2]), int(m[3]), m[4], m[5]) for m in (_LINE.match(line.strip()) for line in fp)
                if m]
