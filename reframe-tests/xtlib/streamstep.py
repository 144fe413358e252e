"""xt-stream as a test's measured step (STREAM and E1 NiMC share it)."""
import os

import reframe as rfm

from xtlib.launch import mpirun_options
from xtlib.records import result_value


class StreamStep(rfm.RegressionTestPlugin):
    """Needs the ``bench`` fixture (BenchBuild) and XtExperiment's ``setting``."""

    def run_xt_stream(self, threads):
        """One xt-stream process with ``threads`` OpenMP threads, the spec's ntimes and array size."""
        self.executable = os.path.join(self.bench.bin_dir, "xt-stream")
        self.executable_opts = ["--threads", str(threads), "--ntimes", str(self.setting("ntimes", 10))]
        if self.setting("array_bytes"):
            self.executable_opts += ["--size", str(self.setting("array_bytes"))]
        self.num_cpus_per_task = threads
        self.env_vars["OMP_NUM_THREADS"] = str(threads)
        if self.current_partition.launcher_type.registered_name == "mpirun":
            # mpirun would bind the one rank to one core, and with it every thread
            self.job.launcher.options = mpirun_options(self)

    def stream_rate(self, kernel, stat="best"):
        """xt-stream's ``stat`` rate of ``kernel`` (copy, scale, add, triad), MB/s."""
        return result_value(self.stdout, kernel, stat)
