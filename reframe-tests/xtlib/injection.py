"""Network-induced memory contention: 64 KiB writes injected into the first node's memory while
the measured step runs there (Groves 2017 §2.2). ib_write_bw (perftest) where the partition has a
verbs device and a second node under srun; otherwise xt-inject (MPI_Put, passive target).
"""
import os

from reframe.core.builtins import variable

from xtlib.launch import ShellVar
from xtlib.load import XT_STARTED, XT_STOP_SIGNAL, BackgroundLoad
from xtlib.placement import allocate_nodes, partition_nodes, slurm_steps
from xtlib.records import result_value


class Injection(BackgroundLoad):
    #: The injector that ran (recorded in the run report).
    load_instrument = variable(str, value="none")

    def add_injector(self, rate, msg_size="64K", warmup_s=1.0, xt_bin_dir=None):
        """Inject at ``rate`` MB/s (``"max"``: unpaced) for the whole measured step."""
        extras = self.current_partition.extras
        multinode = partition_nodes(self) > 1
        if extras.get("capabilities", {}).get("rdma") and extras.get("rdma_devices") and multinode \
                and slurm_steps(self):
            self._add_rdma_writer(extras["rdma_devices"][0], rate, msg_size, warmup_s)
        else:
            self._add_mpi_put_injector(rate, msg_size, warmup_s, xt_bin_dir, multinode)

    def _add_rdma_writer(self, device, rate, msg_size, warmup_s):
        common = ["ib_write_bw", "-d", device, "-s", msg_size.replace("K", "") + "K", "--run_infinitely"]
        if rate != "max":
            common += ["--rate_limit", rate, "--rate_units", "M", "--rate_limit_type", "SW"]
        allocate_nodes(self, 2)
        self.prerun_cmds += ["injected_host=$(hostname)"]
        self.add_load("rdma_server", common, tasks=1, warmup_s=1, reports=False)
        self.add_load("rdma_client", common + [ShellVar("injected_host")], tasks=1, relative_node=1,
                      warmup_s=warmup_s, reports=False)
        self.load_instrument = "ib_write_bw"

    def _add_mpi_put_injector(self, rate, msg_size, warmup_s, xt_bin_dir, multinode):
        argv = [os.path.join(xt_bin_dir, "xt-inject"), "--target", "0", "--msg-size", msg_size,
                "--rate", 0 if rate == "max" else rate, "--duration", 3600]
        # Rank 0 (the window) shares the first node with the measurement; the origin is next door.
        nodes = 2 if multinode else 1
        allocate_nodes(self, nodes)
        self.add_load("inject", argv, tasks=2, nodes=nodes, warmup_s=warmup_s, started=XT_STARTED,
                      stop_signal=XT_STOP_SIGNAL)
        self.load_instrument = "xt-inject"

    def injected_rate(self):
        """Achieved injection rate (xt-inject's report), MB/s."""
        return result_value("inject.load.out", "total_rate", "sum")
