"""E3 RMA-MT: multithreaded MPI one-sided sweep (spec: experiments/rma-mt.yaml).

A case of more than one thread measures one thread too, in turn in the same process and round by
round (``xt-rmamt --threads 1,T --rounds K``): Fig 2.6's growth with threads is then a paired
comparison inside one job (``latency`` against ``latency_one_thread``)."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function

from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.placement import partition_nodes, place_ranks
from xtlib.records import all_validations_pass, records, round_values
from xtlib.rounds import PairedRounds

SPEC = load_spec("rma-mt")
#: Per-case values: (metric, stat, the size it is read at, unit).
VALUES = {"bandwidth": ("avg", max, "MiB/s"), "message_rate": ("avg", min, "msgs/s"), "latency": ("median", min, "us")}
#: Measured at one thread too in a case of more (the claims' baseline).
ONE_THREAD = ("bandwidth", "latency")


@sn.deferrable
def per_round(path, metric, stat, pick, rounds, threads):
    """``metric``/``stat`` of each round at ``threads`` threads, at the size ``pick`` (min or max)
    chooses among those measured."""
    sizes = [r["size"] for r in records(path, "result", metric=metric, stat=stat, threads=threads).evaluate()]
    if not sizes:
        raise sn.SanityError(f"{path}: no {metric} result at {threads} thread(s)")
    return round_values(path, metric, stat, rounds, size=pick(sizes), threads=threads).evaluate()


@rfm.simple_test
class RmaMt(XtExperiment, PairedRounds, rfm.RunOnlyRegressionTest):
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
        if partition_nodes(self) < 2:
            self.num_tasks_per_node = 2   # one node: origin and target share it
        self.executable = os.path.join(self.bench.bin_dir, "xt-rmamt")
        self.rounds = int(self.setting("rounds"))
        counts = [1, self.threads] if self.threads > 1 else [1]
        self.executable_opts = [
            "--op", self.op, "--sync", self.sync, "--threads", ",".join(map(str, counts)), "--mode", "both",
            "--rounds", str(self.rounds),
            "--min-size", str(self.setting("min_size")), "--max-size", str(self.setting("max_size")),
            "--iterations", str(self.setting("iterations")),
            # the timeout is the whole process's: a sweep's, times the sweeps it runs
            "--timeout", str(float(self.setting("timeout_s")) * len(counts) * self.rounds)]
        if self.setting("ends_only"):
            self.executable_opts.append("--ends-only")     # the sizes the claims and figures read
        self.env_vars.update(self.current_partition.extras.get("rma_mt_env", {}))
        # Open MPI forwards only OMPI_* to remote ranks; UCX settings must be exported by name.
        place_ranks(self, export=[name for name in self.env_vars if name.startswith("UCX_")])

    @sanity_function
    def checksums_match(self):
        # A timeout or a checksum mismatch is a failed run (recorded, with the kernel's reason).
        return all_validations_pass(self.stdout)

    @run_before("performance")
    def set_perf_variables(self):
        """Each value at the case's threads (and the one-thread baseline where it has more), the
        median over its rounds; every round's value goes to PairedRounds."""
        self.perf_variables = {}
        counts = [("", self.threads)] + ([("_one_thread", 1)] if self.threads > 1 else [])
        for metric, (stat, pick, unit) in VALUES.items():
            for suffix, threads in counts:
                if suffix and metric not in ONE_THREAD:
                    continue
                values = per_round(self.stdout, metric, stat, pick, self.rounds, threads)
                self.perf_variables[metric + suffix] = sn.make_performance_function(
                    self.over_rounds(metric + suffix, values), unit)
