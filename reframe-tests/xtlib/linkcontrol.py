"""Link width / rate control for the duration of one job (virtual cluster, or a site's hook).

The partition's ``extras.capabilities.link_control`` says whether links can be changed; the command is
``crosstalk link`` (the virtual cluster) unless the inventory names a site hook in
``extras.link_hook`` taking the same arguments (``set NODE --width W | --rate R``, ``restore``).
The job script restores the nodes it changed on exit through a trap, so links come back also when
the measured step fails or the job is killed; the next ``crosstalk run`` restores them again. On the
virtual cluster the job holds the cluster's links lock while its links are shaped, so jobs of
concurrent runs never reshape or restore links under each other.
"""
import shlex
import sys
from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_before

CROSSTALK = str(Path(sys.executable).with_name("crosstalk"))


class LinkControl(rfm.RegressionTestPlugin):
    def shape_links(self, nodes, width=None, rate=None):
        """Set ``nodes``' links to ``width`` (4X/2X/1X) or ``rate`` (tc notation) for this job."""
        extras = self.current_partition.extras
        self.skip_if(not extras.get("capabilities", {}).get("link_control"),
                     f"{self.current_partition.fullname} cannot change link width or rate "
                     f"(no virtual cluster, no extras.link_hook)")
        if not hasattr(self, "_link_changes"):
            self._link_changes = []
        option = ["--width", width] if width else ["--rate", rate]
        self._link_changes += [[node, *option] for node in nodes]

    @run_before("run")
    def apply_link_changes(self):
        changes = getattr(self, "_link_changes", [])
        if not changes:
            return
        site_hook = self.current_partition.extras.get("link_hook")
        hook = shlex.split(site_hook or f"{CROSSTALK} link")
        nodes = sorted({change[0] for change in changes})
        restore = " ".join(shlex.quote(w) for w in hook + ["restore", *nodes])
        commands = []
        if not site_hook:
            from crosstalk import REPO_ROOT
            from crosstalk.vcluster import VCluster
            lock = VCluster.from_inventory(REPO_ROOT / "inventories" / "vcluster").links_lock
            commands += [f"exec 9>>{shlex.quote(str(lock))}", "flock 9"]
        commands += [f"trap {shlex.quote(restore)} EXIT"]
        # A link that cannot be set must stop the job: the measurement would be of the wrong fabric.
        commands += [" ".join(shlex.quote(str(w)) for w in hook + ["set", *change]) + " || exit 1"
                     for change in changes]
        show = " ".join(shlex.quote(w) for w in hook + ["show"])
        # First in the job, before any load starts; the state is logged before and after the step.
        self.prerun_cmds = commands + [f"{show} >&2 || true"] + self.prerun_cmds
        self.postrun_cmds += [f"{show} >&2 || true"]
