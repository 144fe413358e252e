"""E1 NiMC STREAM: Triad alone and under injected writes (spec: experiments/nimc-stream.yaml)."""
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.injection import Injection
from xtlib.records import all_validations_pass
from xtlib.streamstep import StreamStep

SPEC = load_spec("nimc-stream")


@rfm.simple_test
class NimcStream(XtExperiment, Injection, StreamStep, rfm.RunOnlyRegressionTest):
    spec_name = "nimc-stream"
    injection = parameter(SPEC.parameter("injection"))
    cores = parameter(SPEC.parameter("cores"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+openmp"]
    num_tasks = 1

    @run_after("setup")
    def configure(self):
        ncores = self.current_partition.processor.num_cpus
        threads = ncores if self.cores == "all" else ncores - 1
        self.skip_if(threads < 1, platform_reason(f"cannot reserve a core on a {ncores}-core node"))
        if self.injection != "off":
            # Triad alone and under injection in each round of the job (order alternating): paired seconds apart.
            self.alternate_with_load(self.setting("rounds"))
        self.run_xt_stream(threads)
        if self.injection != "off":
            self.add_injector(self.injection, self.setting("msg_size"), self.setting("warmup_s"),
                              self.bench.bin_dir)
        self.perf_variables = {"triad_bw": self.triad_bw(), "triad_bw_avg": self.triad_bw_avg(),
                               "triad_bw_median": self.triad_bw_median()}
        if self.alternating:
            self.perf_variables["triad_bw_alone"] = self.triad_bw_alone()
            self.perf_variables["triad_bw_avg_alone"] = self.triad_bw_avg_alone()
        # ib_write_bw reports in its own format; the achieved rate is xt-inject's.
        if self.load_instrument == "xt-inject":
            self.perf_variables["injected_bw"] = self.injected_bw()

    @sanity_function
    def validates(self):
        return sn.all([*[all_validations_pass(out) for out in self.step_outputs()], self.loads_ran_throughout()])

    @performance_function("MB/s")
    def triad_bw(self):
        return self.stream_rate("triad_bw", "triad")

    @performance_function("MB/s")
    def triad_bw_avg(self):
        # Groves 2017 §2.2.4: bandwidth "calculated based on the average time to complete a triad"
        return self.stream_rate("triad_bw_avg", "triad", "avg")

    @performance_function("MB/s")
    def triad_bw_avg_alone(self):
        return self.stream_rate("triad_bw_avg_alone", "triad", "avg", alone=True)

    @performance_function("MB/s")
    def triad_bw_median(self):
        return self.stream_rate("triad_bw_median", "triad", "median")

    @performance_function("MB/s")
    def triad_bw_alone(self):
        return self.stream_rate("triad_bw_alone", "triad", alone=True)

    @performance_function("MB/s")
    def injected_bw(self):
        return self.injected_rate()
