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
from xtlib.lammps import INPUTS, lammps_args, loop_times, step_loop_time
from xtlib.records import all_validations_pass, result_value, round_values, tool_value
from xtlib.rounds import PairedRounds, one_round

SPEC = load_spec("nimc-apps")
#: Executable names: Debian/Spack LAMMPS is ``lmp``; HPCCG's build produces ``test_HPCCG``.
APPS = {"lammps": "lmp", "hpccg": "test_HPCCG"}
#: Where upstream HPCCG is not installed: our kernel of its published problem, labelled in the unit
#: of its time so that no table or figure takes it for HPCCG.
HPCCG_METHOD = "xt-hpccg"
METHOD_UNIT = "s (xt-hpccg: HPCCG's method, not HPCCG)"


@rfm.simple_test
class NimcApps(XtExperiment, Injection, PairedRounds, rfm.RunOnlyRegressionTest):
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
        if self.injection != "off":
            # The application alone and under injection in each round of the job (order alternating).
            self.alternate_with_load(self.setting("rounds"))
        self.num_tasks = int(self.setting("ranks"))
        self.executable = exe
        if self.app == "lammps":
            self.sourcesdir = INPUTS
            self.executable_opts = lammps_args(self.setting("lammps_box"), self.setting("lammps_steps"),
                                               rounds=self.rounds)
        elif self.app_instrument == HPCCG_METHOD:
            n = str(self.setting("hpccg_n"))
            self.executable_opts = ["--nx", n, "--ny", n, "--nz", n, "--rounds", str(self.rounds),
                                    "--max-iter", str(self.setting("hpccg_max_iter"))]
        else:
            n = str(self.setting("hpccg_n"))
            self.executable_opts = [n, n, n]
        if self.injection != "off":
            self.add_injector(self.injection, self.setting("msg_size"), self.setting("warmup_s"),
                              self.bench.bin_dir)
        unit = METHOD_UNIT if self.app_instrument == HPCCG_METHOD else "s"
        self.perf_variables = {"time_s": sn.make_performance_function(
            self.over_rounds("time_s", self.round_times()), unit)}
        if self.alternating:
            self.perf_variables["time_s_alone"] = sn.make_performance_function(
                self.over_rounds("time_s_alone", self.round_times(alone=True)), unit)
        if self.load_instrument == "xt-inject":
            self.perf_variables["injected_bw"] = self.injected_bw()

    @sanity_function
    def finished(self):
        checks = [sn.assert_gt(sn.min(self.round_times()), 0), self.loads_ran_throughout()]
        if self.alternating:
            checks.append(sn.assert_gt(sn.min(self.round_times(alone=True)), 0))
        if self.app_instrument == HPCCG_METHOD:      # its residual check (the kernel's validation)
            checks += [all_validations_pass(out) for out in self.step_outputs()]
        return sn.all(checks)

    @property
    def rounds(self):
        """Runs of the application in one process (LAMMPS and xt-hpccg; upstream HPCCG runs once;
        where the job alternates with the injection, its steps are the rounds)."""
        if self.app == "hpccg" and self.app_instrument != HPCCG_METHOD:
            return 1
        return self.rounds_in_process()

    def round_times(self, alone=False):
        """The application's time in each round: under the injection (or in a job without one),
        or ``alone``, the steps before the injection starts in a job that alternates."""
        if self.alternating:
            return self.per_round(self._time, alone)
        if self.app == "lammps":
            return loop_times("log.lammps", self.rounds)
        if self.app_instrument == HPCCG_METHOD:
            return round_values(self.stdout, "time", "total", self.rounds)
        return one_round(self._time(self.job.stdout))

    def _time(self, output):
        """The time of the step whose output went to ``output``."""
        if self.app == "lammps":
            return step_loop_time(self, output)
        if self.app_instrument == HPCCG_METHOD:
            return result_value(output, "time", "total")
        return tool_value("hpccg", output, "time", "total")

    @performance_function("MB/s")
    def injected_bw(self):
        return self.injected_rate()
