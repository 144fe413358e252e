"""The mixin every crosstalk experiment test derives from.

It ties a ReFrame test to its spec (profile settings, time limit, tags) and to the references of
its system on this host class (``references/<system>/<host-class>.yaml``, else the system-wide
``references/<system>.yaml``; ReFrame's external ``$ref``). Without either, or without an entry for
a test, the test runs in explore mode (values recorded, not checked against a reference); its
sanity checks, which follow from the setup and not from the hardware, always apply.
Gate mode is ReFrame's own ``-S require_reference=true``: a missing reference then fails.
"""
import functools
import os
import shlex

import reframe as rfm
import reframe.utility.osext as osext
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, variable

from crosstalk import reference_file
from crosstalk.portable import applies, violation
from crosstalk.site.hostclass import host_class
from crosstalk.specs import current_profile, load_spec
from xtlib.launch import container_image, container_mpi
from xtlib.placement import set_launcher_options

#: What slurmstepd writes to a job's stderr when it cancels the job at its time limit.
SLURM_TIME_LIMIT = "DUE TO TIME LIMIT"


class XtExperiment(rfm.RegressionTestPlugin):
    #: The spec this test implements (``experiments/<spec_name>.yaml``).
    spec_name = variable(str)

    @property
    def spec(self):
        return load_spec(self.spec_name)

    def setting(self, name):
        """The spec's value of a setting it declares (its profile's, or the declared default)."""
        return self.spec.setting(name)

    @run_after("init")
    def apply_spec(self):
        profile = current_profile()
        self.tags |= {self.spec_name, profile}
        self.descr = self.spec.data["title"]
        limit = self.spec.profile(profile).get("time_limit")
        if limit:
            self.time_limit = limit
        self.maintainers = ["crosstalk"]

    @run_after("setup")
    def use_site_launcher_options(self):
        """The partition's launcher options (the inventory's) come first on the measured step; a
        test that sets its own adds them through xtlib.launch.set_launcher_options."""
        set_launcher_options(self)

    @run_after("setup")
    def skip_other_environments(self):
        """Under the partition's first environment (MPI) only, unless the spec and profile ask for
        every environment (``Spec.environments`` says when)."""
        which, why = self.spec.environments()
        first = self.current_partition.environs[0].name if self.current_partition.environs else None
        self.skip_if(which == "first" and first is not None and self.current_environ.name != first,
                     f"runs under {first} only: {why}")

    @run_before("run")
    def wait_for_the_step_when_cancelled(self):
        """ReFrame's local scheduler SIGTERMs the job's process group at the time limit and SIGKILLs
        the group as soon as the job script exits. mpirun's ranks have process groups of their own:
        a script that died at once (measured: at 2 polls a second, a timed-out xt-stream ran on for
        hours) left them running. The script's trap runs after its step exits, so mpirun gets the
        grace period to stop its ranks."""
        if self.job.scheduler.registered_name == "local":
            self.prerun_cmds = ["trap 'exit 143' TERM", *self.prerun_cmds]

    @run_before("run")
    def run_in_container(self):
        """Partitions whose kernels come from the image run the measured step inside it."""
        image = container_image(self)
        if image:
            self.container_platform = "Apptainer"
            self.container_platform.image = image
            binds, library_path = container_mpi(self)    # hybrid MPI: the host's bound in
            self.container_platform.mount_points = [tuple(b.split(":", 1)) if ":" in b else (b, b) for b in binds]
            if library_path:
                self.env_vars["APPTAINERENV_LD_LIBRARY_PATH"] = ":".join(library_path)
            self.container_platform.command = " ".join(
                shlex.quote(str(w)) for w in [self.executable, *self.executable_opts])

    @run_before("sanity")
    def fail_jobs_stopped_at_time_limit(self):
        """A job the batch system stopped at its time limit fails as timed out, not as bad output
        (ReFrame's local scheduler says so itself; with Slurm only the job's stderr knows)."""
        try:
            with open(os.path.join(self.stagedir, self.job.stderr), errors="replace") as err:
                stopped = any(SLURM_TIME_LIMIT in line for line in err)
        except OSError:
            return
        if stopped:
            raise sn.SanityError(f"job timed out (Slurm cancelled it at its time limit, "
                                 f"{self.time_limit}s)")

    @run_after("sanity")
    def check_portable_directions(self):
        """The spec's ``portable_checks`` of this case: an effect's direction that follows from the
        setup, enforced on every host, with or without references (not in a dry run: nothing ran)."""
        if self.is_dry_run():
            return
        caps = self.current_partition.extras.get("capabilities", {})
        params = {name: getattr(self, name, None) for name in self.spec.profile()["parameters"]}
        for check in self.spec.data.get("portable_checks", []):
            if applies(check, params, caps):
                reason = violation(check, self._case_value)
                if reason:
                    raise sn.SanityError(reason)

    def _case_value(self, metric):
        if metric not in self.perf_variables:
            raise sn.SanityError(f"portable check: {metric} is not a performance variable of this test")
        with osext.change_dir(self.stagedir):     # as ReFrame evaluates them: paths are relative
            return float(sn.evaluate(self.perf_variables[metric]))

    @run_after("setup")
    def use_system_references(self):
        extras = self.current_partition.extras
        ref_file = reference_file(self.current_system.name,
                                  this_host_class(extras.get("fabric"), extras.get("link_rate")))
        if ref_file:
            self.reference = {"$ref": os.path.relpath(ref_file, self.prefix)}


@functools.lru_cache(maxsize=None)
def this_host_class(fabric, link_rate):
    """This host's class, as ``crosstalk run`` computes it (which exports it, pinned, to ReFrame)."""
    return host_class({"fabric": fabric, "link_rate": link_rate})["id"]
