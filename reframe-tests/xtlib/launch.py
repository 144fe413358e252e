"""Launch commands for extra job steps (background load), in the partition's own launcher.

ReFrame launches a test's main executable; experiments also start load generators in the same
job. These commands place them the same way: mpirun fills nodes in hostfile order (so the main
step's single rank and the load's rank 0 share the first node), srun runs overlapping steps in the
job's allocation. Every word is shell-quoted: spec values never reach the shell unquoted.
"""
import shlex


class ShellVar(str):
    """An argument taken from a job-script variable (set by an earlier line), e.g. a host name."""

    def quoted(self):
        return f'"${{{self}}}"'


def _quote(word):
    return word.quoted() if isinstance(word, ShellVar) else shlex.quote(str(word))


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
    launcher = test.current_partition.launcher_type.registered_name
    if launcher in ("mpirun", "mpiexec", "local"):
        if relative_node:
            raise ValueError("mpirun places steps from the first node; use srun for relative nodes")
        prefix = ["mpirun", "-np", str(tasks), "--bind-to", "none"]
        if nodes > 1:
            prefix += ["--map-by", "node"]
    elif launcher == "srun":
        prefix = ["srun", "--overlap", f"--nodes={nodes}", f"--ntasks={tasks}", "--cpu-bind=none",
                  f"--relative={relative_node}"] + ([f"--job-name={step_name}"] if step_name else [])
    else:
        raise ValueError(f"crosstalk cannot start a job step with launcher {launcher!r}")
    image = container_image(test)
    if image:
        argv = ["apptainer", "exec", image, *argv]
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


def stop_command(test, pid_var, step_name):
    """Shell command delivering SIGTERM to a background step so that it can still report: srun
    would cancel the step (SIGKILL to its tasks) if signalled itself, so the step is signalled."""
    if test.current_partition.launcher_type.registered_name == "srun":
        step = (f"$(squeue -h -s -j \"$SLURM_JOB_ID\" -o '%i %j' | "
                f"awk '$2 == \"{step_name}\" {{print $1}}')")
        return f"scancel --signal=TERM {step}"
    return f"kill -TERM ${pid_var}"
