"""Launching on the virtual cluster: the variables every command needs, /etc/hosts, the hostfiles
and the rsh agent of Open MPI and MPICH (Hydra), and the per-node Python wrappers Ansible runs
modules through."""
import shlex
import shutil

from crosstalk.site import mpich
from crosstalk.vcluster.balance import CpuShares
from crosstalk.vcluster.procs import NODE_NAMESPACES, write_if_changed


class Launch:
    """The launch part of a VCluster."""

    @property
    def shared_dir(self):
        """A directory every node sees (each node's /tmp is private): binaries, job files."""
        return self.state / "shared"

    @property
    def quota_bin(self):
        """Launchers that join the node's CPU group (put first on the mpirun partition's PATH)."""
        return self.state / "bin" / "quota"

    @property
    def hostfile(self):
        return self.state / "hostfile"

    @property
    def mpich_bin(self):
        """MPICH's mpirun for this cluster (first on PATH in an ``mpi: mpich`` environment)."""
        return self.state / "bin" / "mpich"

    @property
    def mpich_hostfile(self):
        """Hydra's hostfile: one slot per line, so ranks go round robin over the nodes by default,
        as Open MPI's do here (rmaps_base_mapping_policy=node)."""
        return self.state / "hostfile-mpich"

    def env(self):
        """Variables every command on the cluster needs: Slurm client config and Open MPI."""
        return {
            "SLURM_CONF": str(self.slurm_conf),
            "SLURM_MPI_TYPE": "pmix",
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_plm_rsh_agent": str(self.state / "bin" / "rsh-agent"),
            "OMPI_MCA_orte_default_hostfile": str(self.hostfile),
            "OMPI_MCA_rmaps_base_mapping_policy": "node",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "OMPI_MCA_btl": "tcp,self,vader",
            "OMPI_MCA_btl_tcp_if_include": "eth0",
            "OMPI_MCA_oob_tcp_if_include": "eth0",
            "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_MCA_osc": "pt2pt",
        }

    def _write_launch_files(self):
        st = self.state
        write_if_changed(st / "hosts", "127.0.0.1 localhost\n" + "".join(
            f"{self.addresses[n]} {n}\n" for n in self.nodes))
        write_if_changed(self.hostfile, "".join(
            f"{n} slots={self.slurm['cpus_per_node']}\n" for n in self.nodes))
        cases = "".join(f"  {n}|{self.addresses[n]}) node={n} ;;\n" for n in self.nodes)
        # Open MPI calls: AGENT [options] HOST COMMAND...; COMMAND is a shell string (as for ssh)
        write_if_changed(st / "bin" / "rsh-agent", f"""#!/bin/sh
# Open MPI launch agent for virtual cluster {self.name}: runs COMMAND on node HOST.
while [ "$#" -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case "$host" in
{cases}  *) echo "rsh-agent: unknown node $host" >&2; exit 255 ;;
esac
pid=$(cat "{st}/pids/anchor-$node.pid") || exit 255
{self._join_line("$node")}exec nsenter -t "$pid" {NODE_NAMESPACES} --wd=/ -- /bin/sh -c "$*"
""", 0o755)
        if self.node_groups:  # on PATH of the mpirun partition: mpirun and its local ranks are n1's work
            self.quota_bin.mkdir(parents=True, exist_ok=True)
            write_if_changed(self.quota_bin / "mpirun", f"""#!/bin/sh
# mpirun inside the CPU group of the node it runs on (virtual cluster {self.name}).
echo $$ > "{CpuShares(self.name).base}/$(hostname)/cgroup.procs" || exit 255
exec {shutil.which("mpirun") or "/usr/bin/mpirun"} "$@"
""", 0o755)
        write_if_changed(self.mpich_hostfile, "".join(f"{n}:1\n" for n in self.nodes))
        self.mpich_bin.mkdir(parents=True, exist_ok=True)
        write_if_changed(self.mpich_bin / "mpirun", f"""#!/bin/sh
# MPICH's mpirun (Hydra) on virtual cluster {self.name}: proxies start through the launch agent.
export HYDRA_LAUNCHER=rsh HYDRA_LAUNCHER_EXEC="{st}/bin/rsh-agent"
export HYDRA_HOST_FILE="${{HYDRA_HOST_FILE:-{self.mpich_hostfile}}}"
{self._join_line("$(hostname)")}exec {shlex.quote(mpich.tool("mpiexec") or "mpiexec-not-installed")} "$@"
""", 0o755)
        for n in self.nodes:   # Ansible's interpreter: runs modules inside the node
            write_if_changed(st / "bin" / f"python-{n}", f"""#!/bin/sh
pid=$(cat "{st}/pids/anchor-{n}.pid") || exit 1
{self._join_line(n)}exec nsenter -t "$pid" {NODE_NAMESPACES} --wd="$PWD" -- /usr/bin/python3 "$@"
""", 0o755)
