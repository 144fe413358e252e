"""E7 core asymmetry and mapping (spec: experiments/core-mapping.yaml).

CoreStreamBandwidth: two ranks on two nodes, both pinned to core ``core`` (a number, or a role:
the interrupt core or the other core of its socket), streaming bandwidth (Fig 3.1). It replaces
CoreBandwidth, a ping-pong: rows of that name in older runs are not this measurement.
CoreMappingLammps: LAMMPS on two nodes, ranks dealt round robin and pinned as Table 3.2's
mappings A, A', B, B' say (reduced to the profile's cores in the spec).
"""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from xtlib.apps import installed_app
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.lammps import INPUTS, lammps_args
from xtlib.pinning import Pinning, node_cores, role_core, round_robin_cores
from xtlib.placement import allocate_nodes, partition_nodes
from xtlib.records import result_value, tool_value

SPEC = load_spec("core-mapping")


class _TwoNodes(XtExperiment, Pinning, rfm.RunOnlyRegressionTest):
    spec_name = "core-mapping"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    def spread(self, ranks, why):
        """``ranks`` ranks dealt round robin over the spec's two nodes; skipped (``why``) where the
        partition has one."""
        nodes = partition_nodes(self, self.setting("nodes"))
        self.skip_if(nodes < 2, platform_reason(f"{self.current_partition.fullname} has one node; {why}"))
        self.num_tasks = ranks
        self.num_tasks_per_node = max(1, ranks // nodes)
        allocate_nodes(self, nodes)
        self.place("scatter", nodes)
        return nodes

    def interrupt_core(self):
        return self.current_partition.extras.get("interrupt_core")


@rfm.simple_test
class CoreStreamBandwidth(_TwoNodes):
    core = parameter(SPEC.parameter("core"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")

    @run_after("setup")
    def configure(self):
        # one node: both ranks on one core would measure the scheduler, not the network
        self.spread(2, "the per-core bandwidth needs the two ranks on two nodes")
        core, why = role_core(self.core, self.interrupt_core())
        if core is None:
            if self.current_partition.extras.get("fabric") == "veth":
                why += "; a veth raises no NIC interrupts"
            self.skip(platform_reason(why))
        self.executable = os.path.join(self.bench.bin_dir, "xt-impactb")
        self.executable_opts = ["--msg-size", str(self.setting("bw_msg_size")), "--interval", "0",
                                "--window", str(self.setting("bw_window")),
                                "--count", str(self.setting("bw_count")), "--no-samples"]
        self.pin_ranks([core])     # local rank 0 of each node (its only rank) on that core

    def _mbps(self):
        return result_value(self.stdout, "bandwidth", "avg")

    @sanity_function
    def measured(self):
        # every message of every window arrived whole (the receiver's count)
        messages = result_value(self.stdout, "messages", "sum")
        want = int(self.setting("bw_window")) * int(self.setting("bw_count"))
        return sn.all([sn.assert_gt(self._mbps(), 0), sn.assert_eq(messages, want), self.pinned_as_asked(2)])

    @performance_function("Gbit/s")
    def bandwidth(self):
        return self._mbps() * 8e6 / 1e9


@rfm.simple_test
class CoreMappingLammps(_TwoNodes):
    mapping = parameter(SPEC.parameter("mapping"))
    repeat = parameter(range(SPEC.repeats()))
    sourcesdir = INPUTS

    @run_after("setup")
    def configure(self):
        _, why = installed_app(self, "lmp")
        self.skip_if(why is not None, f"LAMMPS: {why}")
        irq = self.interrupt_core()
        # Table 3.2 swaps which ranks sit on core 0, the thesis's interrupt core
        self.skip_if(irq is not None and int(irq["core"]) != 0,
                     platform_reason(f"Table 3.2's mappings move ranks on and off core 0, the thesis's "
                                     f"interrupt core; this platform's is core {irq and irq['core']}"))
        nodes = node_cores(self.setting(f"cores_{self.mapping.lower()}"))
        cores = round_robin_cores(nodes)
        self.ranks = len(cores)
        self.spread(self.ranks, "Table 3.2's mappings span two machines")
        self.executable = "lmp"
        self.executable_opts = lammps_args(self.setting("lammps_box"), self.setting("lammps_steps"),
                                           screen=False)
        self.pin_ranks(cores, by="rank")

    def _log(self):
        return os.path.join(self.stagedir, "log.lammps")

    @sanity_function
    def finished(self):
        return sn.all([sn.assert_gt(self.time_s(), 0), self.pinned_as_asked(self.ranks)])

    @performance_function("s")
    def time_s(self):
        return tool_value("lammps", self._log(), "loop_time")

    @performance_function("s")
    def comm_s(self):
        return tool_value("lammps", self._log(), "comm_time", "avg")
