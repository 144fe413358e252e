"""Run a ReFrame session that Ctrl-C and SIGTERM stop cleanly, on every kind of system.

ReFrame runs in a process group of its own (on the virtual cluster, inside the login node's
namespaces), so a terminal's Ctrl-C reaches crosstalk only and crosstalk decides:

1. the first SIGINT, SIGTERM or SIGHUP is passed on to ReFrame as SIGTERM. ReFrame's abort path
   runs: its jobs are cancelled (scancel, or SIGTERM to a local job's process group) and its JSON
   report is written. SIGTERM and not SIGINT because ReFrame installs its own SIGTERM handler,
   while a SIGINT that the shell ignored for a background job stays ignored in ReFrame too.
2. a second signal, or ReFrame still running ``grace`` seconds later, force-stops: ReFrame's
   process group is killed.

A session that outlives its ``limit`` (seconds) is stopped the same way, as if signalled.

Either way the caller's ``cleanup`` then runs (cancel the run's jobs still queued, kill the run's
processes left on the nodes), so that an interrupted run leaves nothing behind.
"""
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

#: Seconds ReFrame gets to abort cleanly before it is force-stopped.
GRACE = 120
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Outcome:
    returncode: int
    interrupted_by: int = 0     # the first stop signal received, 0 if none
    forced: bool = False
    signalled_at: float = 0.0   # time.monotonic() of the first stop signal
    timed_out: bool = False     # stopped because the session outlived its limit

    @property
    def stopped(self):
        return bool(self.interrupted_by or self.timed_out)

    @property
    def exit_status(self):
        """The command's exit status: ReFrame's, 128 + signal when interrupted (shell custom), 124
        when it ran out of time (as timeout(1))."""
        if self.interrupted_by:
            return 128 + self.interrupted_by
        return 124 if self.timed_out else self.returncode


def _kill_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _ask_to_stop(proc):
    try:
        os.kill(proc.pid, signal.SIGTERM)     # ReFrame itself, not its jobs' process groups
    except ProcessLookupError:
        pass


def supervise(start, cleanup, limit=None, grace=GRACE, out=sys.stderr):
    """Start ReFrame with ``start()`` (a Popen in a new process group) and wait for it, handling
    stop signals and the time ``limit`` as the module says; ``cleanup(outcome)`` runs after a stop."""
    received = []
    previous = {s: signal.signal(s, lambda signum, _frame: received.append(signum)) for s in STOP_SIGNALS}
    outcome = Outcome(returncode=-1)
    try:
        proc = start()
        asked_at = None
        ends = time.monotonic() + limit if limit else float("inf")
        while True:
            if not received and asked_at is None and time.monotonic() > ends:
                outcome.timed_out = True
                outcome.signalled_at = asked_at = time.monotonic()
                print(f"crosstalk: the run outlived its time limit ({limit:.0f} s, the sum of its "
                      f"cases' limits): stopping it", file=out, flush=True)
                _ask_to_stop(proc)
            if received and asked_at is None:
                outcome.interrupted_by = received[0]
                outcome.signalled_at = asked_at = time.monotonic()
                print(f"crosstalk: {signal.Signals(received[0]).name} received: stopping the run "
                      f"(ReFrame cancels its jobs and writes its report; again to force)",
                      file=out, flush=True)
                _ask_to_stop(proc)
            # After a timeout any signal forces; after a signal, a second one does.
            again = len(received) > (0 if outcome.timed_out else 1)
            if asked_at is not None and (again or time.monotonic() - asked_at > grace):
                why = "second signal" if again else f"ReFrame still running after {grace} s"
                print(f"crosstalk: {why}: force-stopping", file=out, flush=True)
                _kill_group(proc.pid, signal.SIGKILL)
                outcome.returncode = proc.wait()
                outcome.forced = True
                break
            try:
                outcome.returncode = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
        if not outcome.interrupted_by and received:   # signalled as ReFrame was exiting anyway
            outcome.interrupted_by, outcome.signalled_at = received[0], time.monotonic()
        if outcome.stopped:
            cleanup(outcome)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return outcome
