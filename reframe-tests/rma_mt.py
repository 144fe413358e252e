"""E3 RMA-MT: multithreaded MPI one-sided sweep (spec: experiments/rma-mt.yaml).

A case of more than one thread measures one thread too, in turn in the same process and round by
round (``xt-rmamt --threads 1,T --rounds K``): Fig 2.6's growth with threads is then a paired
comparison inside one job (``latency`` against ``latency_one_thread``). An active-target case
(fence, pscw) measures lock too in the same way (``--sync fence,lock``): ``latency_lock``.

``sizes`` is the meaning of a message size (``xt-rmamt --sizes``): ``total``, Groves' axis, splits it
over the threads, so a thread count and its one-thread baseline are read at the same total size.
``op_rate`` is the two-rank operation count, not Groves' halo-exchange message rate."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function

from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.placement import partition_nodes, place_ranks
from xtlib.records import all_validations_pass, records, round_values
from xtlib.rounds import PairedRounds

SPEC = load_spec("rma-mt")
#: Per-case values: (metric, stat, the size it is read at, unit).
VALUES = {"bandwidth": ("avg", max, "MiB/s"), "op_rate": ("avg", min, "ops/s"), "latency": ("median", min, "us")}
#: The baselines each case reports beside its own values, where it measures them.
BASELINES = ("bandwidth_one_thread", "op_rate_one_thread", "latency_one_thread", "latency_lock")
#: Active-target modes measured against passive lock in the same process (the claims' baseline).
ACTIVE_TARGET = ("fence", "pscw")
BASELINE_SYNC = "lock"


@sn.deferrable
def per_round(path, metric, stat, pick, rounds, threads, sync):
    """``metric``/``stat`` of each round at ``threads`` threads under ``sync``, at the size ``pick``
    (min or max) chooses among those measured."""
    found = records(path, "result", metric=metric, stat=stat, threads=threads, sync=sync).evaluate()
    if not found:
        raise sn.SanityError(f"{path}: no {metric} result at {threads} thread(s) under {sync}")
    return round_values(path, metric, stat, rounds, size=pick(r["size"] for r in found), threads=threads,
                        sync=sync).evaluate()


@rfm.simple_test
class RmaMt(XtExperiment, PairedRounds, rfm.RunOnlyRegressionTest):
    spec_name = "rma-mt"
    op = parameter(SPEC.parameter("op"))
    sync = parameter(SPEC.parameter("sync"))
    threads = parameter(SPEC.parameter("threads"))
    sizes = parameter(SPEC.parameter("sizes"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    num_tasks = 2
    num_tasks_per_node = 1

    @run_after("setup")
    def configure(self):
        cores = self.current_partition.processor.num_cpus
        self.skip_if(self.threads > cores, platform_reason(f"{self.threads} threads > {cores} cores"))
        if partition_nodes(self) < 2:
            self.num_tasks_per_node = 2   # one node: origin and target share it
        self.executable = os.path.join(self.bench.bin_dir, "xt-rmamt")
        self.rounds = int(self.setting("rounds"))
        counts = [1, self.threads] if self.threads > 1 else [1]
        syncs = [self.sync] + ([BASELINE_SYNC] if self.sync in ACTIVE_TARGET else [])
        self.executable_opts = [
            "--op", self.op, "--sync", ",".join(syncs), "--threads", ",".join(map(str, counts)), "--mode", "both",
            "--sizes", self.sizes,
            "--rounds", str(self.rounds),
            "--min-size", str(self.setting("min_size")), "--max-size", str(self.setting("max_size")),
            "--iterations", str(self.setting("iterations")),
            # the timeout is the whole process's: a sweep's, times the sweeps it runs
            "--timeout", str(float(self.setting("timeout_s")) * len(counts) * len(syncs) * self.rounds)]
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
        """Each value at the case's threads (and the one-thread and lock baselines where it measures
        them), the median over its rounds; every round's value goes to PairedRounds."""
        self.perf_variables = {}
        wanted = [("", self.threads, self.sync)]
        if self.threads > 1:
            wanted.append(("_one_thread", 1, self.sync))
        if self.sync in ACTIVE_TARGET:
            wanted.append((f"_{BASELINE_SYNC}", self.threads, BASELINE_SYNC))
        for metric, (stat, pick, unit) in VALUES.items():
            for suffix, threads, sync in wanted:
                if suffix and metric + suffix not in BASELINES:
                    continue
                values = per_round(self.stdout, metric, stat, pick, self.rounds, threads, sync)
                self.perf_variables[metric + suffix] = sn.make_performance_function(
                    self.over_rounds(metric + suffix, values), unit)
