"""Link width / rate control for the duration of one job (virtual cluster, or a site's hook).

The partition's ``extras.capabilities.link_control`` says whether links can be changed; the command is
``crosstalk link --inventory <the partition's virtual cluster>`` unless the inventory names a site
hook in ``extras.link_hook`` taking the same arguments (``set NODE --width W | --rate R``, ``restore``,
``show``).
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


def link_command(partition, *args):
    """The shell words that run the partition's link tool with ``args``."""
    extras = partition.extras
    if extras.get("link_hook"):
        words = [*shlex.split(extras["link_hook"]), *args]
    else:
        words = [CROSSTALK, "link", *args, "--inventory", extras["vcluster_inventory"]]
    return " ".join(shlex.quote(str(w)) for w in words)


class LinkControl(rfm.RegressionTestPlugin):
    def shape_links(self, nodes, width=None, rate=None):
        """Set ``nodes``' links to ``width`` (4X/2X/1X) or ``rate`` (tc notation) for this job."""
        extras = self.current_partition.extras
        self.skip_if(not extras.get("capabilities", {}).get("link_control") or
                     not (extras.get("link_hook") or extras.get("vcluster_inventory")),
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
        part = self.current_partition
        nodes = sorted({change[0] for change in changes})
        restore = link_command(part, "restore", *nodes)
        commands = []
        lock = part.extras.get("links_lock")
        if lock and not part.extras.get("link_hook"):
            commands += [f"exec 9>>{shlex.quote(lock)}", "flock 9"]
        commands += [f"trap {shlex.quote(restore)} EXIT"]
        # A link that cannot be set must stop the job: the measurement would be of the wrong fabric.
        commands += [link_command(part, "set", *change) + " || exit 1" for change in changes]
        show = link_command(part, "show")
        # First in the job, before any load starts; the state is logged before and after the step.
        self.prerun_cmds = commands + [f"{show} >&2 || true"] + self.prerun_cmds
        self.postrun_cmds += [f"{show} >&2 || true"]
