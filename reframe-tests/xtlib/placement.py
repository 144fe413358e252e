"""Placement: which nodes a job runs on and how its ranks spread over them, in one place for
every launcher. Test modules say what they want (ranks per node, round robin, the first ranks of a
larger job, the names of the job's nodes); the words of srun, and of mpirun in the environment's
MPI dialect (Open MPI's ``--map-by``, MPICH Hydra's ``-ppn`` and ``-hosts``), are here.

mpirun, mpiexec and a local launcher are one kind (mpirun started from the job's first node);
mpirun's ranks are never bound (Open MPI would bind each rank, and its threads, to one core); an
srun step binds as the site's Slurm does unless a test asks for unbound ranks.
"""
import os
import re
import subprocess

from crosstalk.skips import platform_reason


def launcher_kind(test):
    """``srun``, ``mpirun`` (mpirun, mpiexec, local) or the partition's own launcher name."""
    name = test.current_partition.launcher_type.registered_name
    return "mpirun" if name in ("mpirun", "mpiexec", "local") else name


def slurm_steps(test):
    """Whether the job's steps are Slurm job steps (srun): then Slurm sets the CPU frequency
    (``--cpu-freq``), accounts energy (sacct), hands out devices, and never puts more ranks on a
    node than it has cores."""
    return launcher_kind(test) == "srun"


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
    if nodes > tasks and slurm_steps(test):
        test.job.launcher.options += [f"--nodes={tasks}", f"--ntasks={tasks}"]


def step_prefix(test, tasks, nodes=1, relative_node=0, step_name=None):
    """Launcher words running an extra step as ``tasks`` ranks over ``nodes`` nodes, starting at
    the job's node ``relative_node`` (0 = the node of the main step): mpirun fills nodes in
    hostfile order from the first; srun runs overlapping steps in the job's allocation, named
    ``step_name``."""
    launcher = launcher_kind(test)
    if launcher == "mpirun":
        if relative_node:
            raise ValueError("mpirun places steps from the first node; use srun for relative nodes")
        return ["mpirun", *site_launcher_options(test), "-np", str(tasks),
                *mpirun_options(test, "node" if nodes > 1 else None)]
    if launcher == "srun":
        return ["srun", *site_launcher_options(test), "--overlap", f"--nodes={nodes}", f"--ntasks={tasks}",
                "--cpu-bind=none", f"--relative={relative_node}"] + ([f"--job-name={step_name}"] if step_name else [])
    raise ValueError(f"crosstalk cannot start a job step with launcher {launcher!r}")


def stop_step(test, pid_var, step_name, signal="TERM"):
    """Shell command delivering ``signal`` to a background step so that it can still report: srun
    would cancel the step (SIGKILL to its tasks) if signalled itself, so the step is signalled;
    mpirun forwards the signal to its ranks."""
    if launcher_kind(test) == "srun":
        step = (f"$(squeue -h -s -j \"$SLURM_JOB_ID\" -o '%i %j' | "
                f"awk '$2 == \"{step_name}\" {{print $1}}')")
        return f"scancel --signal={signal} {step}"
    return f"kill -{signal} ${pid_var}"


#: How ranks spread over the nodes: None (the launcher's default), ``node`` (round robin over the
#: nodes, ``block`` ranks at a time), ``fill`` (fill a node first), ``per-node`` (``block`` ranks
#: on every node).
SPREADS = (None, "node", "fill", "per-node")


def rank_options(test, spread=None, block=1, nodes=None, export=(), first=None, unbound=False):
    """The measured step's launcher words for ``spread`` (see SPREADS) over the first ``nodes``
    nodes (mpirun; srun takes the job's); ``first``: the step runs only that many ranks, one per
    node, of a job holding more (srun); ``export``: variables mpirun must forward by name;
    ``unbound``: srun leaves the ranks unbound too."""
    if spread not in SPREADS:
        raise ValueError(f"spread must be one of {SPREADS}, not {spread!r}")
    kind = launcher_kind(test)
    if kind == "mpirun":
        if spread == "node" and int(block) > 1:
            return blocked_round_robin(test, int(block), nodes, export)
        map_by = {"node": "node", "fill": "slot", "per-node": block}.get(spread)
        return mpirun_options(test, map_by, nodes, export)
    if kind != "srun":
        return []
    opts = [f"--nodes={first}", f"--ntasks={first}"] if first else []
    if spread == "node":
        opts.append(f"--distribution=plane={int(block)}")
    elif spread in ("fill", "per-node"):
        opts.append("--distribution=block")
    return opts + (["--cpu-bind=none"] if unbound else [])


#: The file, in the job's stage directory, that places an mpirun job's ranks one by one.
RANK_HOSTS = "rank-hosts.txt"


def host_sequence(hosts, ranks, block):
    """The host of each of ``ranks`` ranks: blocks of ``block`` consecutive ranks round robin over
    ``hosts`` (srun's plane distribution)."""
    return [hosts[(r // block) % len(hosts)] for r in range(ranks)]


def blocked_round_robin(test, block, nodes=None, export=()):
    """mpirun words for blocks of ``block`` consecutive ranks round robin over the job's nodes,
    which neither ``--map-by`` nor ``-ppn`` says: Open MPI's sequential mapper reads one host per
    rank from a file, and MPICH's Hydra cycles through a machine file of ``host:block`` lines. The
    file is written to the stage directory, where the job runs."""
    count = int(nodes or partition_nodes(test))
    if count <= 1:          # one host holds every block: no file, and no hostfile needed
        return mpirun_options(test, None, None, export)
    hosts, why = job_nodes(test, count)
    if hosts is None:
        raise ValueError(why)
    path = os.path.join(test.stagedir, RANK_HOSTS)
    if mpi_family(test) == "mpich":
        lines = [f"{h}:{block}" for h in hosts]
        opts = ["-bind-to", "none", "-f", RANK_HOSTS]
    else:
        lines = host_sequence(hosts, int(test.num_tasks), block)
        opts = [*mpirun_options(test, None, None, export), "--mca", "rmaps", "seq", "--hostfile", RANK_HOSTS]
    with open(path, "w") as fp:
        fp.write("\n".join(lines) + "\n")
    return opts


def place_ranks(test, **how):
    """Set the measured step's launcher options (the site's first) to :func:`rank_options`;
    nothing where the launcher needs no words for it."""
    opts = rank_options(test, **how)
    if opts:
        set_launcher_options(test, opts)


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def job_nodes(test, count):
    """Names of the ``count`` nodes the job will run on, or (None, reason): the nodes whose links
    a test may change. mpirun fills the partition's hostfile in order; under Slurm the job is
    pinned (--nodelist) to the first ``count`` nodes of its partition, so the links changed are the
    job's own. A dry run where neither can be read (no cluster up) writes its script with
    placeholders: the script is inspected, never run."""
    names, why = _job_nodes(test, count)
    if names is None and test.is_dry_run():
        return [f"NODE{i}-AT-RUN-TIME" for i in range(1, count + 1)], None
    return names, why


def _job_nodes(test, count):
    part = test.current_partition
    if slurm_steps(test):
        slurm_part = next((a.split("=", 1)[1] for a in part.access if a.startswith("--partition=")), None)
        argv = ["sinfo", "-h", "-N", "-o", "%N"] + (["-p", slurm_part] if slurm_part else [])
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"sinfo failed: {err}"
        # Slurm gives a job's ranks to its nodes in node-table order: n1, n2, ..., n10, as the
        # names sort with their numbers read as numbers (sinfo may list n10 before n2)
        names = sorted(dict.fromkeys(out.stdout.split()), key=_natural)
        if len(names) < count:
            return None, platform_reason(f"sinfo lists {len(names)} nodes in the partition, {count} needed")
        test.job.options += [f"--nodelist={','.join(names[:count])}", f"--nodes={count}"]
        return names[:count], None
    names, reason = mpirun_hosts(test)
    if names is None:
        return None, reason
    if len(names) < count:
        return None, platform_reason(f"the mpirun hostfile lists {len(names)} nodes, {count} needed")
    return names[:count], None
