"""STREAM Triad memory bandwidth (spec: experiments/stream.yaml)."""
import reframe as rfm
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.records import all_validations_pass
from xtlib.streamstep import StreamStep

SPEC = load_spec("stream")


@rfm.simple_test
class StreamTriad(XtExperiment, StreamStep, rfm.RunOnlyRegressionTest):
    spec_name = "stream"
    threads = parameter(SPEC.parameter("threads"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+openmp"]
    num_tasks = 1

    @run_after("setup")
    def configure(self):
        self.skip_if(self.threads > self.current_partition.processor.num_cpus, platform_reason(
                     f"{self.threads} threads > {self.current_partition.processor.num_cpus} cores"))
        # More than one thread: one thread too, in turn in every round (stream-threads-saturate)
        self.run_xt_stream(self.threads, also=(1,) if self.threads > 1 else ())
        if self.threads == 1:
            self.perf_variables.pop("triad_bw_one_thread", None)
            self.perf_variables.pop("triad_bw_avg_one_thread", None)

    @sanity_function
    def validates(self):
        return all_validations_pass(self.stdout)

    @performance_function("MB/s")
    def triad_bw(self):
        return self.stream_rate("triad_bw", "triad", threads=self.threads)

    @performance_function("MB/s")
    def triad_bw_avg(self):
        # Groves 2017 §2.2.4 (Table 2.4): bandwidth from the average Triad time, not the best
        return self.stream_rate("triad_bw_avg", "triad", "avg", threads=self.threads)

    @performance_function("MB/s")
    def triad_bw_avg_one_thread(self):
        return self.stream_rate("triad_bw_avg_one_thread", "triad", "avg", threads=1)

    @performance_function("MB/s")
    def copy_bw(self):
        return self.stream_rate("copy_bw", "copy", threads=self.threads)

    @performance_function("MB/s")
    def triad_bw_one_thread(self):
        return self.stream_rate("triad_bw_one_thread", "triad", threads=1)
