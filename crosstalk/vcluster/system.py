"""A ``kind: vcluster`` system description, completed from the cluster its inventory builds.

The inventory says what the cluster is (``hosts.yml``: nodes; ``group_vars/all/vcluster.yml``: subnet,
link rate, topology, Slurm); everything ReFrame needs that follows from it (node counts, the Slurm
partition, SLURM_CONF, the Open MPI launch agent and hostfile, the nominal link rate and topology,
link control) is derived
here, so a copy of the inventory with another name, size, subnet or rate needs no other edit.
"""
import copy

from crosstalk.errors import InputError
from crosstalk.vcluster import VCluster, format_rate

#: Variables of VCluster.env() a partition gets, by launcher.
MPIRUN_VARS = ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile",
               "OMPI_MCA_rmaps_base_mapping_policy")
SRUN_VARS = ("SLURM_MPI_TYPE",)


def complete(system, inventory, source):
    cluster = VCluster.from_inventory(inventory)
    env = cluster.env()
    out = copy.deepcopy(system)
    out["network"] = {"fabric": "veth", "rdma_devices": [], "interface": "eth0",
                      **out.get("network", {}), "link_rate": format_rate(cluster.link_rate),
                      "topology": cluster.topology.spec}
    if cluster.like:
        out["network"]["like"] = cluster.like
    if out.get("cores_per_node") == "auto":
        out["cores_per_node"] = int(cluster.slurm["cpus_per_node"])
    out["capabilities"] = {**out["capabilities"], "link_control": True}
    for i, part in enumerate(out["partitions"]):
        part.setdefault("nodes", len(cluster.nodes))
        if part["nodes"] > len(cluster.nodes):
            raise InputError(source, f"crosstalk_system.partitions[{i}].nodes",
                             f"{part['nodes']} nodes, the cluster has {len(cluster.nodes)} (hosts.yml)")
        names = MPIRUN_VARS if part["launcher"] == "mpirun" else SRUN_VARS
        part["env_vars"] = {"SLURM_CONF": env["SLURM_CONF"], **{k: env[k] for k in names},
                            **part.get("env_vars", {})}
        if part["launcher"] == "mpirun" and cluster.node_quota():
            part["env_vars"]["PATH"] = f"{cluster.quota_bin}:$PATH"    # mpirun that joins the node's quota
        if part["scheduler"] in ("squeue", "slurm") and not part.get("access"):
            part["access"] = [f"--partition={cluster.slurm['partition']}"]
        part["extras"] = {**part.get("extras", {}), "vcluster_inventory": str(inventory),
                          "links_lock": str(cluster.links_lock)}
    return out
