"""Launch commands for extra job steps (background load), in the partition's own launcher.

ReFrame launches a test's main executable; experiments also start load generators in the same
job. These commands place them the same way: mpirun fills nodes in hostfile order (so the main
step's single rank and the load's rank 0 share the first node), srun runs overlapping steps in the
job's allocation. Every word is shell-quoted: spec values never reach the shell unquoted.

Where ranks and steps go, in each launcher's words, is xtlib.placement.
"""
import shlex

from xtlib.placement import launcher_kind, mpi_family, mpirun_options, site_launcher_options


class ShellVar(str):
    """An argument taken from a job-script variable (set by an earlier line), e.g. a host name."""

    def quoted(self):
        return f'"${{{self}}}"'


def _quote(word):
    return word.quoted() if isinstance(word, ShellVar) else shlex.quote(str(word))


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


def step_command(test, argv, tasks, nodes=1, relative_node=0, step_name=None):
    """Shell command running ``argv`` as ``tasks`` ranks over ``nodes`` nodes, starting at the
    job's node ``relative_node`` (0 = the node of the main step); srun steps get ``step_name``."""
    launcher = launcher_kind(test)
    if launcher == "mpirun":
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


def stop_command(test, pid_var, step_name, signal="TERM"):
    """Shell command delivering ``signal`` to a background step so that it can still report: srun
    would cancel the step (SIGKILL to its tasks) if signalled itself, so the step is signalled;
    mpirun forwards the signal to its ranks."""
    if launcher_kind(test) == "srun":
        step = (f"$(squeue -h -s -j \"$SLURM_JOB_ID\" -o '%i %j' | "
                f"awk '$2 == \"{step_name}\" {{print $1}}')")
        return f"scancel --signal={signal} {step}"
    return f"kill -{signal} ${pid_var}"
