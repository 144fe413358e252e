"""Background load in the same job as the measurement: started before the measured step, stopped
(SIGTERM) and checked after it. A load that died early or reported nothing fails the test, because
the measurement then did not run under the load it claims.
"""
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before

from xtlib.launch import size_main_step, step_command, stop_command
from xtlib.records import records


class BackgroundLoad(rfm.RegressionTestPlugin):
    def add_load(self, name, argv, tasks, nodes=1, warmup_s=1.0, relative_node=0, reports=True):
        """Run ``argv`` in the background for the whole measured step. ``reports``: the load
        prints crosstalk JSON lines whose ``result`` records sanity requires."""
        if not hasattr(self, "_loads"):
            self._loads = []
        self._loads.append((name, step_command(self, argv, tasks, nodes, relative_node,
                                               step_name=f"xtload-{name}"), warmup_s, reports))

    @run_before("run")
    def wrap_loads(self):
        size_main_step(self)
        for name, command, warmup, _ in getattr(self, "_loads", []):
            self.prerun_cmds += [
                f"{command} > {name}.load.out 2> {name}.load.err &",
                f"{name}_pid=$!",
                f"sleep {float(warmup)}",
                # The load must still be running when the measurement starts.
                f"kill -0 ${name}_pid || echo 'load {name} exited before the measurement' >> loads.failed",
            ]
            self.postrun_cmds += [
                f"kill -0 ${name}_pid || echo 'load {name} exited during the measurement' >> loads.failed",
                f"{stop_command(self, f'{name}_pid', f'xtload-{name}')}; wait ${name}_pid",
            ]

    def load_records(self, name, type_=None, **match):
        return records(f"{name}.load.out", type_, **match)

    @sn.deferrable
    def loads_ran_throughout(self):
        """Sanity: every load ran during the whole measurement and reported a result."""
        import os
        failed = os.path.join(self.stagedir, "loads.failed")
        if os.path.exists(failed):
            with open(failed) as fp:
                raise sn.SanityError(fp.read().strip().replace("\n", "; "))
        for name, _, _, reports in getattr(self, "_loads", []):
            if reports and not records(os.path.join(self.stagedir, f"{name}.load.out"), "result").evaluate():
                raise sn.SanityError(f"load {name} reported no result (see {name}.load.err)")
        return True
