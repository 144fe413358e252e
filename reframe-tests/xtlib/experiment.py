"""The mixin every crosstalk experiment test derives from.

It ties a ReFrame test to its spec (profile settings, time limit, tags) and to the per-system
reference file ``references/<system>.yaml`` (ReFrame's external ``$ref``). A system without that
file, or without an entry for a test, runs in explore mode (values recorded, nothing checked).
Gate mode is ReFrame's own ``-S require_reference=true``: a missing reference then fails.
"""
import os
import shlex

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from crosstalk import references_dir
from crosstalk.specs import current_profile, load_spec
from xtlib.launch import container_image



class XtExperiment(rfm.RegressionTestPlugin):
    #: The spec this test implements (``experiments/<spec_name>.yaml``).
    spec_name = variable(str)

    @property
    def spec(self):
        return load_spec(self.spec_name)

    def setting(self, name, default=None):
        return self.spec.setting(name, default=default)

    @run_after("init")
    def apply_spec(self):
        profile = current_profile()
        self.tags |= {self.spec_name, profile}
        self.descr = self.spec.data["title"]
        limit = self.spec.profile(profile).get("time_limit")
        if limit:
            self.time_limit = limit
        self.maintainers = ["crosstalk"]

    @run_before("run")
    def run_in_container(self):
        """Partitions whose kernels come from the image run the measured step inside it."""
        image = container_image(self)
        if image:
            self.container_platform = "Apptainer"
            self.container_platform.image = image
            self.container_platform.command = " ".join(
                shlex.quote(str(w)) for w in [self.executable, *self.executable_opts])

    @run_after("setup")
    def use_system_references(self):
        ref_file = os.path.join(references_dir(), f"{self.current_system.name}.yaml")
        if os.path.exists(ref_file):
            self.reference = {"$ref": os.path.relpath(ref_file, self.prefix)}
