"""E1 NiMC STREAM: Triad alone and under injected writes (spec: experiments/nimc-stream.yaml)."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, performance_function, run_after,
                                   sanity_function, variable)

from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.launch import ShellVar, allocate_nodes
from xtlib.load import BackgroundLoad
from xtlib.records import all_validations_pass, result_value

SPEC = load_spec("nimc-stream")


@rfm.simple_test
class NimcStream(XtExperiment, BackgroundLoad, rfm.RunOnlyRegressionTest):
    spec_name = "nimc-stream"
    injection = parameter(SPEC.parameter("injection"))
    cores = parameter(SPEC.parameter("cores"))
    repeat = parameter(range(SPEC.repeats()))
    #: The injector that ran (recorded in the run report).
    load_instrument = variable(str, value="none")
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+openmp"]
    num_tasks = 1

    @run_after("setup")
    def configure(self):
        ncores = self.current_partition.processor.num_cpus
        threads = ncores if self.cores == "all" else ncores - 1
        self.skip_if(threads < 1, f"cannot reserve a core on a {ncores}-core node")
        self.executable = os.path.join(self.bench.bin_dir, "xt-stream")
        self.executable_opts = ["--threads", str(threads), "--ntimes", str(self.setting("ntimes", 10))]
        if self.setting("array_bytes"):
            self.executable_opts += ["--size", str(self.setting("array_bytes"))]
        self.env_vars["OMP_NUM_THREADS"] = str(threads)
        self.num_cpus_per_task = threads
        if self.current_partition.launcher_type.registered_name == "mpirun":
            self.job.launcher.options = ["--bind-to", "none"]
        if self.injection != "off":
            self.add_injector()

    def add_injector(self):
        extras = self.current_partition.extras
        multinode = extras.get("nodes", 1) > 1
        if extras.get("capabilities", {}).get("rdma") and extras.get("rdma_devices") and multinode \
                and self.current_partition.launcher_type.registered_name == "srun":
            self.add_rdma_writer(extras["rdma_devices"][0])
        else:
            self.add_mpi_put_injector(multinode)

    def add_rdma_writer(self, device):
        """Groves' method: ib_write_bw 64 KiB writes into this node, run infinitely (perftest)."""
        size = str(self.setting("msg_size", "64K")).replace("K", "") + "K"
        common = ["ib_write_bw", "-d", device, "-s", size, "--run_infinitely"]
        if self.injection != "max":
            common += ["--rate_limit", self.injection, "--rate_units", "M", "--rate_limit_type", "SW"]
        allocate_nodes(self, 2)
        self.prerun_cmds += ["stream_host=$(hostname)"]
        self.add_load("rdma_server", common, tasks=1, nodes=1, warmup_s=1, reports=False)
        self.add_load("rdma_client", common + [ShellVar("stream_host")], tasks=1, nodes=1,
                      relative_node=1, warmup_s=self.setting("warmup_s", 1), reports=False)
        self.load_instrument = "ib_write_bw"

    def add_mpi_put_injector(self, multinode):
        rate = 0 if self.injection == "max" else self.injection
        argv = [os.path.join(self.bench.bin_dir, "xt-inject"), "--target", "0",
                "--msg-size", self.setting("msg_size", "64K"), "--rate", rate, "--duration", 3600]
        # Rank 0 (the window) shares the first node with STREAM; the origin is on the next node.
        nodes = 2 if multinode else 1
        allocate_nodes(self, nodes)
        self.add_load("inject", argv, tasks=2, nodes=nodes, warmup_s=self.setting("warmup_s", 1))
        self.load_instrument = "xt-inject"

    @sanity_function
    def validates(self):
        return sn.all([all_validations_pass(self.stdout), self.loads_ran_throughout()])

    @run_after("setup")
    def choose_perf_variables(self):
        # ib_write_bw's rate is in its own output format; ours comes from xt-inject's report.
        if self.injection == "off" or self.load_instrument != "xt-inject":
            self.perf_variables = {"triad_bw": self.triad_bw()}

    @performance_function("MB/s")
    def triad_bw(self):
        return result_value(self.stdout, "triad", "best")

    @performance_function("MB/s")
    def injected_bw(self):
        return result_value("inject.load.out", "total_rate", "sum")
