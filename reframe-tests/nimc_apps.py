"""E2 NiMC apps: LAMMPS and HPCCG without and with injection (spec: experiments/nimc-apps.yaml)."""
import os
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.specs import load_spec
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.injection import Injection
from xtlib.records import tool_value

SPEC = load_spec("nimc-apps")
INPUTS = os.path.join(os.path.dirname(__file__), "inputs")
#: Executable names: Debian/Spack LAMMPS is ``lmp``; HPCCG's build produces ``test_HPCCG``.
APPS = {"lammps": "lmp", "hpccg": "test_HPCCG"}


@rfm.simple_test
class NimcApps(XtExperiment, Injection, rfm.RunOnlyRegressionTest):
    spec_name = "nimc-apps"
    app = parameter(SPEC.parameter("app"))
    injection = parameter(SPEC.parameter("injection"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    @run_after("setup")
    def configure(self):
        exe = APPS[self.app]
        self.skip_if(shutil.which(exe) is None,
                     f"{exe} is not installed here (HPCCG comes from the Spack environment or the image)")
        self.num_tasks = int(self.setting("ranks", 2))
        self.executable = exe
        if self.app == "lammps":
            self.sourcesdir = INPUTS
            self.executable_opts = ["-in", "in.lj", "-var", "box", str(self.setting("lammps_box", 20)),
                                    "-var", "steps", str(self.setting("lammps_steps", 100)), "-log", "log.lammps"]
        else:
            n = str(self.setting("hpccg_n", 40))
            self.executable_opts = [n, n, n]
        if self.injection != "off":
            self.add_injector(self.injection, self.setting("msg_size", "64K"), self.setting("warmup_s", 1),
                              self.bench.bin_dir)
        if self.load_instrument != "xt-inject":
            self.perf_variables = {"time_s": self.time_s()}

    @sanity_function
    def finished(self):
        return sn.all([sn.assert_gt(self.time_s(), 0), self.loads_ran_throughout()])

    @performance_function("s")
    def time_s(self):
        if self.app == "lammps":
            return tool_value("lammps", "log.lammps", "loop_time")
        return tool_value("hpccg", self.stdout, "time", "total")

    @performance_function("MB/s")
    def injected_bw(self):
        return self.injected_rate()
