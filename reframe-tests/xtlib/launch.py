"""Launch commands for extra job steps (background load), in the partition's own launcher.

ReFrame launches a test's main executable; experiments also start load generators in the same
job. These commands place them the same way: mpirun fills nodes in hostfile order (so the main
step's single rank and the load's rank 0 share the first node), srun runs overlapping steps in the
job's allocation. Every word is shell-quoted: spec values never reach the shell unquoted.

mpirun's options differ between MPI implementations; ``mpirun_options`` says the same placement in
the words of the environment's MPI (its ``extras.mpi``, rendered from the inventory): Open MPI's
``--map-by``, MPICH Hydra's ``-ppn`` and ``-hosts``.
"""
import os
import shlex


class ShellVar(str):
    """An argument taken from a job-script variable (set by an earlier line), e.g. a host name."""

    def quoted(self):
        return f'"${{{self}}}"'


def _quote(word):
    return word.quoted() if isinstance(word, ShellVar) else shlex.quote(str(word))


def mpi_family(test):
    """The MPI implementation of the test's environment: openmpi (the default) or mpich."""
    return test.current_environ.extras.get("mpi", "openmpi")


def mpirun_hosts(test):
    """The partition's mpirun hosts in hostfile order (Open MPI's ``host slots=N`` or Hydra's
    ``host:N`` lines), or (None, reason)."""
    env = test.current_partition.local_env.env_vars
    hostfile = env.get("OMPI_MCA_orte_default_hostfile") or env.get("HYDRA_HOST_FILE")
    if not hostfile or not os.path.exists(hostfile):
        return None, "no mpirun hostfile in the partition environment: cannot tell the job's nodes"
    with open(hostfile) as fp:
        names = [line.split()[0].split(":")[0] for line in fp if line.strip() and not line.startswith("#")]
    return names, None


def mpirun_options(test, map_by=None, nodes=None, export=()):
    """mpirun options, without binding, placing ranks ``map_by``: ``node`` (round robin over the
    nodes), ``slot`` (fill a node first), an int k (k ranks on every node) or None (the
    partition's default); over the first ``nodes`` hosts if given. ``export``: variables Open MPI
    must forward by name (Hydra forwards the whole environment)."""
    if mpi_family(test) == "mpich":
        opts = ["-bind-to", "none"]
        if map_by is not None:
            cpus = test.current_partition.processor.num_cpus or 1
            opts += ["-ppn", str(int({"node": 1, "slot": cpus}.get(map_by, map_by)))]
        if nodes:
            hosts, reason = mpirun_hosts(test)
            if hosts is None:
                raise ValueError(reason)
            opts += ["-hosts", ",".join(hosts[:int(nodes)])]
        return opts
    opts = ["--bind-to", "none"]
    if map_by is not None:
        opts += ["--map-by", map_by if map_by in ("node", "slot") else f"ppr:{int(map_by)}:node"]
    if nodes:
        opts += ["--max-vm-size", str(int(nodes))]
    return opts + [w for name in export for w in ("-x", name)]


#: Where containers/install.sh puts the kernels in the image, by the MPI they were built with.
CONTAINER_PREFIX = {"openmpi": "/opt/crosstalk", "mpich": "/opt/crosstalk/mpich"}


def container_prefix(test):
    """The image's kernels built with the environment's MPI (the ABI a bound host MPI must have)."""
    return CONTAINER_PREFIX.get(mpi_family(test), CONTAINER_PREFIX["openmpi"])


def container_mpi(test):
    """The partition's hybrid MPI bind model for the environment's MPI: ``(binds, library_path)``,
    empty without one (the image's own MPI then runs)."""
    spec = (test.current_partition.extras.get("container_mpi") or {}).get(mpi_family(test), {})
    return list(spec.get("bind", [])), list(spec.get("library_path", []))


def container_image(test):
    """The Apptainer image the partition runs its kernels from, or None."""
    extras = test.current_partition.extras
    if extras.get("build_origin") != "container":
        return None
    image = extras.get("container_image")
    if not image:
        raise ValueError(f"partition {test.current_partition.fullname} builds from a container "
                         f"but its inventory names no extras.container_image")
    return image


def partition_nodes(test, wanted=None):
    """Nodes of the test's partition (the inventory's ``nodes``; 1 where it names none), at most
    ``wanted``."""
    nodes = int(test.current_partition.extras.get("nodes", 1))
    return nodes if wanted is None else min(int(wanted), nodes)


def site_launcher_options(test):
    """The partition's own launcher options (the inventory's ``launcher_options``, e.g. srun's
    ``--mpi=pmix``): first on every step's command line, the measured step's and a load's alike."""
    return [str(o) for o in test.current_partition.extras.get("launcher_options", [])]


def set_launcher_options(test, options=()):
    """The measured step's launcher options: the partition's own, then ``options``."""
    test.job.launcher.options = [*site_launcher_options(test), *options]


def step_command(test, argv, tasks, nodes=1, relative_node=0, step_name=None):
    """Shell command running ``argv`` as ``tasks`` ranks over ``nodes`` nodes, starting at the
    job's node ``relative_node`` (0 = the node of the main step); srun steps get ``step_name``."""
    launcher = test.current_partition.launcher_type.registered_name
    if launcher in ("mpirun", "mpiexec", "local"):
        if relative_node:
            raise ValueError("mpirun places steps from the first node; use srun for relative nodes")
        prefix = ["mpirun", *site_launcher_options(test), "-np", str(tasks),
                  *mpirun_options(test, "node" if nodes > 1 else None)]
    elif launcher == "srun":
        prefix = ["srun", *site_launcher_options(test), "--overlap", f"--nodes={nodes}", f"--ntasks={tasks}",
                  "--cpu-bind=none", f"--relative={relative_node}"] + ([f"--job-name={step_name}"] if step_name else [])
    else:
        raise ValueError(f"crosstalk cannot start a job step with launcher {launcher!r}")
    image = container_image(test)
    if image:
        binds, _ = container_mpi(test)     # the library path comes from the job's environment
        argv = ["apptainer", "exec", *[f"--bind={b}" for b in binds], image, *argv]
    return " ".join(_quote(w) for w in prefix + list(argv))


def allocate_nodes(test, nodes):
    """Make a batch job allocate ``nodes`` nodes for its extra steps (no-op for local jobs), while
    the measured step keeps its own task count (Slurm would shrink a job of fewer tasks than nodes,
    and a plain srun inside it would start one copy per allocated task)."""
    if test.current_partition.scheduler.registered_name not in ("squeue", "slurm") or nodes < 2:
        return
    test.job.options += [f"--nodes={nodes}", f"--ntasks={max(test.num_tasks or 1, nodes)}"]
    test.allocated_nodes = nodes


def size_main_step(test):
    """Called just before the run (the test's num_tasks is final then): an srun main step of fewer
    tasks than allocated nodes gets its own size instead of one copy per allocated task."""
    nodes = getattr(test, "allocated_nodes", 0)
    tasks = test.num_tasks or 1
    if nodes > tasks and test.current_partition.launcher_type.registered_name == "srun":
        test.job.launcher.options += [f"--nodes={tasks}", f"--ntasks={tasks}"]


def main_step_line(test, out, executable_opts=None):
    """The main step's command line as ReFrame writes it (the partition's launcher), its output to
    ``out`` (and ``out``.err): a job that measures in several steps runs them with this line.
    ``executable_opts`` replaces the test's own (e.g. another log file per step)."""
    opts = test.executable_opts if executable_opts is None else executable_opts
    argv = [test.executable, *opts]
    image = container_image(test)
    if image:       # as a load's step (step_command): the image's program, not the host's
        binds, _ = container_mpi(test)
        argv = ["apptainer", "exec", *[f"--bind={b}" for b in binds], image, *argv]
    argv = " ".join(_quote(w) for w in argv)
    # ReFrame copies these to the job only after the run hooks; the launcher reads them.
    for name in ("num_tasks", "num_tasks_per_node", "num_tasks_per_core", "num_tasks_per_socket",
                 "num_cpus_per_task"):
        setattr(test.job, name, getattr(test, name))
    return f"{test.job.launcher.run_command(test.job)} {argv} > {out} 2> {out}.err"


def stop_command(test, pid_var, step_name):
    """Shell command delivering SIGTERM to a background step so that it can still report: srun
    would cancel the step (SIGKILL to its tasks) if signalled itself, so the step is signalled."""
    if test.current_partition.launcher_type.registered_name == "srun":
        step = (f"$(squeue -h -s -j \"$SLURM_JOB_ID\" -o '%i %j' | "
                f"awk '$2 == \"{step_name}\" {{print $1}}')")
        return f"scancel --signal=TERM {step}"
    return f"kill -TERM ${pid_var}"
