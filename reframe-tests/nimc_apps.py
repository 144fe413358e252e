"""E2 NiMC apps: LAMMPS and HPCCG without and with injection (spec: experiments/nimc-apps.yaml)."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function, variable

from crosstalk.specs import load_spec
from xtlib.apps import installed_app
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.injection import Injection
from xtlib.records import all_validations_pass, result_value, tool_value

SPEC = load_spec("nimc-apps")
INPUTS = os.path.join(os.path.dirname(__file__), "inputs")
#: Executable names: Debian/Spack LAMMPS is ``lmp``; HPCCG's build produces ``test_HPCCG``.
APPS = {"lammps": "lmp", "hpccg": "test_HPCCG"}
#: Where upstream HPCCG is not installed: our kernel of its published problem, labelled in the unit
#: of its time so that no table or figure takes it for HPCCG.
HPCCG_METHOD = "xt-hpccg"
METHOD_UNIT = "s (xt-hpccg: HPCCG's method, not HPCCG)"


@rfm.simple_test
class NimcApps(XtExperiment, Injection, rfm.RunOnlyRegressionTest):
    spec_name = "nimc-apps"
    app = parameter(SPEC.parameter("app"))
    injection = parameter(SPEC.parameter("injection"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    #: The program that measured (recorded in the run report): lmp, test_HPCCG or xt-hpccg.
    app_instrument = variable(str, value="none")

    @run_after("setup")
    def configure(self):
        exe, why = installed_app(self, APPS[self.app])
        if self.app == "hpccg" and exe is None:
            exe = os.path.join(self.bench.bin_dir, HPCCG_METHOD)   # HPCCG's method, built here
        self.skip_if(exe is None, f"{APPS[self.app]}: {why} (LAMMPS: Debian, Spack or the image)")
        self.app_instrument = os.path.basename(exe)
        self.num_tasks = int(self.setting("ranks", 2))
        self.executable = exe
        if self.app == "lammps":
            self.sourcesdir = INPUTS
            self.executable_opts = ["-in", "in.lj", "-var", "box", str(self.setting("lammps_box", 20)),
                                    "-var", "steps", str(self.setting("lammps_steps", 100)), "-log", "log.lammps"]
        elif self.app_instrument == HPCCG_METHOD:
            n = str(self.setting("hpccg_n", 40))
            self.executable_opts = ["--nx", n, "--ny", n, "--nz", n]
        else:
            n = str(self.setting("hpccg_n", 40))
            self.executable_opts = [n, n, n]
        if self.injection != "off":
            self.add_injector(self.injection, self.setting("msg_size", "64K"), self.setting("warmup_s", 1),
                              self.bench.bin_dir)
        unit = METHOD_UNIT if self.app_instrument == HPCCG_METHOD else "s"
        self.perf_variables = {"time_s": sn.make_performance_function(self.time_s(), unit)}
        if self.load_instrument == "xt-inject":
            self.perf_variables["injected_bw"] = self.injected_bw()

    @sanity_function
    def finished(self):
        checks = [sn.assert_gt(self.time_s(), 0), self.loads_ran_throughout()]
        if self.app_instrument == HPCCG_METHOD:      # its residual check (the kernel's validation)
            checks.append(all_validations_pass(self.stdout))
        return sn.all(checks)

    def time_s(self):
        if self.app == "lammps":
            return tool_value("lammps", "log.lammps", "loop_time")
        if self.app_instrument == HPCCG_METHOD:
            return result_value(self.stdout, "time", "total")
        return tool_value("hpccg", self.stdout, "time", "total")

    @performance_function("MB/s")
    def injected_bw(self):
        return self.injected_rate()
