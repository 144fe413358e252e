"""STREAM Triad memory bandwidth (spec: experiments/stream.yaml)."""
import os

import reframe as rfm
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.records import all_validations_pass, result_value

SPEC = load_spec("stream")


@rfm.simple_test
class StreamTriad(XtExperiment, rfm.RunOnlyRegressionTest):
    spec_name = "stream"
    threads = parameter(SPEC.parameter("threads"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+openmp"]
    num_tasks = 1

    @run_after("setup")
    def configure(self):
        self.skip_if(self.threads > self.current_partition.processor.num_cpus,
                     f"{self.threads} threads > {self.current_partition.processor.num_cpus} cores")
        self.executable = os.path.join(self.bench.bin_dir, "xt-stream")
        self.executable_opts = ["--threads", str(self.threads), "--ntimes", str(self.setting("ntimes", 10))]
        if self.setting("array_bytes"):
            self.executable_opts += ["--size", str(self.setting("array_bytes"))]
        self.num_cpus_per_task = self.threads
        self.env_vars["OMP_NUM_THREADS"] = str(self.threads)
        self.env_vars["OMP_PROC_BIND"] = "spread"
        if self.current_partition.launcher_type.registered_name == "mpirun":
            self.job.launcher.options = ["--bind-to", "none"]

    @sanity_function
    def validates(self):
        return all_validations_pass(self.stdout)

    @performance_function("MB/s")
    def triad_bw(self):
        return result_value(self.stdout, "triad", "best")

    @performance_function("MB/s")
    def copy_bw(self):
        return result_value(self.stdout, "copy", "best")
