"""Launch commands for extra job steps (background load), in the partition's own launcher.

ReFrame launches a test's main executable; experiments also start load generators in the same
job. These commands place them the same way (where ranks and steps go, in each launcher's words,
is xtlib.placement) and run them in the partition's image where it has one. Every word is
shell-quoted: spec values never reach the shell unquoted.
"""
import shlex

from xtlib.placement import mpi_family, step_prefix


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
    """Shell command running ``argv`` as an extra step (placement.step_prefix), in the partition's
    image where it has one."""
    prefix = step_prefix(test, tasks, nodes, relative_node, step_name)
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
