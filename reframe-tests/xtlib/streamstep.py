"""xt-stream as a test's measured step (STREAM and E1 NiMC share it)."""
import os

from xtlib.placement import place_ranks
from xtlib.records import result_value, round_values
from xtlib.rounds import PairedRounds


class StreamStep(PairedRounds):
    """Needs the ``bench`` fixture (BenchBuild) and XtExperiment's ``setting``. The spec's
    ``rounds`` K: xt-stream measures K times in the job, each round one sample of the case; in a
    job that alternates with a load (BackgroundLoad.alternate_with_load) xt-stream measures once
    per step and the job's steps are the rounds."""

    def run_xt_stream(self, threads, also=()):
        """One xt-stream process with ``threads`` OpenMP threads, the spec's ntimes and array size;
        ``also``: thread counts measured too, in turn with ``threads`` in every round (paired)."""
        self.executable = os.path.join(self.bench.bin_dir, "xt-stream")
        self.executable_opts = ["--threads", ",".join(str(t) for t in (threads, *also)),
                                "--ntimes", str(self.setting("ntimes")), "--rounds", str(self.rounds_in_process())]
        if self.setting("array_bytes"):
            self.executable_opts += ["--size", str(self.setting("array_bytes"))]
        self.num_cpus_per_task = threads
        self.env_vars["OMP_NUM_THREADS"] = str(threads)
        # One thread per core, pinned (STREAM's practice): the baseline and NiMC's Triad measure
        # alike, and a load cannot take a thread's core by the scheduler moving the thread.
        self.env_vars["OMP_PROC_BIND"] = "spread"
        place_ranks(self)     # mpirun would bind the one rank to one core, and with it every thread

    def stream_rate(self, name, kernel, stat="best", alone=False, threads=None):
        """Performance variable ``name``: xt-stream's ``stat`` rate of ``kernel`` (copy, scale, add,
        triad), MB/s, the median over the rounds (each round's value is kept as a sample);
        ``alone``: of the steps without the load, in a job that alternates with one; ``threads``:
        of that thread count, in a job that measures several (``run_xt_stream``'s ``also``)."""
        match = {"threads": threads} if threads else {}
        if getattr(self, "alternating", False):
            rounds = self.per_round(lambda output: result_value(output, kernel, stat, **match), alone)
        else:
            rounds = round_values(self.stdout, kernel, stat, self.rounds_in_process(), **match)
        return self.over_rounds(name, rounds)
