"""Actions between the runs of one process: a program that measures in several runs (LAMMPS'
in.lj with ``before_run``) calls inputs/between_runs.sh before each run; the job script, in the
background, does that run's actions (e.g. set the links, read the meters) and lets it go on.
One start-up of the program for all the runs of a job (an mpirun or srun start-up is seconds on a
slow or throttled node), and the runs stay seconds apart.

The two sides meet in files of the stage directory, which every node of a job shares:
``between_runs/ready.N`` (the program waits before run N) and ``between_runs/go.N`` (its actions
are done); ``between_runs/failed`` if an action failed or no run came within 600 s.
"""
#: in.lj's ``before_run``: the fixed script inputs/between_runs.sh (no spec value in it).
HOOK = "between_runs"
#: 0.1 s polls: 600 s for the program to reach its next run.
_POLLS = 6000


def between_runs_lines(actions):
    """``(prerun, postrun)`` shell lines: ``actions[i]`` (shell lines) run before run i+1, in a
    background subshell (traps are not inherited: the job's link restore stays the job's);
    postrun stops it if the program ended early."""
    body = [f"trap 'touch {HOOK}/failed' EXIT",
            f'xt_await() {{ n=0; until [ -e "{HOOK}/ready.$1" ]; do sleep 0.1; n=$((n + 1)); '
            f'[ "$n" -lt {_POLLS} ] || exit 1; done; }}']
    # the trap goes before the last go: postrun's kill may come as soon as the program has it
    for run, lines in enumerate(actions, start=1):
        body += [f"xt_await {run}", *lines, *(["trap - EXIT"] if run == len(actions) else []),
                 f"touch {HOOK}/go.{run}"]
    body += [] if actions else ["trap - EXIT"]
    prerun = [f"rm -rf {HOOK} && mkdir {HOOK}", "(", *body, f") > {HOOK}.out 2>&1 &", "xt_between_runs=$!"]
    return prerun, ['kill "$xt_between_runs" 2>/dev/null || true']
