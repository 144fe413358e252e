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
import json
import os
import shlex
import sys
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before

from crosstalk.skips import platform_reason
from crosstalk.vcluster import format_rate
from crosstalk.vcluster.balance import outside_node_quota

CROSSTALK = str(Path(sys.executable).with_name("crosstalk"))
#: The links' state logged at the start of the job (after they are set) and at its end.
LINKS_BEFORE, LINKS_AFTER = "links.before.json", "links.after.json"


def link_command(partition, *args):
    """The shell words that run the partition's link tool with ``args``."""
    extras = partition.extras
    if extras.get("link_hook"):
        words = [*shlex.split(extras["link_hook"]), *args]
    else:
        # the harness's work, not the node's: on a node with a CPU quota, outside it from the start
        words = outside_node_quota([CROSSTALK, "link", *args, "--inventory", extras["vcluster_inventory"]])
    return " ".join(shlex.quote(str(w)) for w in words)


class LinkControl(rfm.RegressionTestPlugin):
    def shape_links(self, nodes, width=None, rate=None):
        """Set ``nodes``' links to ``width`` (4X/2X/1X) or ``rate`` (tc notation) for this job."""
        extras = self.current_partition.extras
        self.skip_if(not extras.get("capabilities", {}).get("link_control") or
                     not (extras.get("link_hook") or extras.get("vcluster_inventory")), platform_reason(
                     f"{self.current_partition.fullname} cannot change link width or rate "
                     f"(no virtual cluster, no extras.link_hook)"))
        if not hasattr(self, "_link_changes"):
            self._link_changes = []
        option = ["--width", width] if width else ["--rate", rate]
        self._link_changes += [[node, *option] for node in nodes]

    def link_set_lines(self, nodes, width=None, rate=None):
        """Shell lines setting ``nodes``' links mid-job. A link that cannot be set stops the job:
        the measurement would be of the wrong fabric."""
        option = ["--width", width] if width else ["--rate", rate]
        return [link_command(self.current_partition, "set", node, *option) + " || exit 1" for node in nodes]

    def link_log_line(self, name):
        """A shell line logging the links' state to ``name`` (read back by :meth:`logged_links`;
        a site hook's ``show`` is logged as it prints, unchecked)."""
        part = self.current_partition
        self.keep_files = self.keep_files + [name]
        if part.extras.get("link_hook"):
            return f"{link_command(part, 'show')} > {shlex.quote(name)} 2>&1 || true"
        return f"{link_command(part, 'show', '--json')} > {shlex.quote(name)} 2>> links.err || true"

    def logged_links(self, name):
        """``{node: {width, rate_bps, tc_rate_bps, ...}}`` logged by :meth:`link_log_line` to
        ``name``; None where a site hook logged it (its format is its own). A missing log is a
        sanity error."""
        if self.current_partition.extras.get("link_hook"):
            return None
        try:
            with open(os.path.join(self.stagedir, name)) as fp:
                state = json.load(fp)
        except (OSError, ValueError) as err:
            raise sn.SanityError(f"no link state in {name} (did `crosstalk link show` fail? see links.err): "
                                 f"{err}") from None
        return state

    def links_were(self, name, nodes, when, bps=None, width=None):
        """Sanity: ``nodes``' links were at ``bps`` (or at the width level ``width``, whatever a
        node's nominal rate) in the log ``name``, taken ``when``, the switch port's tc rate the
        same; a site hook's log is not checked."""
        state = self.logged_links(name)
        for node in nodes if state is not None else ():
            row = state.get(node, {})
            rate, tc = row.get("rate_bps"), row.get("tc_rate_bps")
            wanted = (width if width else format_rate(bps))
            if rate is None or tc != rate or (row.get("width") != width if width else rate != bps):
                raise sn.SanityError(f"{node}: link at {row.get('width') or '-'} {format_rate(rate) if rate else '?'} "
                                     f"(tc {format_rate(tc) if tc else '?'}) {when}, {wanted} wanted "
                                     f"(changed by another job?): see {name}")
        return True

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
        commands += [link_command(part, "set", *change) + " || exit 1" for change in changes]
        # First in the job, before any load starts; the state is logged before and after the job's steps.
        self.prerun_cmds = commands + [self.link_log_line(LINKS_BEFORE)] + self.prerun_cmds
        self.postrun_cmds += [self.link_log_line(LINKS_AFTER)]
