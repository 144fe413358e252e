"""E3 RMA-MT: multithreaded MPI one-sided sweep (spec: experiments/rma-mt.yaml)."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.launch import mpirun_options
from xtlib.records import all_validations_pass, records

SPEC = load_spec("rma-mt")


@rfm.simple_test
class RmaMt(XtExperiment, rfm.RunOnlyRegressionTest):
    spec_name = "rma-mt"
    op = parameter(SPEC.parameter("op"))
    sync = parameter(SPEC.parameter("sync"))
    threads = parameter(SPEC.parameter("threads"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    num_tasks = 2
    num_tasks_per_node = 1

    @run_after("setup")
    def configure(self):
        cores = self.current_partition.processor.num_cpus
        self.skip_if(self.threads > cores, f"{self.threads} threads > {cores} cores")
        if self.current_partition.extras.get("nodes", 1) < 2:
            self.num_tasks_per_node = 2   # one node: origin and target share it
        self.executable = os.path.join(self.bench.bin_dir, "xt-rmamt")
        self.executable_opts = [
            "--op", self.op, "--sync", self.sync, "--threads", str(self.threads), "--mode", "both",
            "--min-size", str(self.setting("min_size", 8)), "--max-size", str(self.setting("max_size", "64K")),
            "--iterations", str(self.setting("iterations", 20)), "--timeout", str(self.setting("timeout_s", 60))]
        self.env_vars.update(self.current_partition.extras.get("rma_mt_env", {}))
        if self.current_partition.launcher_type.registered_name == "mpirun":
            # Open MPI forwards only OMPI_* to remote ranks; UCX settings must be exported by name.
            self.job.launcher.options = mpirun_options(
                self, export=[name for name in self.env_vars if name.startswith("UCX_")])

    def _result(self, metric, stat, size):
        found = records(self.stdout, "result", metric=metric, stat=stat, size=size)
        return sn.getitem(sn.getitem(found, 0), "value")

    @sanity_function
    def checksums_match(self):
        # A timeout or a checksum mismatch is a failed run (recorded, with the kernel's reason).
        return all_validations_pass(self.stdout)

    def _sizes(self):
        sizes = [r["size"] for r in records(self.stdout, "result", metric="bandwidth").evaluate()]
        return min(sizes), max(sizes)

    @performance_function("MiB/s")
    def bandwidth(self):
        return self._result("bandwidth", "avg", self._sizes()[1])

    @performance_function("msgs/s")
    def message_rate(self):
        return self._result("message_rate", "avg", self._sizes()[0])

    @performance_function("us")
    def latency(self):
        return self._result("latency", "median", self._sizes()[0])
