"""A ``kind: vcluster`` system description, completed from the cluster its inventory builds.

The inventory says what the cluster is (``hosts.yml``: nodes; ``group_vars/all/vcluster.yml``: subnet,
link rate, topology, Slurm); everything ReFrame needs that follows from it (node counts, the Slurm
partition, SLURM_CONF, the Open MPI launch agent and hostfile, the nominal link rate and topology,
link control) is derived
here, so a copy of the inventory with another name, size, subnet or rate needs no other edit.
"""
import copy

from crosstalk.errors import InputError
from crosstalk.site import mpich
from crosstalk.vcluster import VCluster, format_rate

#: Variables of VCluster.env() a partition gets, by launcher.
MPIRUN_VARS = ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile",
               "OMPI_MCA_rmaps_base_mapping_policy")
SRUN_VARS = ("SLURM_MPI_TYPE",)
#: Every virtual cluster offers Debian's Open MPI (playbooks/roles/packages) and the project's MPICH.
#: An inventory that lists ``environments`` replaces these.
OPENMPI = {"name": "gnu-openmpi", "mpi": "openmpi", "cc": "mpicc.openmpi", "cxx": "mpicxx.openmpi",
           "ftn": "mpif90.openmpi", "features": ["mpi", "openmp"]}
#: MPICH 5 from the project's prefix (crosstalk/site/mpich.py); C and C++ only (the wheel has no Fortran).
#: Its OFI netmod (libfabric's sockets provider on the node's subnet): under its UCX netmod a 2-rank
#: RMA load stopped by SIGTERM lost its stop message in 4 of 6 runs and hung; OFI stopped 8 of 8.
#: MPICH's own shared memory serves ranks of one node only (it goes by host name). srun uses PMI-2.
MPICH_ENV = {"MPICH_CH4_NETMOD": "ofi", "FI_PROVIDER": "sockets", "SLURM_MPI_TYPE": "pmi2"}


def default_environments():
    """Open MPI and, when the project's MPICH is installed, MPICH (on both partitions)."""
    if mpich.prefix() is None:
        return [OPENMPI]
    return [OPENMPI, {"name": "gnu-mpich", "mpi": "mpich", "cc": mpich.tool("mpicc"),
                      "cxx": mpich.tool("mpicxx"), "features": ["mpi", "openmp"]}]


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
    out["environments"] = [_environment(e, cluster) for e in out.get("environments") or default_environments()]
    for i, part in enumerate(out["partitions"]):
        part.setdefault("nodes", len(cluster.nodes))
        if part["nodes"] > len(cluster.nodes):
            raise InputError(source, f"crosstalk_system.partitions[{i}].nodes",
                             f"{part['nodes']} nodes, the cluster has {len(cluster.nodes)} (hosts.yml)")
        names = MPIRUN_VARS if part["launcher"] == "mpirun" else SRUN_VARS
        part["env_vars"] = {"SLURM_CONF": env["SLURM_CONF"], **{k: env[k] for k in names},
                            **part.get("env_vars", {})}
        if part["launcher"] == "mpirun":
            part["env_vars"]["HYDRA_HOST_FILE"] = str(cluster.mpich_hostfile)
        if part["launcher"] == "mpirun" and cluster.node_groups:
            part["env_vars"]["PATH"] = f"{cluster.quota_bin}:$PATH"    # mpirun that joins the node's group
        if part["scheduler"] in ("squeue", "slurm") and not part.get("access"):
            part["access"] = [f"--partition={cluster.slurm['partition']}"]
        part["extras"] = {**part.get("extras", {}), "vcluster_inventory": str(inventory),
                          "links_lock": str(cluster.links_lock)}
    return out


def _environment(env, cluster):
    """An MPICH environment gets the cluster's Hydra mpirun first on PATH and its netmod and PMI
    settings (the inventory's own env_vars win)."""
    if env.get("mpi") != "mpich":
        return env
    return {**env, "env_vars": {**MPICH_ENV, "PATH": f"{cluster.mpich_bin}:$PATH", **env.get("env_vars", {})}}
