"""E7 core asymmetry and mapping (spec: experiments/core-mapping.yaml).

CoreBandwidth: two ranks on two nodes, both pinned to core ``core`` (Fig 3.1).
CoreMappingLammps: LAMMPS on two nodes, ranks placed compact/scatter and bound in identity or
swapped core order (Table 3.2's mappings reduced to what two nodes of two cores allow).
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
from xtlib.pinning import Pinning
from xtlib.placement import allocate_nodes, partition_nodes
from xtlib.records import result_value, tool_value

SPEC = load_spec("core-mapping")


def _bytes(size):
    size = str(size).upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
    return int(float(size.rstrip("KMG")) * mult)


class _TwoNodes(XtExperiment, Pinning, rfm.RunOnlyRegressionTest):
    spec_name = "core-mapping"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    def spread(self, ranks):
        """``ranks`` ranks over the spec's node count (one node where that is all there is)."""
        nodes = partition_nodes(self, self.setting("nodes"))
        self.num_tasks = ranks
        self.num_tasks_per_node = max(1, ranks // nodes)
        allocate_nodes(self, nodes)
        return nodes


@rfm.simple_test
class CoreBandwidth(_TwoNodes):
    core = parameter(SPEC.parameter("core"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")

    @run_after("setup")
    def configure(self):
        nodes = self.spread(2)
        if nodes < 2:
            # One node: both ranks on one core would measure the scheduler, not the network.
            self.skip_if(True, platform_reason(f"{self.current_partition.fullname} has one node; the per-core "
                                               f"bandwidth needs the two ranks on two nodes"))
        self.executable = os.path.join(self.bench.bin_dir, "xt-impactb")
        self.executable_opts = ["--msg-size", str(self.setting("bw_msg_size")), "--interval", "0",
                                "--count", str(self.setting("bw_count")), "--no-samples"]
        self.place("scatter", nodes)
        self.pin_ranks([self.core])     # local rank 0 of each node (its only rank) on core c

    @sanity_function
    def measured(self):
        return sn.all([sn.assert_gt(self.half_rtt(), 0), self.pinned_as_asked(2)])

    def half_rtt(self):
        return result_value(self.stdout, "half_rtt", "median")

    @performance_function("Gbit/s")
    def bandwidth(self):
        return _bytes(self.setting("bw_msg_size")) * 8 / (self.half_rtt() * 1e3)


@rfm.simple_test
class CoreMappingLammps(_TwoNodes):
    mapping = parameter(SPEC.parameter("mapping"))
    repeat = parameter(range(SPEC.repeats()))
    sourcesdir = INPUTS

    @run_after("setup")
    def configure(self):
        _, why = installed_app(self, "lmp")
        self.skip_if(why is not None, f"LAMMPS: {why}")
        placement, _, order = self.mapping.partition("_")
        key = "cores_swapped" if order == "swapped" else "cores_identity"
        cores = [int(c) for c in str(self.setting(key)).split(",")]
        nodes = partition_nodes(self, self.setting("nodes"))
        # as many ranks per node as the mapping names cores (one node: fewer ranks in all)
        per_node = min(int(self.setting("lammps_ranks")) // nodes, len(cores))
        self.ranks = per_node * nodes
        nodes = self.spread(self.ranks)
        self.executable = "lmp"
        self.executable_opts = lammps_args(self.setting("lammps_box"), self.setting("lammps_steps"),
                                           screen=False)
        self.place(placement, nodes)
        self.pin_ranks(cores[:per_node])

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
