"""LAMMPS' LJ melt (inputs/in.lj) as a measured step: its command line, and its loop times.

``rounds`` K runs the melt K times in one process (``run`` repeated, the log gets one "Loop time"
per run): K samples of one case for the price of one start-up, reported through PairedRounds.
"""
import os

import reframe.utility.sanity as sn

from crosstalk.parsers import parse

INPUTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "inputs")


def lammps_args(box, steps, log="log.lammps", rounds=1, screen=True, before_run=None):
    """Arguments of ``lmp`` for in.lj: ``box``^3 unit cells, ``steps`` steps, ``rounds`` runs;
    ``before_run`` names the script (``<name>.sh``, in the working directory) that rank 0 runs
    before each run with the run's number (1..rounds)."""
    args = ["-in", "in.lj", "-var", "box", str(box), "-var", "steps", str(steps), "-log", str(log)]
    if int(rounds) != 1:
        args += ["-var", "rounds", str(int(rounds))]
    if before_run:
        args += ["-var", "before_run", before_run]
    return args + ([] if screen else ["-screen", "none"])


def step_loop_time(test, output):
    """The loop time of the LAMMPS step whose screen output went to ``output`` (a step of a job that
    alternates with a load, xtlib.load); the main step's is read from log.lammps, which it writes
    last."""
    return sn.getitem(loop_times("log.lammps" if output == test.job.stdout else output, 1), 0)


@sn.deferrable
def loop_times(path, rounds=1):
    """The loop time (s) of each of the ``rounds`` runs in the LAMMPS log ``path``, in order; a
    sanity error if LAMMPS failed or the log holds another number of runs."""
    found = parse("lammps", path)
    failed = [r for r in found if r.get("failed")]
    if failed:
        raise sn.SanityError(f"{path}: lammps failed: {failed[0]['reason']}")
    times = [float(r["value"]) for r in sorted((r for r in found if r["metric"] == "loop_time"),
                                                key=lambda r: r["run"])]
    if len(times) != int(rounds):
        raise sn.SanityError(f"{path}: expected {rounds} LAMMPS run(s), found {len(times)}")
    return times
