"""What a system *is* (``crosstalk_system.kind``) decides how it is completed and run.

* ``cluster``: a real cluster; the inventory says everything (partitions need ``nodes``).
* ``local``: this machine alone; ``auto`` cores and memory are this machine's.
* ``vcluster``: the embedded virtual cluster its inventory builds (``crosstalk.vcluster.system``);
  ``crosstalk run`` brings it up and runs ReFrame on its login node.
"""
import os

from crosstalk.errors import InputError
from crosstalk.site.hostclass import memory_gib


def complete(system, inventory, source):
    """The description with what follows from its kind filled in; ``source`` names the file that
    defines it, for errors."""
    kind = system.get("kind", "cluster")       # the schema lists the kinds
    if kind == "vcluster":
        from crosstalk.vcluster.system import complete as complete_vcluster
        system = complete_vcluster(system, inventory, source)
    system = dict(system, kind=kind)
    if system.get("cores_per_node") == "auto":
        system["cores_per_node"] = os.cpu_count() or 1
    if system.get("memory_gib") == "auto":
        system["memory_gib"] = memory_gib() or 1
    for i, part in enumerate(system["partitions"]):
        if "nodes" not in part:
            raise InputError(source, f"crosstalk_system.partitions[{i}].nodes",
                             f"required for a system of kind {kind!r}")
    return system
