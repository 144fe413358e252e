"""External commands with a time limit: ``run`` is how crosstalk starts a program and waits for it.

The command runs in a process group of its own, so that when the limit expires (or on Ctrl-C)
the whole group ends, not only its first process (ansible-inventory's or snakemake's children
would otherwise live on). Expiry is a :class:`CrosstalkError` of one line naming the command.
"""
import os
import shlex
import signal
import subprocess

from crosstalk.errors import CrosstalkError

#: Seconds a command gets to exit after SIGTERM/SIGINT before its group is killed.
GRACE = 5


def describe(argv):
    """``argv`` as a shell-quoted command line (for messages)."""
    return shlex.join(str(a) for a in argv) if isinstance(argv, (list, tuple)) else str(argv)


def timed_out(what, timeout, where=None):
    """The one-line error for a command that ran out of time (``what``: argv or a name; ``where``:
    the node it ran on, if not here)."""
    on = f" on {where}" if where else ""
    return CrosstalkError(f"`{describe(what)}`{on} did not finish within {timeout:g} s")


def _end(proc, sig, group):
    """Send ``sig`` to the command (``group``: to its own process group); after GRACE seconds,
    SIGKILL it."""
    kill = os.killpg if group else os.kill
    try:
        kill(proc.pid, sig)
        proc.wait(GRACE)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:     # the leader is not reaped: its pid is still ours
        kill(proc.pid, signal.SIGKILL)
        proc.wait()


def run(argv, timeout, what=None, *, where=None, own_group=True, input=None, capture_output=False,
        check=False, **kw):
    """``subprocess.run(argv, ...)`` that gives up after ``timeout`` seconds.

    On expiry the command's process group is terminated and ``CrosstalkError("`<what>` did not
    finish within N s")`` raised (``what`` defaults to the command line; ``where`` names the node
    it ran on, if not this host: "`<what>` on <where> did not ..."). ``own_group=False`` keeps the
    command in our process group, for one that reads the terminal (in a group of its own it would
    be stopped by SIGTTIN); on expiry only its first process is then ended. ``check=True`` raises
    ``CrosstalkError`` naming the command and its exit status. Other keywords go to Popen.
    """
    if capture_output:
        kw.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    with subprocess.Popen(argv, process_group=0 if own_group else None, **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(proc, signal.SIGTERM, own_group)
            raise timed_out(what or argv, timeout, where) from None
        except BaseException:          # Ctrl-C: the terminal signals our group only
            _end(proc, signal.SIGINT, own_group)
            raise
    if check and proc.returncode:
        raise CrosstalkError(f"`{describe(what or argv)}` failed with exit status {proc.returncode}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
