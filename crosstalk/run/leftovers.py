"""What an interrupted run leaves behind, found and removed: its Slurm jobs and its processes.

A run is recognised by its stage directory (``build/reframe/<system>/stage/<run-id>``): every job
ReFrame submits works there, and so does every MPI rank it starts on any node of a virtual cluster
(the nodes share the host's process table and see the repository at the same path).
"""
import os
import signal
import time
from pathlib import Path

from crosstalk.errors import CrosstalkError

#: Seconds to wait for cancelled jobs to leave the queue and killed processes to exit.
SETTLE = 30


def run_processes(stage_dir):
    """PIDs of the processes (other than this one and its parent) working under ``stage_dir``."""
    stage_dir = Path(stage_dir)
    spare = {os.getpid(), os.getppid()}
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in spare:
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{entry.name}/cwd"))
        except OSError:                   # gone, or a kernel thread
            continue
        if cwd == stage_dir or stage_dir in cwd.parents:
            found.append(int(entry.name))
    return found


def kill_processes(stage_dir, settle=SETTLE):
    """SIGKILL the run's processes until none is left (or ``settle`` s pass); how many were killed."""
    killed = set()
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        pids = run_processes(stage_dir)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    return len(killed)


def run_jobs(squeue, stage_dir):
    """Ids of the queued or running Slurm jobs working under ``stage_dir``; ``squeue(args)`` runs
    squeue with ``args`` where the cluster's controller is reachable and returns its output."""
    stage_dir = Path(stage_dir)
    ids = []
    for line in squeue(["-h", "-o", "%i|%Z"]).splitlines():
        job_id, _, workdir = line.partition("|")
        workdir = Path(workdir.strip())
        if job_id.strip() and (workdir == stage_dir or stage_dir in workdir.parents):
            ids.append(job_id.strip())
    return ids


def cancel_jobs(squeue, scancel, stage_dir, settle=SETTLE):
    """Cancel the run's jobs and wait until the queue no longer lists them; how many were cancelled."""
    ids = run_jobs(squeue, stage_dir)
    if ids:
        scancel(ids)
    deadline = time.monotonic() + settle
    while run_jobs(squeue, stage_dir):
        if time.monotonic() > deadline:
            raise CrosstalkError(f"Slurm jobs {', '.join(run_jobs(squeue, stage_dir))} of the "
                                 f"interrupted run are still queued {settle} s after scancel")
        time.sleep(0.5)
    return len(ids)
